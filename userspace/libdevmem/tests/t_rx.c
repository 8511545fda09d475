// SPDX-License-Identifier: LGPL-2.1-or-later
/* The cmsg walk of a devmem receive, the batching of returned tokens, the
 * receive window kept within the buffers, receives unpacked into a stream. */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "devtcp/check.h"
#include "tcp_pair.h"

#define MSG devmem_last_error()
#define HAS(s) (strstr(MSG, (s)) != NULL)

static char ctrl[4096] __attribute__((aligned(8)));

/* Appends one cmsg to @msg (msg_controllen grows). */
static void put(struct msghdr *msg, int level, int type, uint64_t off, uint32_t size,
		uint32_t token, uint32_t id)
{
	struct dmabuf_cmsg dc = { .frag_offset = off, .frag_size = size, .frag_token = token,
				  .dmabuf_id = id };
	struct cmsghdr *cm = (struct cmsghdr *)((char *)msg->msg_control + msg->msg_controllen);

	cm->cmsg_level = level;
	cm->cmsg_type = type;
	cm->cmsg_len = CMSG_LEN(sizeof(dc));
	memcpy(CMSG_DATA(cm), &dc, sizeof(dc));
	msg->msg_controllen += CMSG_SPACE(sizeof(dc));
}

#define walk devmem_rx_walk

static int next(struct msghdr *msg, struct walk *w, const uint8_t *data, size_t bytes,
		struct devmem_frag *f)
{
	return devmem_rx_parse_next(msg, w, data, bytes, f);
}

static void mixed_fragments(void)
{
	struct msghdr msg = { .msg_control = ctrl };
	uint8_t data[300];
	struct devmem_frag f;
	struct walk w = { 0 };

	memset(ctrl, 0, sizeof(ctrl));
	put(&msg, SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 100, 0, 0);
	put(&msg, SOL_SOCKET, SCM_DEVMEM_DMABUF, 8192, 4096, 7, 3);
	put(&msg, IPPROTO_IP, 1, 0, 0, 0, 0);	/* not ours: skipped */
	put(&msg, SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 200, 0, 0);
	put(&msg, SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 1000, 8, 3);

	CHECK(next(&msg, &w, data, 5396, &f) == 1, "first");
	CHECK(f.linear == data && f.len == 100 && !f.dmabuf_id, "linear 100 at the iov start");
	CHECK(next(&msg, &w, data, 5396, &f) == 1, "second");
	CHECK(!f.linear && f.offset == 8192 && f.len == 4096 && f.token == 7 && f.dmabuf_id == 3,
	      "dmabuf frag: off %llu len %u token %u id %u", (unsigned long long)f.offset, f.len,
	      f.token, f.dmabuf_id);
	CHECK(next(&msg, &w, data, 5396, &f) == 1, "third");
	CHECK(f.linear == data + 100 && f.len == 200, "second linear run follows the first");
	CHECK(next(&msg, &w, data, 5396, &f) == 1 && f.token == 8, "fourth");
	CHECK(next(&msg, &w, data, 5396, &f) == 0, "then the end");
}

static void plain_data(void)
{
	struct msghdr msg = { .msg_control = ctrl };
	uint8_t data[64];
	struct devmem_frag f;
	struct walk w = { 0 };

	CHECK(next(&msg, &w, data, 64, &f) == 1, "plain data is one fragment");
	CHECK(f.linear == data && f.len == 64 && !f.dmabuf_id, "all linear");
	CHECK(next(&msg, &w, data, 64, &f) == 0, "and nothing else");
}

static void bad_cmsgs(void)
{
	struct msghdr msg = { .msg_control = ctrl };
	uint8_t data[64];
	struct devmem_frag f;
	struct walk w = { 0 };

	memset(ctrl, 0, sizeof(ctrl));
	put(&msg, SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 1000, 1, 1);
	CHECK(next(&msg, &w, data, 2000, &f) == 1, "a frag");
	CHECK(next(&msg, &w, data, 2000, &f) == -EPROTO, "cmsgs short of the bytes received");
	CHECK(strstr(devmem_last_error(), "cover 1000 of 2000"), "says '%s'", devmem_last_error());

	w = (struct walk){ 0 };
	CHECK(next(&msg, &w, data, 500, &f) == -EPROTO, "a frag larger than the receive");

	msg.msg_controllen = 0;
	w = (struct walk){ 0 };
	put(&msg, SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 100, 0, 0);
	CHECK(next(&msg, &w, data, 100, &f) == 1, "linear fits");
	msg.msg_controllen = 0;
	w = (struct walk){ 0 };
	put(&msg, SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 50, 1, 1);
	put(&msg, SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 100, 0, 0);
	CHECK(next(&msg, &w, data, 100, &f) == 1, "frag");
	CHECK(next(&msg, &w, data, 100, &f) == -EPROTO, "linear run beyond the bytes");
}

