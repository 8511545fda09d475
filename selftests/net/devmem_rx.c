// SPDX-License-Identifier: GPL-2.0
/*
 * Devmem TCP receiver: binds a dma-buf (a udmabuf, or with -H one from the
 * system dma-heap) to one RX queue with netdev bind-rx,
 * accepts one TCP connection and receives it with MSG_SOCK_DEVMEM, checking
 * every byte (in the dma-buf or copied to the iov) against tcp_stream's
 * pattern and handing the dma-buf fragments back with SO_DEVMEM_DONTNEED.
 *
 *   devmem_rx -i IFNAME -q QUEUE[,QUEUE...] -p PORT -n BYTES [-s SEED] [-6] [-b BUFSIZE]
 *             [-H] [-r] [--rx-page-size SIZE] [--hold FRAGS] [--return-delay-us US]
 *             [--idle-timeout SECS] [--no-validate] [--stall SECS] [--conns N]
 *             [--limit-window] [--window-clamp BYTES] [--record FILE] [--bar]
 *
 *   -q  the queue, or several: one binding of the dma-buf to all of them
 *   -b  dma-buf size in bytes, a multiple of the page size (default 64 MiB)
 *   -H  allocate the dma-buf from /dev/dma_heap/system instead of udmabuf
 *   --bar             bind BAR memory of the test exporter (selftests/harness/bar)
 *                     instead, memory without struct pages; validate through
 *                     the BAR
 *   -r  first check that a plain recv() of devmem data fails with EFAULT
 *   --rx-page-size    send bind-rx's rx-page-size attribute (the kernel checks it)
 *   --hold            keep the tokens of the last FRAGS dma-buf frags, returning
 *                     only older ones (a slow consumer; all go back at the end)
 *   --return-delay-us sleep this long before every SO_DEVMEM_DONTNEED
 *   --idle-timeout    give up when no data came for SECS seconds (default: wait)
 *   --no-validate     neither read nor check the payload (for benchmarks); the
 *                     byte counts and the frag checks still apply
 *   --stall           return no token for the first SECS seconds after the
 *                     connection came (a consumer that does not keep up),
 *                     then all of them ("stall over" on stdout)
 *   --conns           N connections into the one binding, each BYTES with the
 *                     seed, on ports PORT .. PORT+N-1 (one process each)
 *   --limit-window    keep each connection's receive window within its share
 *                     of the dma-buf less what --hold keeps, with libdevmem's
 *                     devmem_rx_limit_window()
 *   --window-clamp    clamp the receive window to BYTES (SO_RCVBUFFORCE and
 *                     TCP_WINDOW_CLAMP): an explicit bound, for tests that
 *                     want drops but no stall
 *   --record FILE     write the dma-buf fragments' layout to FILE: "batch"
 *                     for each recvmsg(), then "offset length" per fragment
 *                     (libdevmem's unpack tests replay it)
 *
 * The flow must already be steered to QUEUE (ntuple rule) with header split
 * on. Exit status: 0 when all BYTES arrived intact and some of them through
 * the dma-buf, 1 otherwise, 2 on usage. A last "stats" line gives the
 * receive's CPU time and syscall counts, for benchmarks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/dma-buf.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/devmem_compat.h>

#include "devmem.h"
#include "devmem_util.h"
#include "devtcp/pattern.h"

/*
 * recvmsg() returns at most the iov's length, dma-buf bytes included, so a
 * small iov would cap every call to a few KiB of payload.
 */
#define IOV_SIZE	(1024 * 1024)
#define MAX_CMSGS	10000
#define CTRL_SIZE	(CMSG_SPACE(sizeof(struct dmabuf_cmsg)) * MAX_CMSGS)

/* Kernel limits of one SO_DEVMEM_DONTNEED call (net/core/sock.c). */
#define DONTNEED_MAX_TOKENS	128
#define DONTNEED_MAX_FRAGS	1024

