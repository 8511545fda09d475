// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Rank 1 of a job gone bad (LD_PRELOAD into every rank; it acts in rank 1
 * only): it knows the job's secrets, so its connections authenticate, and
 * then it breaks the protocol as ROGUE_MODE says:
 *
 *   tag      its first message carries tag 0xee, which nobody receives
 *   short    its first message's control part is 0 bytes
 *   put      its first put goes to address 0x1000, not into the region
 *            rank 0 registered
 *   nolink   its data links' hellos are never sent
 *   srcaddr  its connections come from 127.0.0.2, an address it did not
 *            publish (it listens on and publishes 127.0.0.1)
 *
 * Rank 0 must refuse each and fail the peer with a message; nothing
 * crashes, nothing waits forever (hostile_test.sh).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "btl_devtcp_wire.h"

/* Our control connections: those we sent a control hello on (the
 * runtime's own sockets carry writes of a frame's size too). */
static bool ctrl_fd[1024];

static const char *mode(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK"), *m = getenv("ROGUE_MODE");

	return r && !strcmp(r, "1") && m ? m : "";
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	static ssize_t (*real)(int, const struct iovec *, int);
	static bool done;
	const char *m = mode();

	if (!real)
		real = (ssize_t (*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
	/* a whole frame and what follows it */
	if (!done && fd >= 0 && fd < 1024 && ctrl_fd[fd] && n >= 2 &&
	    iov[0].iov_len == sizeof(struct devtcp_frame)) {
		struct devtcp_frame *f = iov[0].iov_base;
		struct devtcp_put put;

		if (!strcmp(m, "tag") && !f->flags) {
			f->tag = 0xee;
			done = true;
		} else if (!strcmp(m, "short") && !f->flags) {
			f->ctrl_len = 0;
			done = true;
		} else if (!strcmp(m, "put") && f->flags == DEVTCP_FRAME_PUT &&
			   iov[1].iov_len >= sizeof(put)) {
			/* the control part ends with the put's struct devtcp_put */
			char *at = (char *)iov[1].iov_base + iov[1].iov_len - sizeof(put);

			memcpy(&put, at, sizeof(put));
			put.to = 0x1000;
			memcpy(at, &put, sizeof(put));
			done = true;
		}
	}
	return real(fd, iov, n);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, const void *, size_t, int);
	struct devtcp_hello h;

	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
	if (len == sizeof(h)) {
		memcpy(&h, buf, sizeof(h));
		if (ntohl(h.magic) == DEVTCP_HELLO_MAGIC && h.kind == DEVTCP_LINK_CTRL && fd >= 0 &&
		    fd < 1024)
			ctrl_fd[fd] = true;
		if (ntohl(h.magic) == DEVTCP_HELLO_MAGIC && h.kind == DEVTCP_LINK_DATA &&
		    !strcmp(mode(), "nolink"))
			return (ssize_t)len;
	}
	return real(fd, buf, len, flags);
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);
	struct sockaddr_in other;

	if (!real)
		real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
	/* a connection's source (listeners are non-blocking) */
	if (!strcmp(mode(), "srcaddr") && sa->sa_family == AF_INET && len >= sizeof(other) &&
	    !(fcntl(fd, F_GETFL) & O_NONBLOCK)) {
		memcpy(&other, sa, sizeof(other));
		if (other.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && !other.sin_port) {
			other.sin_addr.s_addr = htonl(0x7f000002);
			return real(fd, (struct sockaddr *)&other, sizeof(other));
		}
	}
	return real(fd, sa, len);
}