static void token_batches(void)
{
	struct devmem_token_batch tb = { 0 };
	unsigned int i;

	for (i = 1; i <= 5; i++)
		CHECK(!devmem_tokens_add(&tb, i), "add %u", i);
	CHECK(tb.n == 1 && tb.ranges[0].token_start == 1 && tb.ranges[0].token_count == 5,
	      "consecutive tokens coalesce: %u ranges", tb.n);
	CHECK(!devmem_tokens_add(&tb, 9) && tb.n == 2, "a gap starts a range");
	CHECK(!devmem_tokens_add(&tb, 6) && tb.n == 3, "out of order starts a range");

	tb = (struct devmem_token_batch){ 0 };
	for (i = 0; i < DEVMEM_DONTNEED_MAX_TOKENS; i++)
		CHECK(!devmem_tokens_add(&tb, 10 * i + 1), "range %u", i);
	CHECK(devmem_tokens_add(&tb, 5000) == 1, "the 129th range needs a flush");
	CHECK(!devmem_tokens_add(&tb, 10 * (DEVMEM_DONTNEED_MAX_TOKENS - 1) + 2),
	      "extending the last range still fits");

	tb = (struct devmem_token_batch){ 0 };
	for (i = 0; i < DEVMEM_DONTNEED_MAX_FRAGS; i++)
		CHECK(!devmem_tokens_add(&tb, i + 1), "token %u", i);
	CHECK(tb.n == 1, "one range of 1024");
	CHECK(devmem_tokens_add(&tb, DEVMEM_DONTNEED_MAX_FRAGS + 1) == 1,
	      "the 1025th fragment needs a flush");
	CHECK(devmem_tokens_flush(&tb, -1) < 0 && !tb.n && !tb.frags,
	      "a failed flush empties the batch");
	CHECK(strstr(devmem_last_error(), "SO_DEVMEM_DONTNEED of 1024 fragments"), "says '%s'",
	      devmem_last_error());
	CHECK(devmem_tokens_flush(&tb, -1) == 0, "an empty flush is a no-op");
}

static void open_checks(void)
{
	struct devmem_rx *rx = NULL;
	int s, p[2];

	CHECK(!pipe(p), "pipe");
	CHECK(devmem_rx_open(&rx, p[0], 0) == -ENOTSOCK, "a pipe is refused");
	CHECK(strstr(devmem_last_error(), "is not a socket"), "says '%s'", devmem_last_error());
	close(p[0]);
	close(p[1]);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(devmem_rx_open(&rx, s, 0) == -EINVAL, "a UDP socket is refused");
	CHECK(strstr(devmem_last_error(), "not a TCP socket"), "says '%s'", devmem_last_error());
	close(s);
	s = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(devmem_rx_open(&rx, s, 4096) == 0, "a TCP socket is fine");
	CHECK(devmem_rx_held(rx) == 0, "nothing held");
	devmem_rx_close(rx);
	close(s);
}

/*
 * A full batch that the kernel refuses: the error comes back, and the
 * fragment whose release sent the batch still waits for the next flush
 * (here a TCP socket with no devmem data, where the kernel frees nothing).
 */
static void release_failure(void)
{
	struct devmem_rx *rx = NULL;
	struct devmem_frag f = { .len = 4096, .dmabuf_id = 1 };
	int s = socket(AF_INET, SOCK_STREAM, 0);
	unsigned int i;

	CHECK(devmem_rx_open(&rx, s, 0) == 0, "open");
	for (i = 0; i < DEVMEM_DONTNEED_MAX_TOKENS; i++) {
		f.token = 10 * i;
		CHECK(devmem_rx_release(rx, &f) == 0, "release %u: queued", i);
	}
	f.token = 10 * i;
	CHECK(devmem_rx_release(rx, &f) < 0, "the release that sends a refused batch fails");
	CHECK(devmem_rx_flush(rx) < 0, "... and its own token is still queued: the next flush sends it");
	CHECK(devmem_rx_flush(rx) == 0, "... after which nothing is");
	devmem_rx_close(rx);
	close(s);
}

static int sockopt(int s, int level, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	getsockopt(s, level, name, &v, &l);
	return v;
}

