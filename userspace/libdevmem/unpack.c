// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devmem_unpack: the fragments a devmem receive reports, turned into a
 * contiguous stream in a destination (copy) or combined into it element by
 * element (reduce), batch after batch. On a CUDA dma-buf the CPU cannot
 * read the payload, so a GPU kernel does it (gpu/unpack.cu, one launch per
 * batch on the handle's own stream); on host memory the CPU does, with the
 * same code that is the GPU's reference (unpack_cpu.c).
 *
 * GPU batches go through DM_SLOTS slots, each a pinned descriptor buffer,
 * its device copy and an event: a batch is copied and launched while the
 * ones before it still run, and waits only for the slot it reuses. A
 * batch's fragments may be handed back (their tokens) once
 * devmem_unpack_completed() counts it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "internal.h"
#include "unpack_abi.h"

#define DM_SLOTS	4
#define DM_THREADS	256
#define DM_MAX_BLOCKS	4096

_Static_assert((int)DEVMEM_UNPACK_INT32 == (int)DM_UNPACK_INT32 &&
	       (int)DEVMEM_UNPACK_FP64 == (int)DM_UNPACK_FP64 &&
	       (int)DEVMEM_UNPACK_COPY == (int)DM_UNPACK_COPY &&
	       (int)DEVMEM_UNPACK_AVG == (int)DM_UNPACK_AVG, "devmem.h and unpack_abi.h agree");

#ifdef DEVMEM_HAVE_GPU_KERNELS
extern const char _binary_unpack_fatbin_start[];
#endif

struct dm_slot {
	struct dm_unpack_frag *host;	/* pinned */
	CUdeviceptr dev;
	CUevent done;
	uint64_t batch;			/* last launched here (0: none) */
};

struct devmem_unpack {
	struct devmem_mem *mem;
	size_t size;
	const unsigned char *cpu;	/* host memory: its mapping */
	/* CUDA memory */
	const struct devmem_cuda_api *cu;
	CUcontext ctx;
	CUdeviceptr base;
	CUmodule mod;
	CUfunction gather, reduce;
	CUstream stream;
	CUdeviceptr carry;		/* two 8-byte halves, used in turn */
	struct dm_slot slot[DM_SLOTS];
	struct dm_unpack_frag *frags;	/* the CPU's descriptors */
	/* the current stream */
	struct dm_unpack_launch l;
	uint64_t len;
	unsigned char carry_cpu[2][8];
	uint64_t launched, completed;
	bool begun;
};

static const char *cu_err(const struct devmem_cuda_api *cu, CUresult res,
			  struct devmem_cuda_errname *n)
{
	return devmem_cuda_strerror(cu, res, n);
}

/* Makes the memory's context current for a call; the caller's comes back
 * with leave(). */
static int enter(struct devmem_unpack *u)
{
	struct devmem_cuda_errname n;
	CUresult res = u->cu->ctx_push(u->ctx);

	return res ? devmem_fail(-EIO, "devmem_unpack: cannot make the dma-buf's CUDA context "
				 "current: %s", cu_err(u->cu, res, &n)) : 0;
}

static void leave(struct devmem_unpack *u)
{
	CUcontext prev;

	u->cu->ctx_pop(&prev);
}

static int gpu_open(struct devmem_unpack *u, struct devmem_cuda *cuda)
{
	void *ctx;

	devmem_cuda_where(cuda, &u->base, &ctx, &u->cu);
	u->ctx = ctx;
#ifndef DEVMEM_HAVE_GPU_KERNELS
	u->cu = NULL;	/* nothing to release */
	return devmem_fail(-EOPNOTSUPP, "devmem_unpack: this libdevmem was built without nvcc, "
			   "so it has no GPU kernels for CUDA memory (rebuild it where "
			   "/usr/local/cuda/bin/nvcc exists)");
#else
	struct devmem_cuda_errname n;
	CUresult res;

	if (!u->cu->module_load_data || !u->cu->launch_kernel || !u->cu->event_query ||
	    !u->cu->memcpy_htod_async)
		return devmem_fail(-EOPNOTSUPP, "devmem_unpack: the CUDA library lacks the kernel "
				   "launch API (cuModuleLoadData, cuLaunchKernel)");
	if (enter(u))
		return -EIO;
	res = u->cu->module_load_data(&u->mod, _binary_unpack_fatbin_start);
	if (!res)
		res = u->cu->module_get_function(&u->gather, u->mod, "devmem_unpack_gather");
	if (!res)
		res = u->cu->module_get_function(&u->reduce, u->mod, "devmem_unpack_reduce");
	if (!res)
		res = u->cu->stream_create(&u->stream, CU_STREAM_NON_BLOCKING);
	if (!res)
		res = u->cu->mem_alloc(&u->carry, 16);
	for (int i = 0; i < DM_SLOTS && !res; i++) {
		struct dm_slot *s = &u->slot[i];
		size_t bytes = DEVMEM_UNPACK_MAX_FRAGS * sizeof(*s->host);

		res = u->cu->mem_host_alloc((void **)&s->host, bytes, 0);
		if (!res)
			res = u->cu->mem_alloc(&s->dev, bytes);
		if (!res)
			res = u->cu->event_create(&s->done, CU_EVENT_DISABLE_TIMING);
	}
	leave(u);
	return res ? devmem_fail(-EIO, "devmem_unpack: setting up the GPU kernels: %s",
				 cu_err(u->cu, res, &n)) : 0;
#endif
}

static void gpu_close(struct devmem_unpack *u)
{
	if (!u->cu || enter(u))
		return;
	if (u->stream)
		u->cu->stream_synchronize(u->stream);
	for (int i = 0; i < DM_SLOTS; i++) {
		if (u->slot[i].done)
			u->cu->event_destroy(u->slot[i].done);
		if (u->slot[i].dev)
			u->cu->mem_free(u->slot[i].dev);
		if (u->slot[i].host)
			u->cu->mem_free_host(u->slot[i].host);
	}
	if (u->carry)
		u->cu->mem_free(u->carry);
	if (u->stream)
		u->cu->stream_destroy(u->stream);
	if (u->mod)
		u->cu->module_unload(u->mod);
	leave(u);
}

/* @mem, or (mem NULL) @size bytes of host memory at @cpu: the tests'. */
int dm_unpack_open(struct devmem_unpack **out, struct devmem_mem *mem, const void *cpu,
		   size_t size)
{
	struct devmem_cuda *cuda = mem ? devmem_mem_cuda_part(mem) : NULL;
	struct devmem_unpack *u = calloc(1, sizeof(*u));
	int ret = 0;

	if (!u)
		return devmem_fail(-ENOMEM, "out of memory");
	u->mem = mem;
	u->size = mem ? devmem_mem_size(mem) : size;
	if (cuda) {
		ret = gpu_open(u, cuda);
	} else {
		u->cpu = mem ? devmem_cpu_begin(mem, DEVMEM_CPU_READ) : cpu;
		u->frags = malloc(DEVMEM_UNPACK_MAX_FRAGS * sizeof(*u->frags));
		if (!u->cpu)
			ret = -errno;
		else if (!u->frags)
			ret = devmem_fail(-ENOMEM, "out of memory");
	}
	if (ret) {
		devmem_unpack_close(u);
		return ret;
	}
	*out = u;
	return 0;
}

DEVMEM_EXPORT int devmem_unpack_open(struct devmem_unpack **out, struct devmem_mem *mem)
{
	if (!out || !mem)
		return devmem_fail(-EINVAL, "devmem_unpack_open: out and mem must not be NULL");
	return dm_unpack_open(out, mem, NULL, 0);
}

static unsigned int type_size(unsigned int type)
{
	switch (type) {
	case DEVMEM_UNPACK_FP16:
	case DEVMEM_UNPACK_BF16: return 2;
	case DEVMEM_UNPACK_FP64: return 8;
	default: return 4;
	}
}

DEVMEM_EXPORT int devmem_unpack_begin(struct devmem_unpack *u, void *dst, size_t len,
				      enum devmem_unpack_type type, enum devmem_unpack_op op,
				      unsigned int avg_n)
{
	unsigned int es;

	if (!u || !dst)
		return devmem_fail(-EINVAL, "devmem_unpack_begin: u and dst must not be NULL");
	if ((unsigned int)type > DEVMEM_UNPACK_FP64 || (unsigned int)op > DEVMEM_UNPACK_AVG)
		return devmem_fail(-EINVAL, "devmem_unpack_begin: unknown type %d or op %d",
				   type, op);
	es = op == DEVMEM_UNPACK_COPY ? 1 : type_size(type);
	if ((uintptr_t)dst % es || len % es)
		return devmem_fail(-EINVAL, "devmem_unpack_begin: dst %p and length %zu must be "
				   "multiples of the %u-byte element", dst, len, es);
	if (op == DEVMEM_UNPACK_AVG && !avg_n)
		return devmem_fail(-EINVAL, "devmem_unpack_begin: AVG divides by avg_n: 1 for an "
				   "intermediate step, the number of contributions for the last");
	memset(&u->l, 0, sizeof(u->l));
	u->l.dst = dst;
	u->l.es = es;
	u->l.type = type;
	u->l.op = op;
	u->l.avg_n = avg_n ? avg_n : 1;
	u->len = len;
	u->begun = true;
	return 0;
}

/* Checks @f and writes the batch's descriptors to @d; the stream offset
 * after it in *@end. */
static int describe(struct devmem_unpack *u, const struct devmem_frag *f, unsigned int n,
		    struct dm_unpack_frag *d, uint64_t *end)
{
	uint64_t pos = u->l.end;

	for (unsigned int i = 0; i < n; i++) {
		if (!f[i].dmabuf_id)
			return devmem_fail(-EINVAL, "devmem_unpack_add: fragment %u is linear bytes "
					   "in host memory (dmabuf_id 0), not the dma-buf's", i);
		if (f[i].offset > u->size || f[i].len > u->size - f[i].offset)
			return devmem_fail(-EINVAL, "devmem_unpack_add: fragment %u (%u bytes at "
					   "%llu) lies outside the %zu-byte dma-buf", i, f[i].len,
					   (unsigned long long)f[i].offset, u->size);
		d[i] = (struct dm_unpack_frag){ .src = f[i].offset, .pos = pos, .len = f[i].len };
		pos += f[i].len;
	}
	if (pos > u->len)
		return devmem_fail(-EINVAL, "devmem_unpack_add: the batch ends at byte %llu of the "
				   "stream, past the destination's %llu", (unsigned long long)pos,
				   (unsigned long long)u->len);
	*end = pos;
	return 0;
}

static int gpu_launch(struct devmem_unpack *u, const struct devmem_frag *f, unsigned int n)
{
	struct dm_slot *s = &u->slot[u->launched % DM_SLOTS];
	struct dm_unpack_launch l = u->l;
	struct devmem_cuda_errname en;
	CUdeviceptr frags;
	void *params[] = { &l, &frags };
	unsigned int group = 32, blocks;
	CUresult res;
	uint64_t end;
	int ret;

	if (enter(u))
		return -EIO;
	/* the slot's descriptors are free once its last launch has run */
	res = s->batch ? u->cu->event_synchronize(s->done) : CUDA_SUCCESS;
	ret = res ? -EIO : describe(u, f, n, s->host, &end);
	if (!ret) {
		/* about a 16-byte word a thread: a warp for 512 bytes, a block
		 * for 4 KiB and more */
		while (group < DM_THREADS && group * 16 < (end - u->l.end) / n)
			group *= 2;
		blocks = (n + DM_THREADS / group - 1) / (DM_THREADS / group);
		if (blocks > DM_MAX_BLOCKS)
			blocks = DM_MAX_BLOCKS;
		l.group = group;
		frags = s->dev;
		l.base = (const unsigned char *)(uintptr_t)u->base;
		l.start = u->l.end;
		l.end = end;
		l.n = n;
		l.carry_in = (const unsigned char *)(uintptr_t)(u->carry + 8 * (u->launched % 2));
		l.carry_out = (unsigned char *)(uintptr_t)(u->carry + 8 * ((u->launched + 1) % 2));
		res = u->cu->memcpy_htod_async(s->dev, s->host, n * sizeof(*s->host), u->stream);
		if (!res)
			res = u->cu->launch_kernel(l.op == DM_UNPACK_COPY ? u->gather : u->reduce,
						   blocks, 1, 1, DM_THREADS, 1, 1, 0, u->stream,
						   params, NULL);
		if (!res)
			res = u->cu->event_record(s->done, u->stream);
		if (res)
			ret = -EIO;
	}
	leave(u);
	if (ret == -EIO)
		return devmem_fail(ret, "devmem_unpack_add: %s", cu_err(u->cu, res, &en));
	if (ret)
		return ret;
	u->l.end = end;
	s->batch = ++u->launched;
	return (int)(u->launched & 0x7fffffff);
}

DEVMEM_EXPORT int devmem_unpack_add(struct devmem_unpack *u, const struct devmem_frag *f,
				    unsigned int n)
{
	struct dm_unpack_launch l;
	uint64_t end;
	int ret;

	if (!u || (!f && n))
		return devmem_fail(-EINVAL, "devmem_unpack_add: NULL argument");
	if (!u->begun)
		return devmem_fail(-EINVAL, "devmem_unpack_add: no stream begun "
				   "(devmem_unpack_begin)");
	if (n > DEVMEM_UNPACK_MAX_FRAGS)
		return devmem_fail(-E2BIG, "devmem_unpack_add: %u fragments in one batch, at most %d",
				   n, DEVMEM_UNPACK_MAX_FRAGS);
	if (!n)
		return (int)(u->launched & 0x7fffffff);
	if (u->cu)
		return gpu_launch(u, f, n);
	ret = describe(u, f, n, u->frags, &end);
	if (ret)
		return ret;
	l = u->l;
	l.base = u->cpu;
	l.start = u->l.end;
	l.end = end;
	l.n = n;
	l.carry_in = u->carry_cpu[u->launched % 2];
	l.carry_out = u->carry_cpu[(u->launched + 1) % 2];
	dm_unpack_cpu(&l, u->frags);
	u->l.end = end;
	u->completed = ++u->launched;
	return (int)(u->launched & 0x7fffffff);
}

DEVMEM_EXPORT int devmem_unpack_completed(struct devmem_unpack *u, bool wait)
{
	struct devmem_cuda_errname en;
	CUresult res = CUDA_SUCCESS;

	if (!u)
		return devmem_fail(-EINVAL, "devmem_unpack_completed: u is NULL");
	if (!u->cu || u->completed == u->launched)
		return (int)(u->completed & 0x7fffffff);
	if (enter(u))
		return -EIO;
	/* batches finish in order: the oldest slots first */
	while (u->completed < u->launched) {
		struct dm_slot *s = &u->slot[u->completed % DM_SLOTS];

		res = wait ? u->cu->event_synchronize(s->done) : u->cu->event_query(s->done);
		if (res)
			break;
		u->completed++;
	}
	leave(u);
	if (res && res != CUDA_ERROR_NOT_READY)
		return devmem_fail(-EIO, "devmem_unpack_completed: %s", cu_err(u->cu, res, &en));
	return (int)(u->completed & 0x7fffffff);
}

DEVMEM_EXPORT void devmem_unpack_close(struct devmem_unpack *u)
{
	if (!u)
		return;
	gpu_close(u);
	if (u->cpu && u->mem)
		devmem_cpu_end(u->mem, DEVMEM_CPU_READ);
	free(u->frags);
	free(u);
}
