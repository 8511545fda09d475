// SPDX-License-Identifier: LGPL-2.1-or-later
/* The per-thread description of the last error (devmem_last_error()). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static __thread char last_error[512];

DEVMEM_EXPORT const char *devmem_last_error(void)
{
	return last_error[0] ? last_error : "no error";
}

/* Through a copy: the arguments may include devmem_last_error() itself. */
static void record(int err, bool with_errno, const char *fmt, va_list ap)
{
	char msg[sizeof(last_error)];
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);

	if (with_errno && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(-err));
	memcpy(last_error, msg, sizeof(msg));
}

int devmem_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(err, false, fmt, ap);
	va_end(ap);
	return err;
}

int devmem_fail_errno(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	record(err, true, fmt, ap);
	va_end(ap);
	return err;
}
