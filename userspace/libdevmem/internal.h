/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libdevmem internals shared between its source files; not installed. */
#ifndef LIBDEVMEM_INTERNAL_H
#define LIBDEVMEM_INTERNAL_H

#include <stdarg.h>

#include "devmem.h"

#define DEVMEM_EXPORT __attribute__((visibility("default")))

/*
 * Records the thread's error message (printf-style, without a trailing
 * newline) and returns @err, a negative errno, so that callers can write
 * "return devmem_fail(-EINVAL, "%s: queue %u does not exist", ...)".
 */
int devmem_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, appending ": strerror(-err)". */
int devmem_fail_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
