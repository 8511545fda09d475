// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Collectives on CUDA device memory. A buffer in GPU memory is staged
 * through host memory: copied to the host before the operation (what it
 * sends or reduces), the operation runs on the copy, and what it received
 * is copied back after. So every collective takes device pointers, as a
 * training job's tensors are; with a devmem NIC beside the GPU, receiving
 * straight into GPU memory would take the copies out (not done: no such
 * host here).
 *
 * CUDA's driver API is loaded at run time: DEVCOLL_CUDA=auto (default)
 * recognises device pointers when the process had loaded libcuda.so.1 by
 * devcoll_comm_init() (a program that has not cannot hold any), on loads it
 * there, off never asks CUDA but refuses, saying so, a buffer the CPU cannot
 * reach. libdevmem loads it (DEVMEM_LIBCUDA names another
 * library, for tests).
 * Copies are synchronous (cuMemcpy), so they follow the work queued on the
 * legacy default stream; work on other streams must be synchronised first.
 * The host copies are pinned (page-locked) buffers a communicator keeps
 * for reuse: copies to and from them run at the bus's speed, and a reused
 * one costs no page faults.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "devmem_cuda.h"
#include "devmem.h"
#include "internal.h"

/* Pinned buffers a communicator keeps; more at once are plain memory. */
#define POOL_BUFS 8
#define POOL_MIN (64 << 10)

struct dc_cuda_pool {
	pthread_mutex_t lock;
	struct {
		char *p;
		size_t len;
		CUcontext ctx;	/* made current to free it */
		bool busy;
	} b[POOL_BUFS];
};

/* libdevmem's loader; set once, by the first communicator that finds it. */
static const struct devmem_cuda_api *cu;

/* 1: usable, 0: not loaded (auto), <0: error. */
static int cu_load(bool load)
{
	const struct devmem_cuda_api *api;
	int ret = devmem_cuda_load(!load, &api);

	if (ret < 0)
		return dc_fail(ret, "DEVCOLL_CUDA=on: %s", devmem_last_error());
	if (ret == 1)
		__atomic_store_n(&cu, api, __ATOMIC_RELEASE);
	return ret;
}

int dc_cuda_init(devcoll_comm *c)
{
	const char *mode = getenv("DEVCOLL_CUDA");
	int ret;

	if (!mode || !*mode || !strcmp(mode, "auto"))
		ret = cu_load(false);
	else if (!strcmp(mode, "on"))
		ret = cu_load(true);
	else if (!strcmp(mode, "off"))
		ret = 2;
	else
		return dc_fail(-EINVAL, "DEVCOLL_CUDA=%s: not auto, on or off", mode);
	if (ret < 0)
		return ret;
	/* the template of the communicators made */
	c->cuda = ret == 1 ? DC_CUDA_STAGE : ret == 2 ? DC_CUDA_REFUSE : DC_CUDA_NONE;
	return 0;
}

int dc_cuda_like(devcoll_comm *c, enum dc_cuda_mode mode)
{
	c->cuda = mode;
	if (mode != DC_CUDA_STAGE)
		return 0;
	c->cuda_pool = calloc(1, sizeof(*c->cuda_pool));
	if (!c->cuda_pool) {
		c->cuda = DC_CUDA_NONE;
		return dc_fail(-ENOMEM, "out of memory");
	}
	pthread_mutex_init(&c->cuda_pool->lock, NULL);
	return 0;
}

/* A pinned buffer of @len bytes made in context @ctx, or NULL. */
static char *pinned(size_t len, CUcontext ctx)
{
	CUcontext prev;
	void *p = NULL;

	if (ctx && cu->ctx_push(ctx))
		return NULL;
	if (cu->mem_host_alloc(&p, len, CU_MEMHOSTALLOC_PORTABLE))
		p = NULL;
	if (ctx)
		cu->ctx_pop(&prev);
	return p;
}

static void unpin(char *p, CUcontext ctx)
{
	CUcontext prev;

	if (ctx && cu->ctx_push(ctx))
		return;
	cu->mem_free_host(p);
	if (ctx)
		cu->ctx_pop(&prev);
}

/* A host buffer of at least @len bytes for @b: a free one of the pool's,
 * else a new pinned one in a free or too small slot, else plain memory. */