#define MAX_QUEUES	64
#define MAX_CONNS	64
/* Tokens a stalled receiver can keep. */
#define STALL_TOKENS	(1 << 20)

struct options {
	const char *ifname;
	unsigned int queue;
	unsigned int queues[MAX_QUEUES];
	unsigned int nqueues;
	unsigned int stall;
	unsigned int conns;
	int port;
	uint64_t total;
	uint64_t seed;
	int v6;
	size_t bufsize;
	int probe_plain_recv;
	int heap;		/* enum dmabuf_kind: udmabuf, -H, --bar */
	uint32_t rx_page_size;	/* 0: attribute left out */
	unsigned int hold;	/* frags whose tokens are kept back */
	unsigned int return_delay_us;
	unsigned int idle_timeout;
	int no_validate;
	int limit_window;
	int window_clamp;
};

/* Where we are in the stream and how the bytes got here. */
struct rx_stats {
	uint64_t offset;
	uint64_t dmabuf_bytes, dmabuf_frags;
	uint32_t largest_frag;		/* of those in the dma-buf */
	uint64_t linear_bytes, linear_frags;
	uint64_t plain_bytes;
	uint64_t bad, first_bad;
	uint64_t recv_calls, dontneed_calls;
};

/* Tokens waiting to go back to the kernel, as coalesced ranges. */
struct token_batch {
	struct dmabuf_token ranges[DONTNEED_MAX_TOKENS];
	unsigned int n;
	unsigned int frags;
	struct rx_stats *st;
	unsigned int delay_us;
};

/* Tokens kept back by --hold, oldest first (a ring of hold + MAX_CMSGS). */
struct token_fifo {
	uint32_t *tokens;
	size_t cap, head, len;
};

static int no_validate;
static FILE *record;	/* --record */

static void usage(void)
{
	fprintf(stderr, "usage: devmem_rx -i IFNAME -q QUEUE[,QUEUE...] -p PORT -n BYTES [-s SEED] "
			"[-6] [-b BUFSIZE] [-H] [-r]\n"
			"       [--rx-page-size SIZE] [--hold FRAGS] [--return-delay-us US] "
			"[--idle-timeout SECS] [--no-validate]\n"
			"       [--stall SECS] [--conns N] [--limit-window] [--window-clamp BYTES] "
			"[--record FILE] [--bar]\n");
	exit(2);
}

/* Checks @len received bytes against the pattern at the stream offset. */
static void check_payload(struct rx_stats *st, const uint8_t *data, size_t len, uint64_t seed)
{
	if (!no_validate)
		pattern_check(data, len, seed, st->offset, &st->bad, &st->first_bad);
	st->offset += len;
}

/* Hands the batched tokens back; the kernel answers with the frags freed. */
static void tokens_flush(struct token_batch *tb, int s)
{
	int freed;

	if (!tb->n)
		return;
	if (tb->delay_us)
		usleep(tb->delay_us);
	tb->st->dontneed_calls++;
	freed = setsockopt(s, SOL_SOCKET, SO_DEVMEM_DONTNEED, tb->ranges,
			   tb->n * sizeof(tb->ranges[0]));
	if (freed < 0)
		die("SO_DEVMEM_DONTNEED");
	if ((unsigned int)freed != tb->frags) {
		fprintf(stderr, "devmem_rx: SO_DEVMEM_DONTNEED freed %d of %u frags\n",
			freed, tb->frags);
		exit(1);
	}
	tb->n = 0;
	tb->frags = 0;
}

static void tokens_add(struct token_batch *tb, uint32_t token, int s)
{
	struct dmabuf_token *last = tb->n ? &tb->ranges[tb->n - 1] : NULL;
	int extends = last && last->token_start + last->token_count == token;

	if (tb->frags == DONTNEED_MAX_FRAGS || (tb->n == DONTNEED_MAX_TOKENS && !extends)) {
		tokens_flush(tb, s);
		extends = 0;
	}
	if (extends)
		last->token_count++;
	else
		tb->ranges[tb->n++] = (struct dmabuf_token){ .token_start = token,
							     .token_count = 1 };
	tb->frags++;
}