static void window_limit(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int cli, srv, p[2], ret, mss, per_buf, want;

	CHECK(pipe(p) == 0, "pipe");
	ret = devmem_rx_limit_window(p[0], 1 << 20);
	CHECK(ret == -ENOTSOCK && HAS("fd") && HAS("is not a TCP socket"), "pipe: %d '%s'", ret,
	      MSG);
	close(p[0]);
	close(p[1]);
	if (tcp_pair(&cli, &srv)) {
		CHECK(0, "loopback TCP pair: %s", strerror(errno));
		return;
	}
	ret = devmem_rx_limit_window(srv, 7 * page);
	CHECK(ret == -EINVAL && HAS("fewer than 8"), "7 pages: %d '%s'", ret, MSG);
	CHECK(sockopt(srv, IPPROTO_TCP, TCP_WINDOW_CLAMP) != ret, "7 pages: nothing set");

	/* 1 MiB of buffers: half of them, each holding what fits of an MSS
	 * (loopback's MSS spans several pages). */
	mss = sockopt(srv, IPPROTO_TCP, TCP_MAXSEG);
	per_buf = mss / ((mss + page - 1) / page);
	want = (int)((1 << 20) / page / 2) * per_buf;
	ret = devmem_rx_limit_window(srv, 1 << 20);
	CHECK(ret == want, "1 MiB with MSS %d: clamp %d, want %d '%s'", mss, ret, want, MSG);
	CHECK(sockopt(srv, IPPROTO_TCP, TCP_WINDOW_CLAMP) == want, "TCP_WINDOW_CLAMP %d",
	      sockopt(srv, IPPROTO_TCP, TCP_WINDOW_CLAMP));
	/* The kernel doubles SO_RCVBUF; unprivileged, rmem_max caps it. */
	CHECK(sockopt(srv, SOL_SOCKET, SO_RCVBUF) == 2 * want || geteuid(),
	      "SO_RCVBUF %d, want %d", sockopt(srv, SOL_SOCKET, SO_RCVBUF), 2 * want);

	/* A smaller share lowers it (a communicator that grew, say). */
	ret = devmem_rx_limit_window(srv, 256 << 10);
	CHECK(ret == want / 4, "256 KiB after 1 MiB: %d, want %d", ret, want / 4);
	CHECK(sockopt(srv, IPPROTO_TCP, TCP_WINDOW_CLAMP) == want / 4, "clamp lowered: %d",
	      sockopt(srv, IPPROTO_TCP, TCP_WINDOW_CLAMP));
	close(srv);
	close(cli);

	/* Buffers holding more than autotuning ever opens: nothing to do. */
	if (tcp_pair(&cli, &srv))
		return;
	want = sockopt(srv, IPPROTO_TCP, TCP_WINDOW_CLAMP);
	per_buf = sockopt(srv, SOL_SOCKET, SO_RCVBUF);
	ret = devmem_rx_limit_window(srv, (size_t)1 << 40);
	CHECK(ret == 0, "1 TiB: %d '%s'", ret, MSG);
	CHECK(sockopt(srv, IPPROTO_TCP, TCP_WINDOW_CLAMP) == want &&
	      sockopt(srv, SOL_SOCKET, SO_RCVBUF) == per_buf, "1 TiB: clamp and buffer left alone");
	close(srv);
	close(cli);
}

/* recv_upto with MSG_DONTWAIT on a plain TCP pair (all bytes linear): what
 * is there, -EAGAIN when nothing is, never beyond @len, -EPIPE when the
 * stream ends within @len, then EOF. */
static void recv_upto(void)
{
	struct devmem_frag frags[16];
	unsigned char buf[256], want[300];
	unsigned int nf;
	struct devmem_rx *rx;
	int cli, srv;
	ssize_t n;

	for (int i = 0; i < (int)sizeof(want); i++)
		want[i] = (unsigned char)(i * 7 + 1);
	if (tcp_pair(&cli, &srv)) {
		CHECK(0, "loopback TCP pair: %s", strerror(errno));
		return;
	}
	CHECK(devmem_rx_open(&rx, srv, 4096) == 0, "open");
	n = devmem_rx_recv_upto(rx, 200, MSG_DONTWAIT, frags, 16, &nf, buf, sizeof(buf));
	CHECK(n == -EAGAIN && nf == 0, "nothing sent yet: %zd, %u fragments", n, nf);
	CHECK(write(cli, want, 120) == 120, "send 120");
	usleep(100000);
	n = devmem_rx_recv_upto(rx, 200, MSG_DONTWAIT, frags, 16, &nf, buf, sizeof(buf));
	CHECK(n == 120 && nf >= 1 && frags[0].offset == 0 && !memcmp(buf, want, 120),
	      "120 of 200 there: %zd bytes, %u fragments", n, nf);
	CHECK(write(cli, want + 120, 180) == 180, "send 180 more");
	usleep(100000);
	n = devmem_rx_recv_upto(rx, 80, MSG_DONTWAIT, frags, 16, &nf, buf, sizeof(buf));
	CHECK(n == 80 && !memcmp(buf, want + 120, 80), "the rest of the 200: %zd", n);
	n = devmem_rx_recv_upto(rx, 50, MSG_DONTWAIT, frags, 16, &nf, buf, sizeof(buf));
	CHECK(n == 50 && !memcmp(buf, want + 200, 50), "never beyond len: %zd", n);
	close(cli);
	usleep(100000);
	n = devmem_rx_recv_upto(rx, 100, MSG_DONTWAIT, frags, 16, &nf, buf, sizeof(buf));
	CHECK(n == -EPIPE && nf == 0,
	      "the stream ends 50 bytes into 100: %zd, %u fragments left to the caller", n, nf);
	n = devmem_rx_recv_upto(rx, 100, MSG_DONTWAIT, frags, 16, &nf, buf, sizeof(buf));
	CHECK(n == 0, "then end of stream: %zd", n);
	devmem_rx_close(rx);
	close(srv);
}

