// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * io_uring zero-copy receive: an interface queue (IORING_REGISTER_ZCRX_IFQ)
 * on one RX queue with an area of user memory or a dma-buf, multishot
 * IORING_OP_RECV_ZC per socket, and the refill ring through which received
 * buffers go back to the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define ZCRX_CQ_ENTRIES		8192
#define ZCRX_RQ_ENTRIES		32768	/* the kernel's maximum */

struct devmem_zcrx {
	struct io_uring ring;
	uint32_t ifq_id;
	char where[64];			/* "dtb queue 3", for messages */
	uint8_t *area;			/* user-memory area; NULL for dma-bufs */
	size_t area_size;
	uint32_t page_size;		/* of each receive buffer, as the kernel set it */
	uint64_t area_token;
	void *rq_mem;
	size_t rq_mem_size;
	struct io_uring_zcrx_rq rq;
	/* Buffers released while the refill ring was full. */
	struct io_uring_zcrx_rqe *backlog;
	size_t nbacklog, backlog_cap;
};

/* What to check when the kernel refuses the interface queue. */
static const char *ifq_hint(int err)
{
	switch (err) {
	case -EINVAL: return "header split must be on with hds-thresh 0 "
			     "(devmem_nic_set_header_split)";
	case -EOPNOTSUPP: return "the driver needs queue management ops and memory its "
				 "device can reach";
	case -ERANGE: return "the queue does not exist";
	case -EEXIST: return "the queue already has a memory provider (a devmem binding or "
			     "another zcrx) or an XDP program";
	case -EPERM: return "needs CAP_NET_ADMIN";
	default: return "see io_uring_register_ifq(3)";
	}
}

/* The same with a buffer size asked for (rx_buf_len): what else it needs. */
static const char *page_size_hint(int err)
{
	switch (err) {
	case -EINVAL: return "a buffer size needs a kernel whose zcrx takes rx_buf_len "
			     "(ZCRX_FEATURE_RX_PAGE_SIZE, Linux 7.x), and header split on with "
			     "hds-thresh 0";
	case -ERANGE: return "the area's memory is not physically contiguous in chunks of "
			     "that size: use a dma-buf from the system dma-heap "
			     "(devmem_mem_heap), whose chunks are large";
	case -EOPNOTSUPP: return "the driver does not take that buffer size (netdev "
				 "rx-page-size)";
	default: return ifq_hint(err);
	}
}

static int zcrx_register(struct devmem_zcrx *z, struct devmem_nic *nic, unsigned int queue,
			 struct devmem_mem *mem, uint32_t page_size)
{
	long page = sysconf(_SC_PAGESIZE);
	struct io_uring_zcrx_area_reg area = { .len = z->area_size };
	struct io_uring_region_desc region = { 0 };
	struct io_uring_zcrx_ifq_reg reg = {
		.if_idx = devmem_nic_ifindex(nic),
		.if_rxq = queue,
		.rq_entries = ZCRX_RQ_ENTRIES,
		.rx_buf_len = page_size,
	};
	int ret;