static int check_dmabuf_frag(const struct dmabuf *db, const struct dmabuf_cmsg *dc)
{
	if (dc->dmabuf_id != db->id) {
		fprintf(stderr, "devmem_rx: frag from dmabuf %u, bound %u\n", dc->dmabuf_id,
			db->id);
		return -1;
	}
	if (dc->frag_offset > db->size || dc->frag_size > db->size - dc->frag_offset) {
		fprintf(stderr, "devmem_rx: frag %llu+%u beyond the %zu-byte dmabuf\n",
			(unsigned long long)dc->frag_offset, dc->frag_size, db->size);
		return -1;
	}
	return 0;
}

/*
 * Walks the cmsgs of one recvmsg() in stream order: dma-buf frags are read
 * through the mapping, linear frags from the iov in turn. Returns the bytes
 * accounted for, or -1 on a malformed fragment.
 */
static ssize_t handle_cmsgs(struct msghdr *msg, const struct dmabuf *db, struct rx_stats *st,
			    struct token_fifo *held, uint64_t seed)
{
	const uint8_t *linear = msg->msg_iov->iov_base;
	struct cmsghdr *cm;
	ssize_t done = 0;

	/* Without validation the CPU never touches the dma-buf. */
	if (!no_validate)
		dmabuf_sync(db, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	if (record)
		fputs("batch\n", record);
	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		const struct dmabuf_cmsg *dc = (const struct dmabuf_cmsg *)CMSG_DATA(cm);

		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_DEVMEM_DMABUF) {
			if (check_dmabuf_frag(db, dc)) {
				done = -1;
				break;
			}
			check_payload(st, db->map + dc->frag_offset, dc->frag_size, seed);
			if (record)
				fprintf(record, "%llu %u\n", (unsigned long long)dc->frag_offset,
					dc->frag_size);
			st->dmabuf_bytes += dc->frag_size;
			st->dmabuf_frags++;
			if (dc->frag_size > st->largest_frag)
				st->largest_frag = dc->frag_size;
			held->tokens[(held->head + held->len++) % held->cap] = dc->frag_token;
		} else if (cm->cmsg_type == SCM_DEVMEM_LINEAR) {
			check_payload(st, linear, dc->frag_size, seed);
			linear += dc->frag_size;
			st->linear_bytes += dc->frag_size;
			st->linear_frags++;
		} else {
			continue;
		}
		done += dc->frag_size;
	}
	if (!no_validate)
		dmabuf_sync(db, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
	return done;
}

/*
 * A recv() without MSG_SOCK_DEVMEM must refuse devmem data with EFAULT.
 * Returns 0 if it did; a byte it returned instead is checked and counted.
 */
static int probe_plain_recv(int s, struct rx_stats *st, uint64_t seed)
{
	struct pollfd pfd = { .fd = s, .events = POLLIN };
	uint8_t byte;
	ssize_t n;

	if (poll(&pfd, 1, -1) < 0)
		die("poll");
	n = recv(s, &byte, 1, MSG_DONTWAIT);
	if (n < 0 && errno == EFAULT) {
		printf("plain recv: %s, as expected\n", strerror(errno));
		return 0;
	}
	if (n < 0)
		die("plain recv");
	printf("plain recv returned %zd byte%s instead of EFAULT\n", n, n == 1 ? "" : "s");
	check_payload(st, &byte, n, seed);
	st->plain_bytes += n;
	return -1;
}

/* Hands back all but the newest @keep held tokens, oldest first. */
static void tokens_release(struct token_fifo *held, struct token_batch *tb, int s, size_t keep)
{
	while (held->len > keep) {
		tokens_add(tb, held->tokens[held->head], s);
		held->head = (held->head + 1) % held->cap;
		held->len--;
	}
	tokens_flush(tb, s);
}

