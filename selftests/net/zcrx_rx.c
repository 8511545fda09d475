// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring zero-copy receiver (zcrx): registers an interface queue
 * (IORING_REGISTER_ZCRX_IFQ) on RX queue QUEUE of IFNAME with a user-memory
 * area (default) or a udmabuf area (-d), accepts one TCP connection and
 * receives it with multishot IORING_OP_RECV_ZC, checking every byte in the
 * area against tcp_stream's pattern and handing each buffer back through the
 * refill ring.
 *
 *   zcrx_rx -i IFNAME -q QUEUE -p PORT -n BYTES [-s SEED] [-6] [-d] [-b AREA] [-r ENTRIES]
 *
 *   -d  the area is a dma-buf (udmabuf) instead of anonymous user memory
 *   -b  area size in bytes, a multiple of the page size (default 64 MiB)
 *   -r  refill ring entries (default 32768, the kernel's maximum)
 *
 * The flow must already be steered to QUEUE (ntuple rule) with header split
 * on and hds-thresh 0. Bytes that did not come in the provider's buffers are
 * copied into the area by the kernel; its copy-fallback stats (in the refill
 * region) count those of skb frags, not the few of an skb's linear part, so
 * "zero-copy" below is the bytes less the copies counted. Exit status: 0 when
 * all BYTES arrived intact and most of them zero-copy, 1 otherwise, 2 on usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <linux/dma-buf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devmem.h"
#include "devmem_util.h"
#include "devtcp/pattern.h"

#define CQ_ENTRIES	8192
#define RQ_MAX_ENTRIES	32768	/* IO_RQ_MAX_ENTRIES of io_uring/zcrx.c */
#define USER_DATA_RECV	1

/*
 * Copy-fallback statistics of the 7.x uapi (<linux/io_uring/zcrx.h>):
 * struct io_uring_zcrx_ifq_reg gained "__u64 event_desc" where liburing
 * 2.15's copy still has __resv[0]. Defined here as the kernel has them.
 */
#define ZCRX_EVENT_DESC_FLAG_STATS_	(1 << 0)
struct zcrx_stats_ {
	uint64_t copy_count;	/* copy-fallback CQEs */
	uint64_t copy_bytes;	/* bytes copied into the area */
};
struct zcrx_event_desc_ {
	uint64_t user_data;
	uint32_t type_mask;
	uint32_t flags;
	uint64_t stats_offset;	/* in the refill ring region */
	uint64_t resv2[9];
};

struct options {
	const char *ifname;
	unsigned int queue;
	int port;
	uint64_t total;
	uint64_t seed;
	int v6;
	int dmabuf;
	size_t area_size;
	unsigned int rq_entries;
};

struct zcrx {
	struct io_uring ring;
	uint32_t id;
	uint8_t *area;
	size_t area_size;
	uint64_t area_token;
	struct dmabuf db;	/* -d only */
	int is_dmabuf;
	struct io_uring_zcrx_rq rq;
	const volatile struct zcrx_stats_ *stats;
	unsigned int rx_buf_len;
	/* Buffers waiting for room in the refill ring. */
	struct io_uring_zcrx_rqe *backlog;
	size_t nbacklog, backlog_cap;
};

struct rx_stats {
	uint64_t offset;
	uint64_t cqes, rearms;
	uint64_t bad, first_bad;
	uint64_t max_backlog;
};

static void usage(void)
{
	fprintf(stderr, "usage: zcrx_rx -i IFNAME -q QUEUE -p PORT -n BYTES [-s SEED] [-6] [-d] "
			"[-b AREA] [-r ENTRIES]\n");
	exit(2);
}

/* Exits with the errno of a liburing call (they return -errno). */
static void die_ret(const char *what, int ret)
{
	errno = -ret;
	die(what);
}

static void check_payload(struct rx_stats *st, const uint8_t *data, size_t len, uint64_t seed)
{
	pattern_check(data, len, seed, st->offset, &st->bad, &st->first_bad);
	st->offset += len;
}

static void ring_init(struct zcrx *z)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_CQE32 | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL,
		.cq_entries = CQ_ENTRIES,
	};
	int ret = io_uring_queue_init_params(8, &z->ring, &p);

	if (ret)
		die_ret("io_uring_queue_init_params (DEFER_TASKRUN|SINGLE_ISSUER|CQE32)", ret);
}

