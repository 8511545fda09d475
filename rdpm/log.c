// SPDX-License-Identifier: GPL-2.0
/*
 * rdpmd's log: one line per event on stderr, where journald reads it. It
 * never blocks the event loop: stderr is non-blocking and a line that does
 * not fit is dropped and counted. Notices and info lines (clients cause
 * most of them) spend tokens of a bucket of LOG_BURST refilled at LOG_RATE
 * a second; warnings and errors always go.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdpmd.h"

#define LOG_BURST	200
#define LOG_RATE	50

static uint64_t dropped, suppressed, reported_dropped, reported_suppressed;
static struct rdpm_bucket budget;	/* of notices and info lines */

static int stderr_flags = -1;

/* The file status flags belong to the open file, which rdpmd may share
 * (a terminal): they are put back at exit. */
static void restore_stderr(void)
{
	fcntl(STDERR_FILENO, F_SETFL, stderr_flags);
}

void rdpm_log_init(void)
{
	stderr_flags = fcntl(STDERR_FILENO, F_GETFL);
	if (stderr_flags >= 0 && !fcntl(STDERR_FILENO, F_SETFL, stderr_flags | O_NONBLOCK))
		atexit(restore_stderr);
}

uint64_t rdpm_log_dropped(void)
{
	return dropped;
}

uint64_t rdpm_log_suppressed(void)
{
	return suppressed;
}

bool rdpm_bucket_take(struct rdpm_bucket *b, unsigned int burst, unsigned int per_s)
{
	uint64_t now = rdpm_now_ms(), add = (now - b->at) * per_s / 1000;

	if (!b->primed) {
		b->primed = true;
		b->tokens = burst;
		b->at = now;
	} else if (add) {
		b->tokens = add >= burst - b->tokens ? burst : b->tokens + add;
		b->at = now;
	}
	if (!b->tokens) {
		b->missed++;
		return false;
	}
	b->tokens--;
	return true;
}

/* Copies @src into @dst (@size > 0) with control and non-ASCII bytes as
 * \xNN: a line says what it says, no text a client chose can forge a
 * line or its priority. Returns the length written. */
static int escape(char *dst, size_t size, const char *src)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		bool plain = *p >= ' ' && *p < 0x7f && *p != '\\';

		if (n + (plain ? 1 : 4) >= size)
			break;
		if (plain)
			dst[n++] = *p;
		else
			n += snprintf(dst + n, size - n, "\\x%02x", *p);
	}
	dst[n] = 0;
	return n;
}

/* One write per line, so that lines of concurrent writers never mix. */
static bool put(const char *line, int len)
{
	return write(STDERR_FILENO, line, len) == len;
}

void rdpm_log(int prio, const char *fmt, ...)
{
	char buf[1024], text[1024];
	va_list ap;
	int n;

	if (prio >= LOG_NOTICE && !rdpm_bucket_take(&budget, LOG_BURST, LOG_RATE)) {
		suppressed++;
		return;
	}
	if (dropped != reported_dropped || suppressed != reported_suppressed) {
		n = snprintf(buf, sizeof(buf), "<4>log lines left out: %llu (stderr full), %llu "
			     "(notices over %d a second)\n",
			     (unsigned long long)(dropped - reported_dropped),
			     (unsigned long long)(suppressed - reported_suppressed), LOG_RATE);
		if (!put(buf, n)) {
			dropped++;
			return;
		}
		reported_dropped = dropped;
		reported_suppressed = suppressed;
	}
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	n = snprintf(buf, sizeof(buf), "<%d>", prio);
	n += escape(buf + n, sizeof(buf) - n - 1, text);	/* room for the \n */
	buf[n++] = '\n';
	if (!put(buf, n))
		dropped++;
}

void rdpm_log_limited(struct rdpm_bucket *b, int prio, const char *fmt, ...)
{
	unsigned long missed = b->missed;
	char line[512];
	va_list ap;

	if (!rdpm_bucket_take(b, 1, 1))
		return;
	b->missed = 0;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (missed)
		rdpm_log(prio, "%s (and %lu more since the last such line)", line, missed);
	else
		rdpm_log(prio, "%s", line);
}
