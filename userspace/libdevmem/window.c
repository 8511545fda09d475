// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A TCP receive window no larger than the receive buffers behind it.
 *
 * Every segment that arrives on a devmem or zcrx queue takes a buffer of
 * its own (a page; more when the segment is longer) until the application
 * hands it back. After a drop, the segments behind the hole wait out of
 * order, each holding its buffer; with a window larger than what the
 * buffers hold they can take every one, the resend that would fill the
 * hole is dropped for want of a buffer, and the sender backs off until the
 * connection times out (seen with a 1 MiB zcrx area: 1 MiB queued out of
 * order, the resend timer at 26 s; and with a 1 MiB dma-buf whose reader
 * held three quarters of it). So the window stays below half of what the
 * buffers hold in full-sized segments, where autotuning could open it
 * wider: a fixed receive buffer (autotuning would raise the clamp again)
 * and TCP_WINDOW_CLAMP.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

/* Fewer buffers than this cannot keep a stream going. */
#define WINDOW_MIN_BUFS 8

/* The most TCP's autotuning gives a receive buffer (net.ipv4.tcp_rmem). */
static long tcp_rmem_max(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_rmem", "re");
	long lo, def, max = 0;

	if (f) {
		if (fscanf(f, "%ld %ld %ld", &lo, &def, &max) != 3)
			max = 0;
		fclose(f);
	}
	return max;
}

DEVMEM_EXPORT int devmem_rx_limit_window(int sock, size_t buf_bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bufs = buf_bytes / page, per_buf, bytes;
	int mss = 0, clamp;
	socklen_t l = sizeof(mss);
	long max;

	if (getsockopt(sock, IPPROTO_TCP, TCP_MAXSEG, &mss, &l))
		return devmem_fail_errno(-errno, "devmem_rx_limit_window: fd %d is not a TCP socket",
					 sock);
	if (bufs < WINDOW_MIN_BUFS)
		return devmem_fail(-EINVAL, "devmem_rx_limit_window: %zu bytes of receive buffers hold fewer than %d %zu-byte buffers: too few to keep a stream going",
				   buf_bytes, WINDOW_MIN_BUFS, page);
	if (mss <= 0)
		mss = 1448;	/* Ethernet's, should the kernel not know */
	/* A segment longer than a buffer spans several. */
	per_buf = (size_t)mss / (((size_t)mss + page - 1) / page);
	bytes = bufs / 2 * per_buf;
	max = tcp_rmem_max();
	if (max > 0 && bytes >= (size_t)max)
		return 0;	/* autotuning stays below it */
	clamp = bytes > INT_MAX ? INT_MAX : (int)bytes;
	/* Past net.core.rmem_max where allowed (CAP_NET_ADMIN), as a devmem
	 * receiver usually is: else the buffer, not the clamp, bounds it. */
	if ((setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &clamp, sizeof(clamp)) &&
	     setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &clamp, sizeof(clamp))) ||
	    setsockopt(sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof(clamp)))
		return devmem_fail_errno(-errno, "devmem_rx_limit_window: fd %d: limiting the window to %d bytes",
					 sock, clamp);
	return clamp;
}