/* Explains the usual reasons of a failed IORING_REGISTER_ZCRX_IFQ. */
static void register_failed(const struct options *o, int err)
{
	fprintf(stderr, "zcrx_rx: IORING_REGISTER_ZCRX_IFQ on %s queue %u (%s area) failed: %s "
		"(errno %d)\n", o->ifname, o->queue, o->dmabuf ? "dma-buf" : "user-memory",
		strerror(err), err);
	switch (err) {
	case EINVAL:
		fprintf(stderr, "zcrx_rx: check: header split on (ethtool -G %s tcp-data-split on) "
			"and hds-thresh 0; the ring has DEFER_TASKRUN and CQE32; the area is "
			"page-aligned\n", o->ifname);
		break;
	case EOPNOTSUPP:
		fprintf(stderr, "zcrx_rx: check: the driver has queue management ops and a DMA "
			"device for queue %u, and its memory is reachable by the device\n",
			o->queue);
		break;
	case ERANGE:
		fprintf(stderr, "zcrx_rx: check: queue %u exists (ethtool -l %s)\n", o->queue,
			o->ifname);
		break;
	case EEXIST:
		fprintf(stderr, "zcrx_rx: check: queue %u has no memory provider yet "
			"(devmem binding, other zcrx) and no XDP program is attached\n", o->queue);
		break;
	case EPERM:
		fprintf(stderr, "zcrx_rx: check: CAP_NET_ADMIN\n");
		break;
	case ENODEV:
		fprintf(stderr, "zcrx_rx: check: %s is in this network namespace\n", o->ifname);
		break;
	default:
		break;
	}
	exit(1);
}

static void area_init(struct zcrx *z, const struct options *o, struct io_uring_zcrx_area_reg *ar)
{
	*ar = (struct io_uring_zcrx_area_reg){ .len = o->area_size };
	z->area_size = o->area_size;
	z->is_dmabuf = o->dmabuf;
	if (o->dmabuf) {
		dmabuf_create_udmabuf(&z->db, o->area_size);
		z->area = z->db.map;
		ar->addr = 0;	/* offset into the dma-buf */
		ar->flags = IORING_ZCRX_AREA_DMABUF;
		ar->dmabuf_fd = z->db.fd;
	} else {
		z->area = mmap(NULL, o->area_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (z->area == MAP_FAILED)
			die("mmap area");
		ar->addr = (uint64_t)(uintptr_t)z->area;
	}
}

static void zcrx_register(struct zcrx *z, const struct options *o, int ifindex)
{
	long page = sysconf(_SC_PAGESIZE);
	struct io_uring_zcrx_area_reg area;
	struct zcrx_event_desc_ ev = { .flags = ZCRX_EVENT_DESC_FLAG_STATS_ };
	size_t rqes_end, ring_size;
	void *ring_mem;
	int ret;

	area_init(z, o, &area);
	/* Header page, the entries, then the stats. */
	rqes_end = page + (size_t)o->rq_entries * sizeof(struct io_uring_zcrx_rqe);
	ev.stats_offset = rqes_end;
	ring_size = (rqes_end + sizeof(struct zcrx_stats_) + page - 1) / page * page;
	ring_mem = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	if (ring_mem == MAP_FAILED)
		die("mmap refill ring");

	struct io_uring_region_desc region = {
		.user_addr = (uint64_t)(uintptr_t)ring_mem,
		.size = ring_size,
		.flags = IORING_MEM_REGION_TYPE_USER,
	};
	struct io_uring_zcrx_ifq_reg reg = {
		.if_idx = ifindex,
		.if_rxq = o->queue,
		.rq_entries = o->rq_entries,
		.area_ptr = (uint64_t)(uintptr_t)&area,
		.region_ptr = (uint64_t)(uintptr_t)&region,
	};
	reg.__resv[0] = (uint64_t)(uintptr_t)&ev;	/* event_desc in the 7.x uapi */

	ret = io_uring_register_ifq(&z->ring, &reg);
	if (ret)
		register_failed(o, -ret);
	if (reg.offsets.rqes + (size_t)reg.rq_entries * sizeof(struct io_uring_zcrx_rqe) >
	    rqes_end) {
		fprintf(stderr, "zcrx_rx: refill entries at %u overlap the stats\n",
			reg.offsets.rqes);
		exit(1);
	}
	z->id = reg.zcrx_id;
	z->area_token = area.rq_area_token;
	z->rx_buf_len = reg.rx_buf_len;
	z->rq.khead = (unsigned int *)((char *)ring_mem + reg.offsets.head);
	z->rq.ktail = (unsigned int *)((char *)ring_mem + reg.offsets.tail);
	z->rq.rqes = (struct io_uring_zcrx_rqe *)((char *)ring_mem + reg.offsets.rqes);
	z->rq.rq_tail = 0;
	z->rq.ring_entries = reg.rq_entries;
	z->stats = (const volatile struct zcrx_stats_ *)((char *)ring_mem + ev.stats_offset);
	printf("zcrx: ifq %u on %s queue %u, %s area of %zu bytes, %u refill entries, "
	       "rx_buf_len %u\n", z->id, o->ifname, o->queue, o->dmabuf ? "dma-buf" : "user-memory",
	       o->area_size, reg.rq_entries, reg.rx_buf_len);
	fflush(stdout);
}

static void post_recv(struct zcrx *z, int s, uint64_t left)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&z->ring);

	if (!sqe) {
		fprintf(stderr, "zcrx_rx: no SQE\n");
		exit(1);
	}
	/* len 0 is unlimited; cap so that a huge stream fits in 32 bits. */
	io_uring_prep_rw(IORING_OP_RECV_ZC, sqe, s, NULL, left > (1u << 30) ? 0 : left, 0);
	sqe->ioprio |= IORING_RECV_MULTISHOT;
	sqe->zcrx_ifq_idx = z->id;
	sqe->user_data = USER_DATA_RECV;
}

