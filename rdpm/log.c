// SPDX-License-Identifier: GPL-2.0
/* rdpmd's log: one line per event on stderr, where journald reads it. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "rdpmd.h"

void rdpm_log(int prio, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One write per line so that lines of concurrent writers never mix. */
	dprintf(STDERR_FILENO, "<%d>%s\n", prio, buf);
}