	if (mem) {
		area.flags = IORING_ZCRX_AREA_DMABUF;
		area.dmabuf_fd = devmem_mem_fd(mem);
		area.addr = 0;		/* offset into the dma-buf */
	} else {
		area.addr = (uint64_t)(uintptr_t)z->area;
	}
	z->rq_mem_size = (page + ZCRX_RQ_ENTRIES * sizeof(struct io_uring_zcrx_rqe) + page - 1) /
			 page * page;
	z->rq_mem = mmap(NULL, z->rq_mem_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (z->rq_mem == MAP_FAILED) {
		z->rq_mem = NULL;
		return devmem_fail_errno(-errno, "%s: refill ring of %zu bytes", z->where,
					 z->rq_mem_size);
	}
	region = (struct io_uring_region_desc){
		.user_addr = (uint64_t)(uintptr_t)z->rq_mem,
		.size = z->rq_mem_size,
		.flags = IORING_MEM_REGION_TYPE_USER,
	};
	reg.area_ptr = (uint64_t)(uintptr_t)&area;
	reg.region_ptr = (uint64_t)(uintptr_t)&region;
	ret = io_uring_register_ifq(&z->ring, &reg);
	if (ret && page_size)
		return devmem_fail(ret, "%s: IORING_REGISTER_ZCRX_IFQ (%s area, %u-byte buffers): "
				   "%s (%s)", z->where, mem ? "dma-buf" : "user-memory",
				   page_size, strerror(-ret), page_size_hint(ret));
	if (ret)
		return devmem_fail(ret, "%s: IORING_REGISTER_ZCRX_IFQ (%s area): %s (%s)",
				   z->where, mem ? "dma-buf" : "user-memory", strerror(-ret),
				   ifq_hint(ret));
	/* A kernel before rx_buf_len leaves it 0: its buffers are pages. */
	z->page_size = reg.rx_buf_len ? reg.rx_buf_len : (uint32_t)page;
	z->ifq_id = reg.zcrx_id;
	z->area_token = area.rq_area_token;
	z->rq.khead = (unsigned int *)((char *)z->rq_mem + reg.offsets.head);
	z->rq.ktail = (unsigned int *)((char *)z->rq_mem + reg.offsets.tail);
	z->rq.rqes = (struct io_uring_zcrx_rqe *)((char *)z->rq_mem + reg.offsets.rqes);
	z->rq.rq_tail = 0;
	z->rq.ring_entries = reg.rq_entries;
	return 0;
}

DEVMEM_EXPORT int devmem_zcrx_open(struct devmem_zcrx **out, struct devmem_nic *nic,
				   unsigned int queue, struct devmem_mem *mem, size_t area_size)
{
	return devmem_zcrx_open_page_size(out, nic, queue, mem, area_size, 0);
}

DEVMEM_EXPORT uint32_t devmem_zcrx_page_size(const struct devmem_zcrx *z)
{
	return z->page_size;
}

DEVMEM_EXPORT int devmem_zcrx_open_page_size(struct devmem_zcrx **out, struct devmem_nic *nic,
					     unsigned int queue, struct devmem_mem *mem,
					     size_t area_size, uint32_t page_size)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_CQE32 | IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL,
		.cq_entries = ZCRX_CQ_ENTRIES,
	};
	long page = sysconf(_SC_PAGESIZE);
	struct devmem_zcrx *z;
	int ret;

	if (mem)
		area_size = devmem_mem_size(mem);
	if (!area_size || area_size % page)
		return devmem_fail(-EINVAL, "devmem_zcrx_open: the area size %zu is not a "
				   "non-zero multiple of the page size", area_size);
	if (page_size == (uint32_t)page)
		page_size = 0;	/* the default: kernels before rx_buf_len take it */
	if (page_size && (page_size < (uint32_t)page || (page_size & (page_size - 1))))
		return devmem_fail(-EINVAL, "devmem_zcrx_open_page_size: %u is not a power of two "
				   "of at least the page size (%ld)", page_size, page);
	if (page_size && area_size % page_size)
		return devmem_fail(-EINVAL, "devmem_zcrx_open_page_size: the area size %zu is not "
				   "a multiple of the buffer size %u", area_size, page_size);
	z = calloc(1, sizeof(*z));
	if (!z)
		return devmem_fail(-ENOMEM, "devmem_zcrx_open: out of memory");
	snprintf(z->where, sizeof(z->where), "%s queue %u", devmem_nic_name(nic), queue);
	z->area_size = area_size;
	ret = io_uring_queue_init_params(8, &z->ring, &p);
	if (ret) {
		ret = devmem_fail(ret, "%s: io_uring set-up (DEFER_TASKRUN, CQE32): %s "
				  "(zero-copy receive needs Linux 6.15 or later)", z->where,
				  strerror(-ret));
		free(z);
		return ret;
	}
	if (!mem) {
		z->area = mmap(NULL, area_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (z->area == MAP_FAILED) {
			z->area = NULL;
			ret = devmem_fail_errno(-errno, "%s: area of %zu bytes", z->where,
						area_size);
			goto err;
		}
	}
	ret = zcrx_register(z, nic, queue, mem, page_size);
	if (ret)
		goto err;
	*out = z;
	return 0;
err:
	devmem_zcrx_close(z);
	return ret;
}

DEVMEM_EXPORT void devmem_zcrx_close(struct devmem_zcrx *z)
{
	if (!z)
		return;
	/* The ring's teardown takes the queue's provider away. */
	io_uring_queue_exit(&z->ring);
	if (z->rq_mem)
		munmap(z->rq_mem, z->rq_mem_size);
	if (z->area)
		munmap(z->area, z->area_size);
	free(z->backlog);
	free(z);
}

static int zcrx_post(struct devmem_zcrx *z, int sock)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&z->ring);

	if (!sqe)
		return devmem_fail(-EBUSY, "%s: no free submission entry", z->where);
	io_uring_prep_rw(IORING_OP_RECV_ZC, sqe, sock, NULL, 0, 0);
	sqe->ioprio |= IORING_RECV_MULTISHOT;
	sqe->zcrx_ifq_idx = z->ifq_id;
	io_uring_sqe_set_data64(sqe, (uint64_t)sock);
	return 0;
}