/* Receives until @total bytes or an error; returns 0 if the stream ended cleanly. */
static int receive_stream(int s, const struct dmabuf *db, struct rx_stats *st,
			  const struct options *o)
{
	static uint8_t iobuf[IOV_SIZE];
	static uint8_t ctrl[CTRL_SIZE] __attribute__((aligned(8)));
	static struct token_batch tb;
	struct iovec iov = { .iov_base = iobuf, .iov_len = sizeof(iobuf) };
	struct token_fifo held = { .cap = (size_t)o->hold + MAX_CMSGS };
	uint64_t total = o->total, seed = o->seed;
	double stall_end = now() + o->stall;
	int stalled = o->stall > 0, rc = 0;
	unsigned int idle = 0;

	if (stalled)
		held.cap += STALL_TOKENS;
	held.tokens = calloc(held.cap, sizeof(*held.tokens));
	if (!held.tokens)
		die("calloc");
	tb.st = st;
	tb.delay_us = o->return_delay_us;

	while (st->offset < total) {
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctrl,
			.msg_controllen = sizeof(ctrl),
		};
		ssize_t n = recvmsg(s, &msg, MSG_SOCK_DEVMEM);
		ssize_t done;

		st->recv_calls++;
		if (stalled && (now() >= stall_end || held.len >= STALL_TOKENS)) {
			printf("stall over after %u s: returning %zu tokens\n", o->stall, held.len);
			fflush(stdout);
			stalled = 0;
			tokens_release(&held, &tb, s, o->hold);
		}
		if (n < 0 && errno == EINTR)
			continue;
		/* A stalled receiver waits in steps of 1 s (see main()). */
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && o->stall &&
		    (stalled || !o->idle_timeout || ++idle < o->idle_timeout))
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			fprintf(stderr, "devmem_rx: no data for %u s after %llu of %llu bytes, "
				"%zu tokens held\n", o->idle_timeout,
				(unsigned long long)st->offset, (unsigned long long)total,
				held.len);
			rc = -1;
			break;
		}
		if (n <= 0) {
			fprintf(stderr, "devmem_rx: recvmsg: %s after %llu of %llu bytes\n",
				n ? strerror(errno) : "connection closed",
				(unsigned long long)st->offset, (unsigned long long)total);
			rc = -1;
			break;
		}
		if (msg.msg_flags & MSG_CTRUNC) {
			fprintf(stderr, "devmem_rx: control data truncated\n");
			rc = -1;
			break;
		}
		if (!CMSG_FIRSTHDR(&msg)) {
			/* Readable skbs come without cmsgs: the flow missed the queue. */
			check_payload(st, iobuf, n, seed);
			st->plain_bytes += n;
			continue;
		}
		idle = 0;
		done = handle_cmsgs(&msg, db, st, &held, seed);
		if (done != n) {
			if (done >= 0)
				fprintf(stderr, "devmem_rx: cmsgs cover %zd of %zd bytes\n", done, n);
			rc = -1;
			break;
		}
		if (!stalled)
			tokens_release(&held, &tb, s, o->hold);
	}
	tokens_release(&held, &tb, s, 0);
	free(held.tokens);
	return rc;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_RX_PAGE_SIZE = 256, OPT_HOLD, OPT_RETURN_DELAY, OPT_IDLE_TIMEOUT,
	       OPT_NO_VALIDATE, OPT_STALL, OPT_CONNS, OPT_LIMIT_WINDOW, OPT_WINDOW_CLAMP,
	       OPT_RECORD, OPT_BAR };
	static const struct option longopts[] = {
		{ "rx-page-size", required_argument, NULL, OPT_RX_PAGE_SIZE },
		{ "hold", required_argument, NULL, OPT_HOLD },
		{ "return-delay-us", required_argument, NULL, OPT_RETURN_DELAY },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
		{ "no-validate", no_argument, NULL, OPT_NO_VALIDATE },
		{ "stall", required_argument, NULL, OPT_STALL },
		{ "conns", required_argument, NULL, OPT_CONNS },
		{ "limit-window", no_argument, NULL, OPT_LIMIT_WINDOW },
		{ "window-clamp", required_argument, NULL, OPT_WINDOW_CLAMP },
		{ "record", required_argument, NULL, OPT_RECORD },
		{ "bar", no_argument, NULL, OPT_BAR },
		{ 0 }
	};
	long page = sysconf(_SC_PAGESIZE);
	char *q, *end;
	int opt;

	*o = (struct options){ .seed = 1, .bufsize = 64 << 20, .conns = 1 };
	while ((opt = getopt_long(argc, argv, "i:q:p:n:s:6b:Hr", longopts, NULL)) != -1) {
		switch (opt) {
		case 'i': o->ifname = optarg; break;
		case 'q':
			for (q = optarg, o->nqueues = 0; ; q = end + 1) {
				if (o->nqueues == MAX_QUEUES)
					usage();
				o->queues[o->nqueues++] = strtoul(q, &end, 0);
				if (end == q || (*end && *end != ','))
					usage();
				if (!*end)
					break;
			}
			o->queue = o->queues[0];
			break;
		case 'p': o->port = atoi(optarg); break;
		case 'n': o->total = strtoull(optarg, NULL, 0); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case '6': o->v6 = 1; break;
		case 'b': o->bufsize = strtoull(optarg, NULL, 0); break;
		case 'H': o->heap = DMABUF_HEAP; break;
		case OPT_BAR: o->heap = DMABUF_BAR; break;
		case 'r': o->probe_plain_recv = 1; break;
		case OPT_RX_PAGE_SIZE: o->rx_page_size = strtoul(optarg, NULL, 0); break;
		case OPT_HOLD: o->hold = strtoul(optarg, NULL, 0); break;
		case OPT_RETURN_DELAY: o->return_delay_us = strtoul(optarg, NULL, 0); break;
		case OPT_IDLE_TIMEOUT: o->idle_timeout = strtoul(optarg, NULL, 0); break;
		case OPT_NO_VALIDATE: o->no_validate = 1; break;
		case OPT_STALL: o->stall = strtoul(optarg, NULL, 0); break;
		case OPT_CONNS: o->conns = strtoul(optarg, NULL, 0); break;
		case OPT_LIMIT_WINDOW: o->limit_window = 1; break;
		case OPT_WINDOW_CLAMP: o->window_clamp = atoi(optarg); break;
		case OPT_RECORD:
			record = fopen(optarg, "we");
			if (!record)
				die(optarg);
			break;
		default: usage();
		}
	}
	if (optind != argc || !o->ifname || o->port <= 0 || o->port > 65535 || !o->total ||
	    !o->bufsize || o->bufsize % page || !o->nqueues || !o->conns ||
	    o->conns > MAX_CONNS || o->port + o->conns - 1 > 65535 || o->window_clamp < 0)
		usage();
}

