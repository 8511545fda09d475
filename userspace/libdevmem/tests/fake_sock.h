/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two socket calls of libdevmem's receive path, answered by a test or
 * a fuzzer in place of the kernel (rx.c itself is the production code).
 * recvmsg() serves the receives queued in fake_recvs in turn, then EAGAIN;
 * setsockopt(SO_DEVMEM_DONTNEED) records the tokens handed back in
 * fake_returned and frees them all. Other options reach the kernel.
 * Defines both functions: include it in one file of a program.
 */
#ifndef DEVMEM_FAKE_SOCK_H
#define DEVMEM_FAKE_SOCK_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define FAKE_MAX_RECVS 8
#define FAKE_MAX_TOKENS 4096

struct fake_recv {
	const void *ctrl;	/* its cmsgs */
	size_t ctrllen;		/* their length; once served, what fit */
	size_t bytes;		/* bytes received (0: the end of the stream) */
};

static struct fake_recv fake_recvs[FAKE_MAX_RECVS];
static unsigned int fake_nrecvs, fake_served;
static uint32_t fake_returned[FAKE_MAX_TOKENS];	/* in the order handed back */
static unsigned int fake_nreturned;

/* Queues a receive of @bytes with @ctrllen bytes of cmsgs at @ctrl. */
static inline void fake_queue(const void *ctrl, size_t ctrllen, size_t bytes)
{
	if (fake_nrecvs == FAKE_MAX_RECVS)
		abort();
	fake_recvs[fake_nrecvs++] = (struct fake_recv){ ctrl, ctrllen, bytes };
}

/* Forgets the receives queued and the tokens returned. */
static inline void fake_reset(void)
{
	fake_nrecvs = fake_served = 0;
	fake_nreturned = 0;
}

/* As the kernel: no more cmsgs than the control buffer takes, no more
 * bytes than the iov. */
ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct fake_recv *r;

	(void)fd, (void)flags;
	if (fake_served == fake_nrecvs) {
		errno = EAGAIN;
		return -1;
	}
	r = &fake_recvs[fake_served++];
	if (r->ctrllen > msg->msg_controllen)
		r->ctrllen = msg->msg_controllen;
	if (r->ctrllen)
		memcpy(msg->msg_control, r->ctrl, r->ctrllen);
	msg->msg_controllen = r->ctrllen;
	return (ssize_t)(r->bytes < msg->msg_iov->iov_len ? r->bytes : msg->msg_iov->iov_len);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (level == SOL_SOCKET && name == SO_DEVMEM_DONTNEED) {
		const struct dmabuf_token *t = val;
		int frags = 0;

		for (size_t i = 0; i < len / sizeof(*t); i++)
			for (uint32_t k = 0; k < t[i].token_count; k++, frags++) {
				if (fake_nreturned == FAKE_MAX_TOKENS)
					abort();
				fake_returned[fake_nreturned++] = t[i].token_start + k;
			}
		return frags;
	}
	return (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

#endif