static int host_get(struct dc_cuda_pool *pool, struct dc_stage_buf *b, size_t len)
{
	size_t want = POOL_MIN;
	int best = -1, slot = -1;

	while (want < len)
		want *= 2;
	pthread_mutex_lock(&pool->lock);
	for (int i = 0; i < POOL_BUFS; i++) {
		if (pool->b[i].busy)
			continue;
		if (pool->b[i].len >= len && (best < 0 || pool->b[i].len < pool->b[best].len))
			best = i;
		else if (slot < 0 || !pool->b[i].p)
			slot = i;
	}
	if (best < 0 && slot >= 0) {
		if (pool->b[slot].p)
			unpin(pool->b[slot].p, pool->b[slot].ctx);
		pool->b[slot].p = pinned(want, b->ctx);
		pool->b[slot].len = pool->b[slot].p ? want : 0;
		pool->b[slot].ctx = b->ctx;
		if (pool->b[slot].p)
			best = slot;
	}
	if (best >= 0) {
		pool->b[best].busy = true;
		b->host = pool->b[best].p;
		b->pooled = true;
	}
	pthread_mutex_unlock(&pool->lock);
	if (!b->host)
		b->host = malloc(len ? len : 1);
	return b->host ? 0 : dc_fail(-ENOMEM, "CUDA: no host memory to stage %zu bytes", len);
}

static void host_put(struct dc_cuda_pool *pool, struct dc_stage_buf *b)
{
	if (!b->pooled) {
		free(b->host);
		return;
	}
	pthread_mutex_lock(&pool->lock);
	for (int i = 0; i < POOL_BUFS; i++)
		if (pool->b[i].p == b->host)
			pool->b[i].busy = false;
	pthread_mutex_unlock(&pool->lock);
}

void dc_cuda_free(devcoll_comm *c)
{
	struct dc_cuda_pool *pool = c->cuda_pool;

	if (!pool)
		return;
	for (int i = 0; i < POOL_BUFS; i++)
		if (pool->b[i].p)
			unpin(pool->b[i].p, pool->b[i].ctx);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
	c->cuda_pool = NULL;
}

static const char *cu_err(CUresult res)
{
	static __thread struct devmem_cuda_errname n;

	return devmem_cuda_strerror(cu, res, &n);
}

/* Device memory that the CPU cannot reach: its context in @ctx (NULL when
 * the allocation has none of its own, as with cuMemMap). */
static bool on_device(const void *p, CUcontext *ctx)
{
	unsigned int type = 0, managed = 0;

	*ctx = NULL;
	if (!p || cu->pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p) ||
	    type != CU_MEMORYTYPE_DEVICE)
		return false;
	if (!cu->pointer_get_attribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)p) && managed)
		return false;
	cu->pointer_get_attribute(ctx, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)p);
	return true;
}

bool dc_cuda_on_device(const void *p)
{
	CUcontext ctx;

	return cu && on_device(p, &ctx);
}

static int copy(const struct dc_stage_buf *b, bool to_device)
{
	CUcontext prev;
	CUresult res;

	if (b->ctx && (res = cu->ctx_push(b->ctx)))
		return dc_fail(-EIO, "CUDA: cannot make the buffer's context current: %s",
			       cu_err(res));
	if (to_device)
		res = cu->memcpy_htod((CUdeviceptr)b->dev + b->out_off, b->host + b->out_off, b->out_len);
	else
		res = cu->memcpy_dtoh(b->host, (CUdeviceptr)b->dev, b->len);
	if (b->ctx)
		cu->ctx_pop(&prev);
	if (res)
		return dc_fail(-EIO, "CUDA: copying %zu bytes %s the GPU: %s",
			       to_device ? b->out_len : b->len, to_device ? "to" : "from",
			       cu_err(res));
	return 0;
}

/* The largest end of @n blocks of counts[i] at displs[i], in elements. */
static size_t v_extent(const size_t *counts, const size_t *displs, int n)
{
	size_t end = 0;

	for (int i = 0; i < n; i++)
		if (counts[i] && displs[i] + counts[i] > end)
			end = displs[i] + counts[i];
	return end;
}

/*
 * The bytes of @o's send buffer this rank reads and of its receive buffer
 * it writes; *@gaps when the receive buffer has bytes the operation leaves
 * alone (v-collectives), which must then survive the copy back.
 */
static void extents(const devcoll_comm *c, const struct op *o, size_t *slen, size_t *rlen,
		    bool *gaps)
{
	size_t es = devcoll_dtype_size(o->type), n = o->count, world = (size_t)c->size;
	bool root = o->root == c->rank;

	*slen = *rlen = 0;
	*gaps = false;
	switch (o->kind) {
	case K_ALLREDUCE: *slen = n; *rlen = n; break;
	case K_REDUCE: *slen = n; *rlen = root ? n : 0; break;
	case K_BCAST: *slen = root ? n : 0; *rlen = root ? 0 : n; break;
	case K_ALLGATHER: *slen = n; *rlen = n * world; break;
	case K_ALLGATHERV:
		*slen = o->counts[c->rank];
		*rlen = v_extent(o->counts, o->displs, c->size);
		*gaps = true;
		break;
	case K_RSCATTER: *slen = n * world; *rlen = n; break;
	case K_ALLTOALL: *slen = n * world; *rlen = n * world; break;
	case K_ALLTOALLV:
		*slen = v_extent(o->scounts, o->sdispls, c->size);
		*rlen = v_extent(o->counts, o->displs, c->size);
		*gaps = true;
		break;
	case K_GATHER: *slen = n; *rlen = root ? n * world : 0; break;
	case K_SCATTER: *slen = root ? n * world : 0; *rlen = n; break;
	case K_SEND: *slen = n; break;
	case K_RECV: *rlen = n; break;
	}
	*slen *= es;
	*rlen *= es;
}