/* Moves backlogged buffers into the refill ring as far as it has room. */
static void refill_flush(struct zcrx *z)
{
	struct io_uring_zcrx_rq *rq = &z->rq;
	unsigned int mask = rq->ring_entries - 1, room;
	size_t i, n;

	if (!z->nbacklog)
		return;
	room = rq->ring_entries - (rq->rq_tail - io_uring_smp_load_acquire(rq->khead));
	n = z->nbacklog < room ? z->nbacklog : room;
	for (i = 0; i < n; i++)
		rq->rqes[rq->rq_tail++ & mask] = z->backlog[i];
	io_uring_smp_store_release(rq->ktail, rq->rq_tail);
	memmove(z->backlog, z->backlog + n, (z->nbacklog - n) * sizeof(*z->backlog));
	z->nbacklog -= n;
}

/* Hands one received buffer back to the kernel. */
static void refill_add(struct zcrx *z, uint64_t off, uint32_t len)
{
	if (z->nbacklog == z->backlog_cap) {
		z->backlog_cap = z->backlog_cap ? 2 * z->backlog_cap : 1024;
		z->backlog = realloc(z->backlog, z->backlog_cap * sizeof(*z->backlog));
		if (!z->backlog)
			die("realloc");
	}
	z->backlog[z->nbacklog++] = (struct io_uring_zcrx_rqe){
		.off = (off & ~IORING_ZCRX_AREA_MASK) | z->area_token,
		.len = len,
	};
}

/* One data CQE: where the bytes are in the area, checked, then given back. */
static int handle_data(struct zcrx *z, struct rx_stats *st, const struct io_uring_cqe *cqe,
		       uint64_t seed)
{
	const struct io_uring_zcrx_cqe *rcqe = (const struct io_uring_zcrx_cqe *)(cqe + 1);
	uint64_t off = rcqe->off & ~IORING_ZCRX_AREA_MASK;
	uint32_t len = cqe->res;

	if (off > z->area_size || len > z->area_size - off) {
		fprintf(stderr, "zcrx_rx: CQE for %llu+%u beyond the %zu-byte area\n",
			(unsigned long long)off, len, z->area_size);
		return -1;
	}
	check_payload(st, z->area + off, len, seed);
	st->cqes++;
	refill_add(z, rcqe->off, len);
	return 0;
}

