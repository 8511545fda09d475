// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Receive: recvmsg(MSG_SOCK_DEVMEM), the fragments it reports in cmsgs, and
 * the return of dma-buf fragments to the kernel (SO_DEVMEM_DONTNEED).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/devmem_compat.h>

#include "internal.h"

#define RX_DEFAULT_BYTES	(1024 * 1024)
/*
 * Room for one cmsg per 2 KiB received plus some: fragments are at most a
 * page and rarely small. Should a receive have more, the kernel stops at the
 * last one that fits and leaves the rest queued, so nothing is lost.
 */
#define RX_CMSGS(bytes)		((bytes) / 2048 + 64)
#define CMSG_DEVMEM_SPACE	CMSG_SPACE(sizeof(struct dmabuf_cmsg))
/* What recvmsg() fails with when not even one cmsg fits (kernel-internal). */
#define KERNEL_ETOOSMALL	525

struct devmem_rx {
	int sock;
	size_t max_bytes;
	uint8_t *data;			/* iov of devmem_rx_recv() */
	uint8_t *data_at;		/* where the last receive put linear bytes */
	uint8_t *ctrl;
	size_t ctrl_size;
	/* The last receive, as devmem_rx_next() walks it. */
	struct msghdr msg;
	struct cmsghdr *cursor;
	size_t bytes, linear_used, reported;
	bool started;
	struct devmem_token_batch tokens;
	uint64_t held;
	struct dm_rx_pending *pending;	/* devmem_rx_unpack's (rx_unpack.c) */
};

struct dm_rx_pending **dm_rx_pending_of(struct devmem_rx *rx)
{
	return &rx->pending;
}

DEVMEM_EXPORT int devmem_rx_open(struct devmem_rx **out, int sock, size_t max_bytes)
{
	struct devmem_rx *rx;
	int type;
	socklen_t len = sizeof(type);

	if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len))
		return devmem_fail_errno(-errno, "devmem_rx_open: fd %d is not a socket", sock);
	if (type != SOCK_STREAM)
		return devmem_fail(-EINVAL, "devmem_rx_open: fd %d is not a TCP socket", sock);
	if (!max_bytes)
		max_bytes = RX_DEFAULT_BYTES;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return devmem_fail(-ENOMEM, "devmem_rx_open: out of memory");
	rx->sock = sock;
	rx->max_bytes = max_bytes;
	rx->ctrl_size = RX_CMSGS(max_bytes) * CMSG_DEVMEM_SPACE;
	rx->data = malloc(max_bytes);
	rx->ctrl = aligned_alloc(sizeof(uint64_t), rx->ctrl_size);
	if (!rx->data || !rx->ctrl) {
		free(rx->data);
		free(rx->ctrl);
		free(rx);
		return devmem_fail(-ENOMEM, "devmem_rx_open: no memory for %zu-byte receives",
				   max_bytes);
	}
	*out = rx;
	return 0;
}

DEVMEM_EXPORT void devmem_rx_close(struct devmem_rx *rx)
{
	if (!rx)
		return;
	/* Tokens not handed back are freed by the kernel when the socket closes. */
	dm_rx_pending_close(rx);
	devmem_rx_flush(rx);
	free(rx->data);
	free(rx->ctrl);
	free(rx);
}

/* One recvmsg into @data (@len bytes at most) with @ctrl_size of cmsg room. */
static ssize_t rx_recvmsg(struct devmem_rx *rx, void *data, size_t len, size_t ctrl_size,
			  int flags)
{
	struct iovec iov = { .iov_base = data, .iov_len = len };
	ssize_t n;

	rx->msg = (struct msghdr){
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = rx->ctrl,
		.msg_controllen = ctrl_size,
	};
	do {
		n = recvmsg(rx->sock, &rx->msg, flags | MSG_SOCK_DEVMEM);
	} while (n < 0 && errno == EINTR);
	rx->msg.msg_iov = NULL;		/* iov is gone; the walk uses data */
	rx->msg.msg_iovlen = 0;
	rx->cursor = NULL;
	rx->started = false;
	rx->linear_used = 0;
	rx->reported = 0;
	rx->bytes = n > 0 ? n : 0;
	if (n >= 0)
		return n;
	n = -errno;
	if (n == -EAGAIN)
		return devmem_fail(n, "devmem_rx_recv: no data yet");
	if (n == -KERNEL_ETOOSMALL)
		return devmem_fail(-EMSGSIZE, "devmem_rx_recv: fd %d: no room for one more "
				   "fragment's cmsg", rx->sock);
	return devmem_fail_errno(n, "devmem_rx_recv: recvmsg(MSG_SOCK_DEVMEM) on fd %d",
				 rx->sock);
}

