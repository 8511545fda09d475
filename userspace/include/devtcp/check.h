/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host unit tests' one helper header (libdevmem, libdevcoll, rdpm): each
 * t_*.c is a program that runs its cases and exits 0 only when every CHECK
 * held, or CHECK_SKIP (kselftest's 4) after saying why on a "SKIP:" line,
 * which selftests/unit_lib.sh and the KTAP runner report as a skip. Built
 * with ASan and UBSan.
 */
#ifndef DEVTCP_CHECK_H
#define DEVTCP_CHECK_H

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

#define CHECK_SKIP	4

/* Returns CHECK_SKIP after printing "SKIP: <why>": main() returns it. */
#define check_skip(...) (printf("SKIP: " __VA_ARGS__), printf("\n"), CHECK_SKIP)

/* Ends main(): prints a summary line. */
static inline int check_done(const char *name)
{
	printf("%s: %s\n", name, check_failures ? "FAILED" : "all checks passed");
	return check_failures ? 1 : 0;
}

#endif
