// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fragments checked before a consumer sees them: a dma-buf fragment must be
 * of the dma-buf the receiver declared (devmem_rx_set_buffer) and lie
 * wholly within it. Crafted cmsgs go through the parser and through a
 * devmem_rx; a refused fragment fails the receive with -EBADMSG saying
 * how many were refused so far, and its token and those of the rest of the receive reach
 * SO_DEVMEM_DONTNEED (recorded by fake_sock.h's setsockopt).
 */
#include "devtcp/check.h"
#include "fake_sock.h"

#define HAS(s) (strstr(devmem_last_error(), (s)) != NULL)

static char ctrl[4096] __attribute__((aligned(8)));
static char script_ctrl[FAKE_MAX_RECVS][256] __attribute__((aligned(8)));
static char linear[16384];	/* the iov of recv_exact: room for every test's bytes */

static void put(struct msghdr *msg, int type, uint64_t off, uint32_t size, uint32_t token,
		uint32_t id)
{
	struct dmabuf_cmsg dc = { .frag_offset = off, .frag_size = size, .frag_token = token,
				  .dmabuf_id = id };
	struct cmsghdr *cm = (struct cmsghdr *)((char *)msg->msg_control + msg->msg_controllen);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = type;
	cm->cmsg_len = CMSG_LEN(sizeof(dc));
	memcpy(CMSG_DATA(cm), &dc, sizeof(dc));
	msg->msg_controllen += CMSG_SPACE(sizeof(dc));
}

/* One dma-buf fragment through the parser with buffer (@id, @size) declared. */
static int parse_one(uint32_t id, uint64_t size, uint64_t off, uint32_t len, uint32_t frag_id,
		     struct devmem_frag *f)
{
	struct msghdr msg = { .msg_control = ctrl };
	struct devmem_rx_walk w = { .dmabuf_id = id, .dmabuf_size = size };
	uint8_t data[1];

	memset(ctrl, 0, sizeof(ctrl));
	put(&msg, SCM_DEVMEM_DMABUF, off, len, 42, frag_id);
	return devmem_rx_parse_next(&msg, &w, data, len, f);
}

static void parser(void)
{
	struct devmem_frag f;

	CHECK(parse_one(3, 65536, 61440, 4096, 3, &f) == 1 && f.offset == 61440 && f.len == 4096 &&
	      f.token == 42 && f.dmabuf_id == 3, "the last page of the dma-buf is accepted");
	CHECK(parse_one(3, 65536, 0, 4096, 9, &f) == -EBADMSG && f.token == 42 &&
	      HAS("dma-buf 9, not of dma-buf 3"), "another dma-buf's fragment is refused: '%s'",
	      devmem_last_error());
	CHECK(parse_one(3, 65536, 61441, 4096, 3, &f) == -EBADMSG && f.token == 42 &&
	      HAS("4096 bytes at offset 61441 lies outside the 65536-byte dma-buf 3"),
	      "a fragment running past the end is refused: '%s'", devmem_last_error());
	CHECK(parse_one(3, 65536, 1ull << 40, 4096, 3, &f) == -EBADMSG,
	      "a fragment far past the end is refused");
	CHECK(parse_one(3, 65536, UINT64_MAX - 100, 4096, 3, &f) == -EBADMSG,
	      "a fragment whose end overflows is refused");
	CHECK(parse_one(0, 0, UINT64_MAX - 100, 4096, 3, &f) == -EBADMSG,
	      "... also with no dma-buf declared");
	CHECK(parse_one(0, 0, 0, 4096, 0, &f) == -EBADMSG && HAS("dma-buf 0"),
	      "a dma-buf fragment of dma-buf 0 (it would pass for linear bytes) is refused");
	CHECK(parse_one(0, 0, 1 << 20, 4096, 9, &f) == 1 && f.dmabuf_id == 9,
	      "with no dma-buf declared, any other is passed on");
}

/* A receive of linear bytes, a good fragment, a foreign one, another good
 * one and one out of bounds, through a devmem_rx declared on dma-buf 3. */
static void receive(void)
{
	struct msghdr msg = { .msg_control = ctrl };
	struct devmem_rx *rx = NULL;
	struct devmem_frag f;
	uint8_t data[100];
	int s = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(devmem_rx_open(&rx, s, 0) == 0, "open");
	CHECK(devmem_rx_set_buffer(rx, 0, 4096) == -EINVAL && devmem_rx_set_buffer(rx, 3, 0) == -EINVAL,
	      "a declaration needs an id and a size");
	CHECK(devmem_rx_set_buffer(rx, 3, 16384) == 0, "declare dma-buf 3 of 16 KiB");
	memset(ctrl, 0, sizeof(ctrl));
	put(&msg, SCM_DEVMEM_LINEAR, 0, 100, 0, 0);
	put(&msg, SCM_DEVMEM_DMABUF, 0, 4096, 7, 3);
	put(&msg, SCM_DEVMEM_DMABUF, 4096, 4096, 8, 9);
	put(&msg, SCM_DEVMEM_DMABUF, 8192, 4096, 9, 3);
	put(&msg, SCM_DEVMEM_DMABUF, 16000, 4096, 10, 3);
	dm_rx_took(rx, &msg, data, 100 + 4 * 4096);

	CHECK(devmem_rx_next(rx, &f) == 1 && f.linear == data && f.len == 100, "linear bytes");
	CHECK(devmem_rx_next(rx, &f) == 1 && f.token == 7 && devmem_rx_held(rx) == 1,
	      "the good fragment, held by the caller");
	fake_nreturned = 0;
	memset(&f, 0, sizeof(f));
	CHECK(devmem_rx_next(rx, &f) == -EBADMSG && !f.len && !f.token,
	      "the foreign fragment fails the receive, not handed out");
	CHECK(HAS("dma-buf 9, not of dma-buf 3") && HAS("refused fragments on fd"),
	      "says so: '%s'", devmem_last_error());
	CHECK(fake_nreturned == 3 && fake_returned[0] == 8 && fake_returned[1] == 9 && fake_returned[2] == 10,
	      "tokens 8, 9, 10 (the refused one and the rest) went back: %u returned", fake_nreturned);
	CHECK(HAS("refused fragments on fd") && HAS("so far: 2"), "two refused (the foreign and "
	      "the out-of-bounds fragment): '%s'", devmem_last_error());
	CHECK(devmem_rx_held(rx) == 1, "the caller's fragment is still held: %llu",
	      (unsigned long long)devmem_rx_held(rx));
	CHECK(devmem_rx_next(rx, &f) == -EBADMSG, "the receive stays failed");
	f = (struct devmem_frag){ .len = 4096, .token = 7, .dmabuf_id = 3 };
	fake_nreturned = 0;
	CHECK(devmem_rx_release(rx, &f) == 0 && devmem_rx_flush(rx) == 0 && fake_nreturned == 1 &&
	      fake_returned[0] == 7 && devmem_rx_held(rx) == 0, "the caller's fragment goes back too");

	/* the next receive walks afresh, with the declaration kept */
	msg.msg_controllen = 0;
	memset(ctrl, 0, sizeof(ctrl));
	put(&msg, SCM_DEVMEM_DMABUF, 12288, 4096, 11, 3);
	dm_rx_took(rx, &msg, data, 4096);
	CHECK(devmem_rx_next(rx, &f) == 1 && f.token == 11 && f.offset == 12288,
	      "a good receive after a refused one");
	CHECK(devmem_rx_next(rx, &f) == 0, "and its end");
	fake_nreturned = 0;
	devmem_rx_close(rx);
	close(s);
}

/* Queues a receive of one dma-buf fragment. */
static void queue_frag(uint64_t off, uint32_t len, uint32_t token, uint32_t id)
{
	struct msghdr m = { .msg_control = script_ctrl[fake_nrecvs] };

	put(&m, SCM_DEVMEM_DMABUF, off, len, token, id);
	fake_queue(script_ctrl[fake_nrecvs], m.msg_controllen, len);
}

/* A receiver on a fresh socket that declared dma-buf 3, 16 KiB, its own. */
static void open_declared(struct devmem_rx **rx, int *s)
{
	*s = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(devmem_rx_open(rx, *s, 0) == 0 && devmem_rx_set_buffer(*rx, 3, 16384) == 0, "open");
}

/* devmem_rx_recv_exact() over two receives, the second refused: the call
 * fails, reports no fragment, and every token went back once. */
static void recv_exact_refused(void)
{
	struct devmem_rx *rx = NULL;
	struct devmem_frag frags[8];
	unsigned int nf = 99;
	int s;

	open_declared(&rx, &s);
	fake_reset();
	queue_frag(0, 4096, 21, 3);
	queue_frag(4096, 4096, 22, 4);
	CHECK(devmem_rx_recv_exact(rx, 8192, frags, 8, &nf, linear, sizeof(linear)) == -EBADMSG,
	      "recv_exact fails on the foreign fragment of its second receive");
	CHECK(nf == 0, "no fragment left for the caller: %u", nf);
	CHECK(fake_nreturned == 2 && fake_returned[0] == 22 && fake_returned[1] == 21,
	      "both tokens went back once (the refused one first): %u", fake_nreturned);
	CHECK(devmem_rx_held(rx) == 0 && HAS("dma-buf 4, not of dma-buf 3") && HAS("so far: 1"),
	      "nothing held, one refused: '%s'", devmem_last_error());
	devmem_rx_close(rx);
	close(s);
}

/* devmem_rx_recv_exact() whose stream ends after one of two fragments:
 * -EPIPE, no fragment for the caller, its token went back once. */
static void recv_exact_cut(void)
{
	struct devmem_rx *rx = NULL;
	struct devmem_frag frags[8];
	unsigned int nf = 99;
	int s;

	open_declared(&rx, &s);
	fake_reset();
	queue_frag(0, 4096, 31, 3);
	fake_queue(NULL, 0, 0);		/* then the end of the stream */
	CHECK(devmem_rx_recv_exact(rx, 8192, frags, 8, &nf, linear, sizeof(linear)) == -EPIPE &&
	      HAS("stream ended after 4096 of 8192"), "recv_exact fails as the stream ends: '%s'",
	      devmem_last_error());
	CHECK(nf == 0, "no fragment left for the caller: %u", nf);
	CHECK(fake_nreturned == 1 && fake_returned[0] == 31 && devmem_rx_held(rx) == 0,
	      "token 31 went back, nothing held: %u returned, %llu held", fake_nreturned,
	      (unsigned long long)devmem_rx_held(rx));
	devmem_rx_close(rx);
	close(s);
}

/* A second declaration replaces the first from the next fragment on, in
 * the middle of a receive too; a bad one changes nothing. */
static void declare_again(void)
{
	struct msghdr msg = { .msg_control = ctrl };
	struct devmem_rx *rx = NULL;
	struct devmem_frag f;
	uint8_t data[1];
	int s;

	open_declared(&rx, &s);
	memset(ctrl, 0, sizeof(ctrl));
	put(&msg, SCM_DEVMEM_DMABUF, 0, 4096, 41, 3);
	put(&msg, SCM_DEVMEM_DMABUF, 0, 4096, 42, 4);
	put(&msg, SCM_DEVMEM_DMABUF, 4096, 4096, 43, 3);
	dm_rx_took(rx, &msg, data, 3 * 4096);
	CHECK(devmem_rx_next(rx, &f) == 1 && f.token == 41, "dma-buf 3's fragment");
	CHECK(devmem_rx_set_buffer(rx, 0, 8192) == -EINVAL && devmem_rx_set_buffer(rx, 4, 0) ==
	      -EINVAL, "a bad declaration fails");
	CHECK(devmem_rx_set_buffer(rx, 4, 8192) == 0, "declare dma-buf 4 mid-receive");
	CHECK(devmem_rx_next(rx, &f) == 1 && f.token == 42 && f.dmabuf_id == 4,
	      "dma-buf 4's fragment is now accepted");
	fake_nreturned = 0;
	CHECK(devmem_rx_next(rx, &f) == -EBADMSG && HAS("dma-buf 3, not of dma-buf 4") &&
	      fake_nreturned == 1 && fake_returned[0] == 43, "and dma-buf 3's refused: '%s'",
	      devmem_last_error());
	CHECK(devmem_rx_held(rx) == 2, "both handed out stay the caller's: %llu",
	      (unsigned long long)devmem_rx_held(rx));
	devmem_rx_close(rx);
	close(s);
}

/* A receive that claims more bytes in fragments than it brought fails with
 * -EPROTO: the fragment handed out stays the caller's, every later token
 * goes back at once, and none twice. */
static void overrun_returns_tokens(void)
{
	struct msghdr msg = { .msg_control = ctrl };
	struct devmem_rx *rx = NULL;
	struct devmem_frag f, frags[8];
	unsigned int nf = 99;
	uint8_t data[1];
	int s;

	open_declared(&rx, &s);
	memset(ctrl, 0, sizeof(ctrl));
	put(&msg, SCM_DEVMEM_DMABUF, 0, 4096, 1, 3);
	put(&msg, SCM_DEVMEM_DMABUF, 4096, 4096, 2, 3);
	put(&msg, SCM_DEVMEM_DMABUF, 8192, 4096, 3, 3);
	dm_rx_took(rx, &msg, data, 4096);
	fake_nreturned = 0;
	CHECK(devmem_rx_next(rx, &f) == 1 && f.token == 1, "the first fragment is handed out");
	CHECK(devmem_rx_next(rx, &f) == -EPROTO && HAS("cover more than the 4096 bytes"),
	      "the second overruns the receive: '%s'", devmem_last_error());
	CHECK(fake_nreturned == 2 && fake_returned[0] == 2 && fake_returned[1] == 3,
	      "tokens 2 and 3 went back: %u returned", fake_nreturned);
	CHECK(devmem_rx_held(rx) == 1, "token 1 is still the caller's: %llu held",
	      (unsigned long long)devmem_rx_held(rx));
	CHECK(devmem_rx_next(rx, &f) == -EPROTO && fake_nreturned == 2,
	      "the receive stays failed, nothing returned twice");
	f = (struct devmem_frag){ .len = 4096, .token = 1, .dmabuf_id = 3 };
	CHECK(devmem_rx_release(rx, &f) == 0 && devmem_rx_flush(rx) == 0 && fake_nreturned == 3 &&
	      devmem_rx_held(rx) == 0, "the caller's goes back too");

	/* through recv_exact: nothing reaches the caller, every token goes back */
	fake_reset();
	msg = (struct msghdr){ .msg_control = script_ctrl[0] };
	put(&msg, SCM_DEVMEM_DMABUF, 0, 4096, 4, 3);
	put(&msg, SCM_DEVMEM_DMABUF, 4096, 4096, 5, 3);
	fake_queue(script_ctrl[0], msg.msg_controllen, 4096);
	CHECK(devmem_rx_recv_exact(rx, 4096, frags, 8, &nf, linear, sizeof(linear)) == -EPROTO &&
	      nf == 0, "recv_exact fails on the overrun, no fragment for the caller");
	CHECK(fake_nreturned == 2 && ((fake_returned[0] == 5 && fake_returned[1] == 4) ||
				 (fake_returned[0] == 4 && fake_returned[1] == 5)) && devmem_rx_held(rx) == 0,
	      "tokens 4 and 5 went back once each: %u returned", fake_nreturned);
	devmem_rx_close(rx);
	close(s);
}

/* Appends a bare cmsg header of @level, @type claiming @len bytes. */
static void put_hdr(struct msghdr *msg, int level, int type, size_t len)
{
	struct cmsghdr *cm = (struct cmsghdr *)((char *)msg->msg_control + msg->msg_controllen);

	cm->cmsg_level = level;
	cm->cmsg_type = type;
	cm->cmsg_len = len;
	msg->msg_controllen += CMSG_SPACE(0);
}

/* Every cmsg's length is checked, whatever its type: one running past the
 * control buffer, or shorter than its own header, fails the walk. */
static void foreign_cmsg_lengths(void)
{
	static const size_t lens[] = { 4000, 4, 0 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct msghdr msg = { .msg_control = ctrl };
		struct devmem_rx_walk w = { 0 };
		struct devmem_frag f;
		uint8_t data[100];

		memset(ctrl, 0, sizeof(ctrl));
		put(&msg, SCM_DEVMEM_LINEAR, 0, 100, 0, 0);
		put_hdr(&msg, SOL_SOCKET, SCM_TIMESTAMP, lens[i]);
		CHECK(devmem_rx_parse_next(&msg, &w, data, 100, &f) == 1 && f.len == 100,
		      "the linear bytes first");
		CHECK(devmem_rx_parse_next(&msg, &w, data, 100, &f) == -EPROTO &&
		      HAS("a cmsg (level 1, type"), "then a SCM_TIMESTAMP cmsg of %zu bytes (of %zu) "
		      "fails the walk: '%s'", lens[i], (size_t)msg.msg_controllen, devmem_last_error());
	}
}

int main(void)
{
	overrun_returns_tokens();
	foreign_cmsg_lengths();
	parser();
	receive();
	recv_exact_refused();
	recv_exact_cut();
	declare_again();
	return check_done("t_frag_check");
}