/*
 * devmem_rx_unpack on a plain TCP pair (every byte linear) into host
 * memory: 1.2 MB of int32 summed into a destination in receives of random
 * sizes (elements split between them), then -ENOSPC once it is full; a
 * stream that ends within a receive: -EPIPE.
 */
static void rx_unpack(void)
{
	enum { N = 300000 };
	int32_t *vals = malloc(N * sizeof(*vals)), *dst = malloc(N * sizeof(*dst));
	static unsigned char image[4096];
	struct devmem_unpack *u;
	struct devmem_rx *rx;
	int cli, srv, bad = 0, calls = 0;
	size_t got = 0;
	ssize_t n = 0;
	pid_t pid;

	for (int i = 0; i < N; i++) {
		vals[i] = i * 3 + 1;
		dst[i] = 1000 - i;
	}
	if (tcp_pair(&cli, &srv)) {
		CHECK(0, "loopback TCP pair: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (!pid) {
		ssize_t w = 0;

		for (size_t off = 0; off < N * sizeof(*vals); off += (size_t)w) {
			w = write(cli, (char *)vals + off, N * sizeof(*vals) - off);
			if (w <= 0)
				_exit(1);
		}
		_exit(0);
	}
	close(cli);
	CHECK(devmem_rx_open(&rx, srv, 0) == 0 && dm_unpack_open(&u, NULL, image, sizeof(image)) == 0,
	      "open: %s", MSG);
	CHECK(devmem_rx_unpack(rx, u, 100, 0) == -ENOSPC && HAS("none was begun"),
	      "no stream begun: ENOSPC '%s'", MSG);
	CHECK(devmem_unpack_begin(u, dst, N * sizeof(*dst), DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_SUM,
				  1) == 0, "begin: %s", MSG);
	srand(5);
	while (got < N * sizeof(*dst)) {
		n = devmem_rx_unpack(rx, u, 1 + (size_t)rand() % 70000, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		calls++;
	}
	CHECK(got == N * sizeof(*dst), "the whole stream in %d receives: %zu bytes (%zd '%s')",
	      calls, got, n, MSG);
	for (int i = 0; i < N; i++)
		bad += dst[i] != 1000 - i + i * 3 + 1;
	CHECK(!bad, "every element summed into the destination (%d wrong)", bad);
	CHECK(devmem_rx_unpack(rx, u, 100, 0) == -ENOSPC && HAS("full"), "then ENOSPC: '%s'",
	      MSG);
	CHECK(devmem_rx_unpack_wait(rx) == 0 && devmem_rx_held(rx) == 0, "nothing held");
	waitpid(pid, NULL, 0);
	n = devmem_rx_unpack(rx, u, 100, 0);
	CHECK(n == -ENOSPC, "still full: %zd", n);
	CHECK(devmem_unpack_begin(u, dst, 100, DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_COPY, 1) == 0,
	      "a new stream");
	n = devmem_rx_unpack(rx, u, 100, 0);
	CHECK(n == 0, "the sender is gone: end of stream, %zd", n);
	devmem_rx_close(rx);
	close(srv);

	/* 50 bytes of the 100 wanted, then the end */
	if (tcp_pair(&cli, &srv))
		return;
	CHECK(write(cli, vals, 50) == 50, "send 50");
	close(cli);
	devmem_rx_open(&rx, srv, 0);
	n = devmem_rx_unpack(rx, u, 100, 0);
	CHECK(n == -EPIPE && HAS("stream ended after 50 of 100"), "EPIPE: %zd '%s'", n, MSG);
	CHECK(devmem_rx_unpack(NULL, u, 1, 0) == -EINVAL && devmem_rx_unpack_wait(NULL) == -EINVAL,
	      "NULL arguments refused");
	devmem_rx_close(rx);
	close(srv);
	devmem_unpack_close(u);
	free(vals);
	free(dst);
}

int main(void)
{
	mixed_fragments();
	plain_data();
	bad_cmsgs();
	token_batches();
	open_checks();
	release_failure();
	window_limit();
	recv_upto();
	rx_unpack();
	return check_done("t_rx");
}