DEVMEM_EXPORT int devmem_zcrx_recv(struct devmem_zcrx *z, int sock)
{
	/* Segments queued out of order must not take the whole area. */
	int ret = devmem_rx_limit_window(sock, z->area_size);

	if (ret < 0)
		return ret;
	ret = zcrx_post(z, sock);
	if (ret)
		return ret;
	ret = io_uring_submit(&z->ring);
	return ret < 0 ? devmem_fail(ret, "%s: submitting RECV_ZC: %s", z->where,
				     strerror(-ret)) : 0;
}

/* Moves released buffers into the refill ring as far as it has room. */
static void zcrx_refill(struct devmem_zcrx *z)
{
	struct io_uring_zcrx_rq *rq = &z->rq;
	unsigned int mask = rq->ring_entries - 1;
	unsigned int room = rq->ring_entries - (rq->rq_tail - io_uring_smp_load_acquire(rq->khead));
	size_t n = z->nbacklog < room ? z->nbacklog : room;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		rq->rqes[rq->rq_tail++ & mask] = z->backlog[i];
	io_uring_smp_store_release(rq->ktail, rq->rq_tail);
	memmove(z->backlog, z->backlog + n, (z->nbacklog - n) * sizeof(*z->backlog));
	z->nbacklog -= n;
}

DEVMEM_EXPORT int devmem_zcrx_release(struct devmem_zcrx *z, const struct devmem_zcrx_chunk *c)
{
	if (!c->len)
		return 0;
	if (z->nbacklog == z->backlog_cap) {
		size_t cap = z->backlog_cap ? 2 * z->backlog_cap : 1024;
		void *b = realloc(z->backlog, cap * sizeof(*z->backlog));

		if (!b)
			return devmem_fail(-ENOMEM, "%s: out of memory for released buffers",
					   z->where);
		z->backlog = b;
		z->backlog_cap = cap;
	}
	z->backlog[z->nbacklog++] = (struct io_uring_zcrx_rqe){ .off = c->cookie, .len = c->len };
	zcrx_refill(z);
	return 0;
}

DEVMEM_EXPORT int devmem_zcrx_wait(struct devmem_zcrx *z, struct devmem_zcrx_chunk *chunks,
				   unsigned int max, int timeout_ms)
{
	struct __kernel_timespec ts = { .tv_sec = timeout_ms / 1000,
					.tv_nsec = (timeout_ms % 1000) * 1000000L };
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0, n = 0;
	int ret;

	zcrx_refill(z);
	if (!max)
		return 0;
	ret = io_uring_submit_and_wait_timeout(&z->ring, &cqe, 1, timeout_ms < 0 ? NULL : &ts,
					       NULL);
	if (ret < 0 && ret != -ETIME && ret != -EINTR)
		return devmem_fail(ret, "%s: waiting for completions: %s", z->where,
				   strerror(-ret));
	ret = 0;
	io_uring_for_each_cqe(&z->ring, head, cqe) {
		const struct io_uring_zcrx_cqe *zc = (const struct io_uring_zcrx_cqe *)(cqe + 1);
		int sock = (int)io_uring_cqe_get_data64(cqe);
		uint64_t off = zc->off & ~IORING_ZCRX_AREA_MASK;

		if (n == max)
			break;
		if (!(cqe->flags & IORING_CQE_F_MORE) && cqe->res == -ENOSPC) {
			/* Out of buffers or CQ room: the request ended, re-arm it. */
			ret = zcrx_post(z, sock);
			if (ret)
				break;
			seen++;
			continue;
		}
		if (cqe->res < 0 || off > z->area_size ||
		    (uint64_t)cqe->res > z->area_size - off) {
			/* Chunks before it go out first; the error comes next call. */
			if (n)
				break;
			seen++;
			if (cqe->res < 0)
				ret = devmem_fail(cqe->res, "%s: RECV_ZC on fd %d: %s", z->where,
						  sock, strerror(-cqe->res));
			else
				ret = devmem_fail(-EPROTO, "%s: completion for %llu+%d beyond the "
						  "%zu-byte area", z->where,
						  (unsigned long long)off, cqe->res, z->area_size);
			break;
		}
		seen++;
		if (!(cqe->flags & IORING_CQE_F_MORE) && cqe->res == 0) {
			chunks[n++] = (struct devmem_zcrx_chunk){ .sock = sock };	/* EOF */
			continue;
		}
		chunks[n++] = (struct devmem_zcrx_chunk){
			.sock = sock,
			.offset = off,
			.len = cqe->res,
			.data = z->area ? z->area + off : NULL,
			.cookie = off | z->area_token,
		};
	}
	io_uring_cq_advance(&z->ring, seen);
	if (ret < 0)
		return ret;
	/* Re-armed requests go out with the next wait; submit them now too. */
	io_uring_submit(&z->ring);
	return n;
}