/* This connection's share of the dma-buf, less the frags --hold keeps,
 * bounds its window. */
static void limit_window(int s, const struct options *o)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), share = o->bufsize / o->conns;
	size_t kept = (size_t)o->hold * page;
	int window = devmem_rx_limit_window(s, share > kept ? share - kept : 0);

	if (window < 0) {
		fprintf(stderr, "devmem_rx: %s\n", devmem_last_error());
		exit(1);
	}
	printf("receive window limited to %d bytes (%zu-byte share, %zu kept)\n", window, share,
	       kept);
}

/* --window-clamp: the window bounded to @bytes, past rmem_max. */
static void clamp_window(int s, int bytes)
{
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) ||
	    setsockopt(s, IPPROTO_TCP, TCP_WINDOW_CLAMP, &bytes, sizeof(bytes)))
		die("--window-clamp");
	printf("receive window clamped to %d bytes\n", bytes);
}

static double tv_secs(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	struct rusage ru0, ru1;
	struct rx_stats st = { 0 };
	struct devmem_nl *nl;
	struct options o;
	struct dmabuf db;
	int ifindex, s, rc = 0, status;
	pid_t kids[MAX_CONNS];
	unsigned int c;
	double t0, secs;

	parse_options(argc, argv, &o);
	ifindex = ifindex_of(o.ifname);
	dmabuf_create(&db, o.bufsize, o.heap);
	nl = netdev_nl_open();
	netdev_bind_rx_queues(nl, ifindex, o.queues, o.nqueues, &db, o.rx_page_size);
	no_validate = o.no_validate;

	/* More connections: a process each, sharing the binding and mapping. */
	fflush(stdout);
	for (c = 1; c < o.conns; c++) {
		kids[c] = fork();
		if (kids[c] < 0)
			die("fork");
		if (!kids[c]) {
			o.port += c;
			o.conns = 1;
			break;
		}
	}
	s = tcp_accept_one(o.v6, o.port);
	if (o.limit_window)
		limit_window(s, &o);
	if (o.window_clamp)
		clamp_window(s, o.window_clamp);
	if (o.idle_timeout || o.stall) {
		struct timeval tv = { .tv_sec = o.stall ? 1 : o.idle_timeout };

		if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
			die("SO_RCVTIMEO");
	}
	/* CPU time of the receive alone: not the dma-buf's set-up. */
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now();
	if (o.probe_plain_recv && probe_plain_recv(s, &st, o.seed))
		rc = 1;
	if (receive_stream(s, &db, &st, &o))
		rc = 1;
	secs = now() - t0;
	getrusage(RUSAGE_SELF, &ru1);

	if (st.bad)
		fprintf(stderr, "devmem_rx: first mismatch at offset %llu\n",
			(unsigned long long)st.first_bad);
	if (st.plain_bytes)
		fprintf(stderr, "devmem_rx: %llu bytes came without devmem cmsgs "
			"(flow not steered to queue %u?)\n",
			(unsigned long long)st.plain_bytes, o.queue);
	printf("received %llu bytes (%llu via dma-buf in %llu frags, %llu linear in %llu frags), "
	       "%llu mismatched", (unsigned long long)st.offset,
	       (unsigned long long)st.dmabuf_bytes, (unsigned long long)st.dmabuf_frags,
	       (unsigned long long)st.linear_bytes, (unsigned long long)st.linear_frags,
	       (unsigned long long)st.bad);
	printf(", largest frag %u, %.1f MB/s, dmabuf id %u%s\n", st.largest_frag,
	       secs > 0 ? st.offset / secs / 1e6 : 0.0, db.id, o.no_validate ? " (not validated)" : "");
	/* Copied: what the kernel wrote into our iov (linear and plain bytes). */
	printf("stats bytes %llu secs %.3f utime %.3f stime %.3f recv_calls %llu "
	       "dontneed_calls %llu copied %llu\n", (unsigned long long)st.offset, secs,
	       tv_secs(ru1.ru_utime) - tv_secs(ru0.ru_utime),
	       tv_secs(ru1.ru_stime) - tv_secs(ru0.ru_stime),
	       (unsigned long long)st.recv_calls, (unsigned long long)st.dontneed_calls,
	       (unsigned long long)(st.linear_bytes + st.plain_bytes));

	if (st.offset != o.total || st.bad || !st.dmabuf_bytes)
		rc = 1;
	if (rc) {
		/*
		 * Reset rather than close politely: an orphaned socket would keep
		 * its out-of-order skbs, and so dma-buf buffers, for tcp_fin_timeout.
		 */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(s);
	for (c = 1; c < o.conns; c++) {
		if (waitpid(kids[c], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			rc = 1;
	}
	netdev_nl_close(nl);
	return rc;
}
