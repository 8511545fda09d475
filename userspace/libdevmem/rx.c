// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Receive: recvmsg(MSG_SOCK_DEVMEM), the fragments it reports in cmsgs, and
 * the return of dma-buf fragments to the kernel (SO_DEVMEM_DONTNEED).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
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
	struct devmem_rx_walk walk;
	size_t bytes;
	int walk_err;			/* a refused fragment ended the walk */
	struct devmem_token_batch tokens;
	uint64_t held;
	uint64_t refused;		/* fragments refused, for the error message */
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
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = rx->ctrl,
		.msg_controllen = ctrl_size,
	};
	ssize_t n;

	do {
		n = recvmsg(rx->sock, &msg, flags | MSG_SOCK_DEVMEM);
	} while (n < 0 && errno == EINTR);
	dm_rx_took(rx, &msg, data, n > 0 ? (size_t)n : 0);
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

void dm_rx_took(struct devmem_rx *rx, const struct msghdr *msg, uint8_t *data, size_t bytes)
{
	rx->msg = *msg;
	rx->msg.msg_iov = NULL;		/* iov is gone; the walk uses data */
	rx->msg.msg_iovlen = 0;
	rx->data_at = data;
	rx->bytes = bytes;
	rx->walk = (struct devmem_rx_walk){ .dmabuf_id = rx->walk.dmabuf_id,
					    .dmabuf_size = rx->walk.dmabuf_size };
	rx->walk_err = 0;
}

DEVMEM_EXPORT ssize_t devmem_rx_recv(struct devmem_rx *rx, int flags)
{
	rx->data_at = rx->data;
	return rx_recvmsg(rx, rx->data, rx->max_bytes, rx->ctrl_size, flags);
}

/*
 * The cmsg after @cm in @msg, or the first (@cm NULL): its header within the
 * control buffer, else NULL. Walked by hand, not with CMSG_NXTHDR, so that
 * each cmsg's length is checked here (cmsg_ok) whatever libc does.
 */
static struct cmsghdr *next_hdr(const struct msghdr *msg, const struct cmsghdr *cm)
{
	size_t at = cm ? (size_t)((const char *)cm - (const char *)msg->msg_control) +
			     CMSG_ALIGN(cm->cmsg_len)
		       : 0;

	if (!msg->msg_control || at >= msg->msg_controllen ||
	    msg->msg_controllen - at < sizeof(struct cmsghdr))
		return NULL;
	return (struct cmsghdr *)((char *)msg->msg_control + at);
}

/* Whether @cm's length covers its header (and a devmem cmsg's payload)
 * and stays within the control buffer. */
static bool cmsg_ok(const struct msghdr *msg, const struct cmsghdr *cm)
{
	size_t room = msg->msg_controllen - (size_t)((const char *)cm - (const char *)msg->msg_control);
	bool devmem = cm->cmsg_level == SOL_SOCKET && (cm->cmsg_type == SCM_DEVMEM_DMABUF ||
						       cm->cmsg_type == SCM_DEVMEM_LINEAR);

	return cm->cmsg_len >= CMSG_LEN(devmem ? sizeof(struct dmabuf_cmsg) : 0) &&
	       cm->cmsg_len <= room;
}

/*
 * The next fragment of the last receive. Devmem skbs come with cmsgs: one
 * per dma-buf fragment, one per run of linear bytes (copied to the iov in
 * order). Readable skbs come without any: then all the bytes are linear.
 */
int devmem_rx_parse_next(struct msghdr *msg, struct devmem_rx_walk *w, const uint8_t *data,
			 size_t bytes, struct devmem_frag *frag)
{
	for (;;) {
		struct dmabuf_cmsg dc;
		struct cmsghdr *cm;

		if (!w->started) {
			cm = next_hdr(msg, NULL);
			w->started = true;
			if (!cm && bytes) {
				/* Plain data: the flow is not on a bound queue. */
				*frag = (struct devmem_frag){ .len = bytes, .linear = data };
				w->linear_used = bytes;
				w->reported = bytes;
				return 1;
			}
		} else {
			cm = w->cursor ? next_hdr(msg, w->cursor) : NULL;
		}
		w->cursor = cm;
		if (!cm)
			break;
		if (!cmsg_ok(msg, cm)) {
			w->cursor = NULL;	/* the walk cannot go past it */
			return devmem_fail(-EPROTO, "devmem_rx_next: a cmsg (level %d, type %d) of "
					   "%zu bytes (of %zu)", cm->cmsg_level, cm->cmsg_type,
					   (size_t)cm->cmsg_len, (size_t)msg->msg_controllen);
		}
		if (cm->cmsg_level != SOL_SOCKET ||
		    (cm->cmsg_type != SCM_DEVMEM_DMABUF && cm->cmsg_type != SCM_DEVMEM_LINEAR))
			continue;
		memcpy(&dc, CMSG_DATA(cm), sizeof(dc));
		if (dc.frag_size > bytes - w->reported)
			return devmem_fail(-EPROTO, "devmem_rx_next: fragments cover more than "
					   "the %zu bytes received", bytes);
		w->reported += dc.frag_size;
		if (cm->cmsg_type == SCM_DEVMEM_LINEAR) {
			if (dc.frag_size > bytes - w->linear_used)
				return devmem_fail(-EPROTO, "devmem_rx_next: linear bytes beyond "
						   "the data received");
			*frag = (struct devmem_frag){ .len = dc.frag_size,
						      .linear = data + w->linear_used };
			w->linear_used += dc.frag_size;
			return 1;
		}
		*frag = (struct devmem_frag){ .offset = dc.frag_offset, .len = dc.frag_size,
					      .token = dc.frag_token, .dmabuf_id = dc.dmabuf_id };
		/* Reading it means reading the dma-buf at its offset: it must be
		 * the buffer declared, and lie within it. */
		if (!dc.dmabuf_id)
			return devmem_fail(-EBADMSG, "devmem_rx_next: a dma-buf fragment of dma-buf 0 "
					   "(token %u)", dc.frag_token);
		if (w->dmabuf_id && dc.dmabuf_id != w->dmabuf_id)
			return devmem_fail(-EBADMSG, "devmem_rx_next: a fragment of dma-buf %u, not "
					   "of dma-buf %u this socket receives into (a flow "
					   "steered to another binding?)", dc.dmabuf_id,
					   w->dmabuf_id);
		if (dc.frag_offset > UINT64_MAX - dc.frag_size ||
		    (w->dmabuf_id && dc.frag_offset + dc.frag_size > w->dmabuf_size))
			return devmem_fail(-EBADMSG, "devmem_rx_next: a fragment of %u bytes at "
					   "offset %llu lies outside the %llu-byte dma-buf %u",
					   dc.frag_size, (unsigned long long)dc.frag_offset,
					   (unsigned long long)w->dmabuf_size, dc.dmabuf_id);
		return 1;
	}
	if (w->reported != bytes)
		return devmem_fail(-EPROTO, "devmem_rx_next: cmsgs cover %zu of %zu bytes "
				   "received", w->reported, bytes);
	return 0;
}