/* Receives until @total bytes or an error; returns 0 if all arrived. */
static int receive_stream(struct zcrx *z, int s, struct rx_stats *st, uint64_t total,
			  uint64_t seed)
{
	int armed = 1, rc = 0;

	post_recv(z, s, total);
	while (st->offset < total && !rc) {
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;
		int ret;

		ret = io_uring_submit_and_wait(&z->ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -ETIME)
			die_ret("io_uring_submit_and_wait", ret);
		if (z->is_dmabuf)
			dmabuf_sync(&z->db, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
		io_uring_for_each_cqe(&z->ring, head, cqe) {
			n++;
			if (cqe->user_data != USER_DATA_RECV)
				continue;
			if (cqe->flags & IORING_CQE_F_MORE) {
				if (cqe->res < 0) {
					fprintf(stderr, "zcrx_rx: RECV_ZC: %s\n", strerror(-cqe->res));
					rc = -1;
				} else if (handle_data(z, st, cqe, seed)) {
					rc = -1;
				}
				continue;
			}
			/* The request ended: re-arm, or why it ended. */
			armed = 0;
			if (cqe->res == -ENOSPC) {
				/* CQ or refill buffers ran short: go on. */
				st->rearms++;
				armed = 1;
				post_recv(z, s, total - st->offset);
			} else if (cqe->res == 0 && st->offset < total) {
				fprintf(stderr, "zcrx_rx: connection closed after %llu of %llu bytes\n",
					(unsigned long long)st->offset, (unsigned long long)total);
				rc = -1;
			} else if (cqe->res < 0) {
				fprintf(stderr, "zcrx_rx: RECV_ZC ended: %s after %llu of %llu bytes\n",
					strerror(-cqe->res), (unsigned long long)st->offset,
					(unsigned long long)total);
				rc = -1;
			}
		}
		if (z->is_dmabuf)
			dmabuf_sync(&z->db, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
		io_uring_cq_advance(&z->ring, n);
		if (z->nbacklog > st->max_backlog)
			st->max_backlog = z->nbacklog;
		refill_flush(z);
		if (!armed && st->offset < total && !rc) {
			fprintf(stderr, "zcrx_rx: RECV_ZC ended early\n");
			rc = -1;
		}
	}
	return rc;
}

static void parse_options(int argc, char **argv, struct options *o)
{
	long page = sysconf(_SC_PAGESIZE);
	int opt;

	*o = (struct options){ .seed = 1, .area_size = 64 << 20, .rq_entries = RQ_MAX_ENTRIES };
	while ((opt = getopt(argc, argv, "i:q:p:n:s:6db:r:")) != -1) {
		switch (opt) {
		case 'i': o->ifname = optarg; break;
		case 'q': o->queue = strtoul(optarg, NULL, 0); break;
		case 'p': o->port = atoi(optarg); break;
		case 'n': o->total = strtoull(optarg, NULL, 0); break;
		case 's': o->seed = strtoull(optarg, NULL, 0); break;
		case '6': o->v6 = 1; break;
		case 'd': o->dmabuf = 1; break;
		case 'b': o->area_size = strtoull(optarg, NULL, 0); break;
		case 'r': o->rq_entries = strtoul(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (optind != argc || !o->ifname || o->port <= 0 || o->port > 65535 || !o->total ||
	    !o->area_size || o->area_size % page || !o->rq_entries ||
	    o->rq_entries > RQ_MAX_ENTRIES || (o->rq_entries & (o->rq_entries - 1)))
		usage();
}

int main(int argc, char **argv)
{
	struct rx_stats st = { 0 };
	struct zcrx z = { 0 };
	struct options o;
	uint64_t copied, copies;
	int ifindex, s, window, rc = 0;
	double t0, secs;

	parse_options(argc, argv, &o);
	ifindex = ifindex_of(o.ifname);
	ring_init(&z);
	zcrx_register(&z, &o, ifindex);

	s = tcp_accept_one(o.v6, o.port);
	/* Segments queued out of order must not take the whole area. */
	window = devmem_rx_limit_window(s, o.area_size);
	if (window < 0)
		die_ret(devmem_last_error(), window);
	if (window)
		printf("receive window limited to %d bytes (%zu-byte area)\n", window, o.area_size);
	t0 = now();
	if (receive_stream(&z, s, &st, o.total, o.seed))
		rc = 1;
	secs = now() - t0;
	copied = z.stats->copy_bytes;
	copies = z.stats->copy_count;

	if (st.bad)
		fprintf(stderr, "zcrx_rx: first mismatch at offset %llu\n",
			(unsigned long long)st.first_bad);
	printf("received %llu bytes in %llu CQEs (%llu zero-copy, %llu copied by the kernel "
	       "in %llu copy-fallback CQEs), %llu re-arms, %llu mismatched, %.1f MB/s\n",
	       (unsigned long long)st.offset, (unsigned long long)st.cqes,
	       (unsigned long long)(st.offset - copied), (unsigned long long)copied,
	       (unsigned long long)copies, (unsigned long long)st.rearms,
	       (unsigned long long)st.bad, secs > 0 ? st.offset / secs / 1e6 : 0.0);
	if (copied > st.offset)
		fprintf(stderr, "zcrx_rx: copy stats (%llu) exceed the bytes received\n",
			(unsigned long long)copied);
	else if (st.offset && copied >= st.offset / 2)
		fprintf(stderr, "zcrx_rx: most bytes were not zero-copy: the kernel copied them "
			"(flow not steered to queue %u?)\n", o.queue);

	close(s);
	io_uring_queue_exit(&z.ring);
	if (st.offset != o.total || st.bad || copied >= st.offset / 2)
		rc = 1;
	return rc;
}
