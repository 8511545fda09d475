// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A communicator's errors: the thread's last message, and failures that
 * break the communicator and tell every peer why (K_ABORT).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "devmem.h"
#include "internal.h"

static __thread char errbuf[512];

int dc_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return err;
}

DEVCOLL_EXPORT const char *devcoll_last_error(void)
{
	return errbuf;
}

/* The connection's send side is inside a chunk: nothing else may go out. */
static bool mid_chunk(const struct conn *k)
{
	return k->sbusy && (k->shdr_done || k->spay_done);
}

/*
 * A failing rank tells its peers why before it shuts its connections down:
 * a K_ABORT header and the message on every connection. A chunk under way is
 * finished first, for at most 2 s in all (the peer may not be reading; 200
 * ms was too short for a peer in a loaded emulator, which then saw only the
 * connection close);
 * a peer whose chunk could not be finished sees the connection close. A
 * rank failing on such a message passes the first rank's message on, so
 * every rank can say what went wrong where, not only that a peer left.
 */
static void send_abort(devcoll_comm *c, int err, int origin, const char *msg)
{
	struct wire_hdr h = {
		.magic = WIRE_MAGIC, .kind = K_ABORT, .count = (uint64_t)-(int64_t)err,
		.tag = (uint32_t)origin, .len = (uint32_t)strlen(msg),
	};
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)msg, h.len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	int64_t end = dc_now_ms() + 2000;

	for (int i = 0; i < c->size * (int)c->nconns; i++) {
		struct conn *k = &c->conns[i];
		int e = 0;

		if (k->fd < 0)
			continue;
		while (mid_chunk(k) && !e && dc_now_ms() < end) {
			struct pollfd p = { .fd = k->fd, .events = POLLOUT };

			if (!dc_conn_send(c, k, &e) && !e)
				poll(&p, 1, 10);
		}
		if (!mid_chunk(k))
			sendmsg(k->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

/* Breaks the communicator (@origin: the rank whose failure this is). */
static int comm_fail(devcoll_comm *c, int err, int origin, const char *msg)
{
	if (!c->err) {
		if (origin == c->rank)
			snprintf(c->errmsg, sizeof(c->errmsg), "rank %d: %s", c->rank, msg);
		else
			snprintf(c->errmsg, sizeof(c->errmsg), "rank %d: rank %d failed: %s", c->rank,
				 origin, msg);
		c->err = err;
		send_abort(c, err, origin, msg);
		for (int i = 0; i < c->size * (int)c->nconns; i++)
			if (c->conns[i].fd >= 0)
				shutdown(c->conns[i].fd, SHUT_RDWR);
	}
	return dc_fail(c->err, "%s", c->errmsg);
}

const char *dc_io_error(int e)
{
	/* what a socket call's EFAULT almost always means here */
	if (e == EFAULT)
		return "Bad address: a buffer the CPU cannot reach (GPU memory is staged only where "
		       "the process had loaded libcuda by devcoll_comm_init(), or with "
		       "DEVCOLL_CUDA=on)";
	/* devmem: a fragment outside this rank's dma-buf, refused by libdevmem */
	if (e == EBADMSG)
		return devmem_last_error();
	return strerror(e);
}

int dc_comm_fail(devcoll_comm *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (!c->err) {
		char msg[400];
		/* a binding rdpmd dropped is the reason for whatever failed
		 * (a receive, a peer's closed connection) */
		int dead = c->dm ? dc_dm_dead(c, msg, sizeof(msg)) : 0;

		if (dead) {
			err = dead;
		} else {
			va_start(ap, fmt);
			vsnprintf(msg, sizeof(msg), fmt, ap);
			va_end(ap);
		}
		return comm_fail(c, err, c->rank, msg);
	}
	return dc_fail(c->err, "%s", c->errmsg);
}

int dc_recv_abort(devcoll_comm *c, struct conn *k)
{
	const struct wire_hdr *h = &k->rhdr;
	int err = h->count && h->count < 4096 ? -(int)h->count : -ECONNABORTED;
	int origin = h->tag < (uint32_t)c->size ? (int)h->tag : k->peer;
	char msg[400];
	size_t len = h->len < sizeof(msg) ? h->len : sizeof(msg) - 1, got;

	/* sent in one piece right behind the header: here or about to be */
	got = dc_conn_read_for(c, k, msg, len, dc_now_ms() + 1000);
	k->rhdr_valid = false;
	if (got < len)
		snprintf(msg, sizeof(msg), "its message was cut short");
	else
		msg[got] = 0;
	return comm_fail(c, err, origin, msg);
}
