/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host unit tests of libdevmem: each t_*.c is a program that runs its cases
 * and exits 0 only when every CHECK held. Built with ASan and UBSan.
 */
#ifndef LIBDEVMEM_TESTS_CHECK_H
#define LIBDEVMEM_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failures;

#define CHECK(cond, ...) do {							\
	if (!(cond)) {								\
		check_failures++;						\
		printf("not ok: %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		printf(__VA_ARGS__);						\
		printf("\n");							\
	}									\
} while (0)

/* Ends main(): prints a summary line. */
static inline int check_done(const char *name)
{
	printf("%s: %s\n", name, check_failures ? "FAILED" : "all checks passed");
	return check_failures ? 1 : 0;
}

#endif