/*
 * One host copy of the device bytes [lo, hi): the send and receive regions
 * when both are on the GPU and overlap (in place) share it, so the
 * operation sees them as laid out on the device.
 */
static int stage_region(struct dc_stage *st, struct dc_stage_buf *b, const char *lo,
			const char *hi, CUcontext ctx, bool copy_in)
{
	int ret;

	b->dev = lo;
	b->len = (size_t)(hi - lo);
	b->ctx = ctx;
	ret = host_get(st->comm->cuda_pool, b, b->len);
	if (ret)
		return ret;
	return copy_in && b->len ? copy(b, false) : 0;
}

/*
 * Whether the CPU can read the ends of [p, p + len). process_vm_readv on
 * this process fails with EFAULT where nothing readable is mapped, as at a
 * GPU's addresses; a kernel or sandbox that refuses the call tells nothing.
 */
static bool cpu_reachable(const char *p, size_t len)
{
	char byte;
	struct iovec local = { &byte, 1 }, remote = { (void *)p, 1 };

	for (int i = 0; i < 2 && len; i++) {
		if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1 && errno == EFAULT)
			return false;
		remote.iov_base = (void *)(p + len - 1);
	}
	return true;
}

/* DEVCOLL_CUDA=off: a device buffer fails the operation and the
 * communicator (the peers learn why) instead of crashing the CPU code
 * that would read or write it. */
static int refuse_device(devcoll_comm *c, const struct op *o, size_t slen, size_t rlen)
{
	const char *which = !cpu_reachable(o->send, slen) ? "send" :
			    !cpu_reachable(o->recv, rlen) ? "receive" : NULL;

	if (!which)
		return 0;
	return dc_comm_fail(c, -EFAULT, "the %s buffer at %p is memory the CPU cannot reach "
			    "(a GPU buffer?) and DEVCOLL_CUDA=off does not stage it: set "
			    "DEVCOLL_CUDA=auto or on", which, which[0] == 's' ? o->send : o->recv);
}

int dc_cuda_stage(devcoll_comm *c, struct op *o)
{
	const char *s = o->send, *r = o->recv;
	struct dc_stage *st;
	CUcontext sctx, rctx;
	size_t slen, rlen;
	bool sdev, rdev, gaps;
	int ret;

	extents(c, o, &slen, &rlen, &gaps);
	if (c->cuda == DC_CUDA_REFUSE)
		return refuse_device(c, o, slen, rlen);
	sdev = slen && on_device(s, &sctx);
	rdev = rlen && on_device(r, &rctx);
	/* a receive whose bytes all come into a GPU dma-buf is gathered
	 * straight into the device buffer by the unpack kernels (dm.c) */
	if (rdev && o->kind == K_RECV && dc_dm_gpu_direct(c, o->root))
		rdev = false;
	if (!sdev && !rdev)
		return 0;
	st = calloc(1, sizeof(*st));
	if (!st)
		return dc_fail(-ENOMEM, "out of memory");
	o->stage = st;
	st->comm = c;
	if (sdev && rdev && s < r + rlen && r < s + slen) {
		/* in place: one region, copied in whole, its receive part back */
		const char *lo = s < r ? s : r, *hi = s + slen > r + rlen ? s + slen : r + rlen;

		ret = stage_region(st, &st->buf[0], lo, hi, sctx, true);
		if (ret)
			return ret;
		st->buf[0].out_off = (size_t)(r - lo);
		st->buf[0].out_len = rlen;
		o->send = st->buf[0].host + (s - lo);
		o->recv = st->buf[0].host + (r - lo);
		return ret;
	}
	if (sdev) {
		ret = stage_region(st, &st->buf[0], s, s + slen, sctx, true);
		if (ret)
			return ret;
		o->send = st->buf[0].host;
		/* a broadcast's one buffer, at the root */
		if (r == s)
			o->recv = st->buf[0].host;
	}
	if (rdev) {
		ret = stage_region(st, &st->buf[1], r, r + rlen, rctx, gaps);
		if (ret)
			return ret;
		st->buf[1].out_len = rlen;
		o->recv = st->buf[1].host;
		if (s == r)
			o->send = st->buf[1].host;
	}
	return 0;
}

int dc_cuda_unstage(struct op *o, int status)
{
	struct dc_stage *st = o->stage;

	if (!st)
		return status;
	for (int i = 0; i < 2; i++) {
		if (!status && st->buf[i].out_len)
			status = copy(&st->buf[i], true);
		if (st->buf[i].host)
			host_put(st->comm->cuda_pool, &st->buf[i]);
	}
	free(st);
	o->stage = NULL;
	return status;
}