DEVMEM_EXPORT ssize_t devmem_rx_recv(struct devmem_rx *rx, int flags)
{
	rx->data_at = rx->data;
	return rx_recvmsg(rx, rx->data, rx->max_bytes, rx->ctrl_size, flags);
}

/*
 * The next fragment of the last receive. Devmem skbs come with cmsgs: one
 * per dma-buf fragment, one per run of linear bytes (copied to the iov in
 * order). Readable skbs come without any: then all the bytes are linear.
 */
int devmem_rx_parse_next(struct msghdr *msg, struct cmsghdr **cursor, bool *started,
			 const uint8_t *data, size_t bytes, size_t *linear_used,
			 size_t *reported, struct devmem_frag *frag)
{
	for (;;) {
		const struct dmabuf_cmsg *dc;
		struct cmsghdr *cm;

		if (!*started) {
			cm = CMSG_FIRSTHDR(msg);
			*started = true;
			if (!cm && bytes) {
				/* Plain data: the flow is not on a bound queue. */
				*frag = (struct devmem_frag){ .len = bytes, .linear = data };
				*linear_used = bytes;
				*reported = bytes;
				return 1;
			}
		} else {
			cm = *cursor ? CMSG_NXTHDR(msg, *cursor) : NULL;
		}
		*cursor = cm;
		if (!cm)
			break;
		if (cm->cmsg_level != SOL_SOCKET ||
		    (cm->cmsg_type != SCM_DEVMEM_DMABUF && cm->cmsg_type != SCM_DEVMEM_LINEAR))
			continue;
		if (cm->cmsg_len < CMSG_LEN(sizeof(*dc)))
			return devmem_fail(-EPROTO, "devmem_rx_next: short devmem cmsg (%zu bytes)",
					   (size_t)cm->cmsg_len);
		dc = (const struct dmabuf_cmsg *)CMSG_DATA(cm);
		if (dc->frag_size > bytes - *reported)
			return devmem_fail(-EPROTO, "devmem_rx_next: fragments cover more than "
					   "the %zu bytes received", bytes);
		if (cm->cmsg_type == SCM_DEVMEM_LINEAR) {
			if (dc->frag_size > bytes - *linear_used)
				return devmem_fail(-EPROTO, "devmem_rx_next: linear bytes beyond "
						   "the data received");
			*frag = (struct devmem_frag){ .len = dc->frag_size,
						      .linear = data + *linear_used };
			*linear_used += dc->frag_size;
		} else {
			*frag = (struct devmem_frag){ .offset = dc->frag_offset,
						      .len = dc->frag_size,
						      .token = dc->frag_token,
						      .dmabuf_id = dc->dmabuf_id };
		}
		*reported += dc->frag_size;
		return 1;
	}
	if (*reported != bytes)
		return devmem_fail(-EPROTO, "devmem_rx_next: cmsgs cover %zu of %zu bytes "
				   "received", *reported, bytes);
	return 0;
}

DEVMEM_EXPORT int devmem_rx_next(struct devmem_rx *rx, struct devmem_frag *frag)
{
	int ret = devmem_rx_parse_next(&rx->msg, &rx->cursor, &rx->started, rx->data_at,
				       rx->bytes, &rx->linear_used, &rx->reported, frag);

	if (ret == 1 && frag->dmabuf_id)
		rx->held++;
	return ret;
}

/* Adds @token to the batch; 1 if the batch must be flushed first. */
int devmem_tokens_add(struct devmem_token_batch *tb, uint32_t token)
{
	struct dmabuf_token *last = tb->n ? &tb->ranges[tb->n - 1] : NULL;

	if (tb->frags == DEVMEM_DONTNEED_MAX_FRAGS)
		return 1;
	if (last && last->token_start + last->token_count == token) {
		last->token_count++;
	} else {
		if (tb->n == DEVMEM_DONTNEED_MAX_TOKENS)
			return 1;
		tb->ranges[tb->n++] = (struct dmabuf_token){ .token_start = token,
							     .token_count = 1 };
	}
	tb->frags++;
	return 0;
}