/* Queues @token for return even when the batch is full. */
static void give_token(struct devmem_rx *rx, uint32_t token)
{
	rx->held++;
	if (devmem_tokens_add(&rx->tokens, token)) {
		devmem_rx_flush(rx);
		devmem_tokens_add(&rx->tokens, token);
	}
}

/* After a failed walk: the token of every dma-buf cmsg from the cursor
 * on (the fragment that failed it included) goes back, none handed out.
 * Only lengths are checked: a fragment that could not be delivered is
 * still the kernel's to free. */
static void return_rest(struct devmem_rx *rx)
{
	for (struct cmsghdr *cm = rx->walk.cursor; cm && cmsg_ok(&rx->msg, cm);
	     cm = next_hdr(&rx->msg, cm)) {
		struct dmabuf_cmsg dc;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_DEVMEM_DMABUF)
			continue;
		memcpy(&dc, CMSG_DATA(cm), sizeof(dc));
		give_token(rx, dc.frag_token);
	}
	rx->walk.cursor = NULL;
}

/* A refused fragment fails the receive: it and the rest are counted as
 * the walk finds them, and all their tokens go back now. */
static void refuse_rest(struct devmem_rx *rx)
{
	struct devmem_rx_walk w = rx->walk;	/* a copy: return_rest walks from here */
	uint64_t refused = 1;
	struct devmem_frag f;
	char why[256];
	int ret;

	snprintf(why, sizeof(why), "%s", devmem_last_error());
	while ((ret = devmem_rx_parse_next(&rx->msg, &w, rx->data_at, rx->bytes, &f)) == 1 ||
	       ret == -EBADMSG)
		refused += ret == -EBADMSG;
	rx->refused += refused;
	return_rest(rx);
	devmem_rx_flush(rx);
	devmem_fail(-EBADMSG, "%s; refused fragments on fd %d so far: %llu (their tokens "
		    "returned to the kernel)", why, rx->sock, (unsigned long long)rx->refused);
}

DEVMEM_EXPORT int devmem_rx_next(struct devmem_rx *rx, struct devmem_frag *frag)
{
	struct devmem_frag f;
	int ret;

	if (rx->walk_err)
		return devmem_fail(rx->walk_err, "devmem_rx_next: the receive failed already (%llu "
				   "fragments refused on fd %d so far)",
				   (unsigned long long)rx->refused, rx->sock);
	ret = devmem_rx_parse_next(&rx->msg, &rx->walk, rx->data_at, rx->bytes, &f);
	if (ret == -EBADMSG) {
		refuse_rest(rx);
	} else if (ret < 0) {
		char why[256];

		snprintf(why, sizeof(why), "%s", devmem_last_error());
		return_rest(rx);
		devmem_rx_flush(rx);
		devmem_fail(ret, "%s (the receive's later tokens returned to the kernel)", why);
	}
	if (ret < 0) {
		rx->walk_err = ret;
		return ret;
	}
	if (ret == 1) {
		*frag = f;
		if (f.dmabuf_id)
			rx->held++;
	}
	return ret;
}

DEVMEM_EXPORT int devmem_rx_set_buffer(struct devmem_rx *rx, uint32_t dmabuf_id, uint64_t size)
{
	if (!dmabuf_id || !size)
		return devmem_fail(-EINVAL, "devmem_rx_set_buffer: want a dma-buf id and its size, "
				   "not %u and %llu", dmabuf_id, (unsigned long long)size);
	rx->walk.dmabuf_id = dmabuf_id;
	rx->walk.dmabuf_size = size;
	return 0;
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

/* A failed call hands nothing out: the fragments it took go back. */
static void give_all_back(struct devmem_rx *rx, const struct devmem_frag *frags,
			  unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		devmem_rx_release(rx, &frags[i]);
	devmem_rx_flush(rx);
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
			*nfrags = 0;
			give_all_back(rx, frags, nf);
			return devmem_fail(-EPIPE, "devmem_rx_recv: stream ended after %zu "
					   "of %zu bytes (their fragments returned)", got, len);
		}
		while ((ret = devmem_rx_next(rx, &f)) == 1)
			frags[nf++] = f;
		if (ret < 0) {
			char why[256];

			snprintf(why, sizeof(why), "%s", devmem_last_error());
			*nfrags = 0;
			give_all_back(rx, frags, nf);
			return devmem_fail(ret, "%s", why);
		}
		linear_used += rx->walk.linear_used;
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