/* Hands the batch back; the kernel answers with the number of frags freed. */
int devmem_tokens_flush(struct devmem_token_batch *tb, int sock)
{
	unsigned int frags = tb->frags;
	int freed;

	if (!tb->n)
		return 0;
	freed = setsockopt(sock, SOL_SOCKET, SO_DEVMEM_DONTNEED, tb->ranges,
			   tb->n * sizeof(tb->ranges[0]));
	tb->n = 0;
	tb->frags = 0;
	if (freed < 0)
		return devmem_fail_errno(-errno, "SO_DEVMEM_DONTNEED of %u fragments on fd %d",
					 frags, sock);
	if ((unsigned int)freed != frags)
		return devmem_fail(-EIO, "SO_DEVMEM_DONTNEED on fd %d freed %d of %u fragments "
				   "(tokens released twice or never received?)", sock, freed,
				   frags);
	return 0;
}

DEVMEM_EXPORT int devmem_rx_release(struct devmem_rx *rx, const struct devmem_frag *frag)
{
	int err;

	if (!frag->dmabuf_id)
		return 0;
	if (!devmem_tokens_add(&rx->tokens, frag->token))
		return 0;
	/* The batch is full: flush it, and queue this token in the next one
	 * even when the flush failed, so that it is not dropped with it. */
	err = devmem_rx_flush(rx);
	devmem_tokens_add(&rx->tokens, frag->token);
	return err;
}

DEVMEM_EXPORT int devmem_rx_flush(struct devmem_rx *rx)
{
	unsigned int frags = rx->tokens.frags;
	int err = devmem_tokens_flush(&rx->tokens, rx->sock);

	rx->held -= frags <= rx->held ? frags : rx->held;
	return err;
}

DEVMEM_EXPORT uint64_t devmem_rx_held(const struct devmem_rx *rx)
{
	return rx->held;
}

/* recv_exact and recv_upto: receives until @len bytes, @max fragments or
 * @linear_cap linear bytes; with MSG_DONTWAIT in @flags also until the
 * socket has nothing more (-EAGAIN when nothing came at all). */
static ssize_t rx_recv_len(struct devmem_rx *rx, size_t len, int flags, struct devmem_frag *frags,
			   unsigned int max, unsigned int *nfrags, void *linear, size_t linear_cap)
{
	size_t got = 0, linear_used = 0;
	unsigned int nf = 0;

	*nfrags = 0;
	while (got < len && nf < max && linear_used < linear_cap) {
		size_t room = max - nf < RX_CMSGS(rx->max_bytes) ? max - nf
								 : RX_CMSGS(rx->max_bytes);
		size_t want = len - got;
		struct devmem_frag f;
		ssize_t n;
		int ret;

		/* The iov bounds all bytes of a receive, dma-buf ones too. */
		if (want > linear_cap - linear_used)
			want = linear_cap - linear_used;
		rx->data_at = (uint8_t *)linear + linear_used;
		n = rx_recvmsg(rx, rx->data_at, want, room * CMSG_DEVMEM_SPACE, flags);
		if (n < 0)
			return nf ? (ssize_t)got : n;	/* the error comes again next call */
		if (!n) {
			if (!got)
				return 0;
			return devmem_fail(-EPIPE, "devmem_rx_recv: stream ended after %zu "
					   "of %zu bytes", got, len);
		}
		while ((ret = devmem_rx_next(rx, &f)) == 1)
			frags[nf++] = f;
		if (ret < 0)
			return ret;
		linear_used += rx->linear_used;
		got += n;
		*nfrags = nf;
	}
	return got;
}

DEVMEM_EXPORT ssize_t devmem_rx_recv_exact(struct devmem_rx *rx, size_t len,
					   struct devmem_frag *frags, unsigned int max,
					   unsigned int *nfrags, void *linear, size_t linear_cap)
{
	return rx_recv_len(rx, len, 0, frags, max, nfrags, linear, linear_cap);
}

DEVMEM_EXPORT ssize_t devmem_rx_recv_upto(struct devmem_rx *rx, size_t len, int flags,
					  struct devmem_frag *frags, unsigned int max,
					  unsigned int *nfrags, void *linear, size_t linear_cap)
{
	return rx_recv_len(rx, len, flags, frags, max, nfrags, linear, linear_cap);
}
