// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devmem_unpack: the fragments a devmem receive reports, turned into a
 * contiguous stream in a destination (copy) or combined into it element by
 * element (reduce), batch after batch. On a CUDA dma-buf the CPU cannot
 * read the payload, so a GPU kernel does it (gpu/unpack.cu, one launch per
 * batch on the handle's own stream); on host memory the CPU does, with the
 * same code that is the GPU's reference (unpack_cpu.c).
 *
 * GPU launches go through DM_SLOTS slots, each a pinned descriptor buffer,
 * its device copy and an event: a launch is copied and started while the
 * ones before it still run, and waits only for the slot it reuses. A
 * batch of a receive's size (DM_UNPACK_INLINE fragments) goes in the
 * launch's parameters instead, which saves a copy before every kernel:
 * that copy was most of what a receive's launch cost. A batch
 * is one launch, unless it holds linear bytes (a copy in host memory, as
 * a receive reports bytes that did not land in the dma-buf): those go to
 * the GPU through the slot's pinned scratch, and each run of them is a
 * launch of its own that reads from there. A batch's fragments may be
 * handed back (their tokens) once devmem_unpack_completed() counts it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devmem_cuda.h"
#include "internal.h"
#include "unpack_abi.h"

#define DM_SLOTS	4
#define DM_MAX_BLOCKS	4096
#define DM_LINEAR	(64u << 10)	/* linear bytes one GPU launch takes */

_Static_assert(sizeof(struct dm_unpack_launch) + 8 + sizeof(struct dm_unpack_inline) <= 4096,
	       "an inline launch's parameters fit every driver's 4 KiB");
_Static_assert((int)DEVMEM_UNPACK_INT32 == (int)DM_UNPACK_INT32 &&
	       (int)DEVMEM_UNPACK_FP64 == (int)DM_UNPACK_FP64 &&
	       (int)DEVMEM_UNPACK_COPY == (int)DM_UNPACK_COPY &&
	       (int)DEVMEM_UNPACK_AVG == (int)DM_UNPACK_AVG, "devmem.h and unpack_abi.h agree");

#ifdef DEVMEM_HAVE_GPU_KERNELS
extern const char _binary_unpack_fatbin_start[];
#define KERNEL_IMAGE _binary_unpack_fatbin_start
#else
/* Built without nvcc: a real driver refuses this image (EOPNOTSUPP, below);
 * the tests' stand-in libcuda runs its kernels on the CPU. */
static const char KERNEL_IMAGE[] = "";
#endif

struct dm_slot {
	struct dm_unpack_frag *host;	/* pinned */
	CUdeviceptr dev;
	unsigned char *lin_host;	/* pinned: a launch's linear bytes */
	CUdeviceptr lin_dev;
	CUevent done;
	uint64_t launch;		/* the last one here (0: none) */
	uint64_t batch;			/* ... was part of this batch */
	bool last;			/* ... as its last launch */
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
	uint64_t launched, retired;	/* launches */
	uint64_t batches, completed;	/* batches (devmem_unpack_add calls) */
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
	struct devmem_cuda_errname n;
	CUresult res;
	void *ctx;

	devmem_cuda_where(cuda, &u->base, &ctx, &u->cu);
	u->ctx = ctx;

	if (!u->cu->module_load_data || !u->cu->launch_kernel || !u->cu->event_query ||
	    !u->cu->memcpy_htod_async) {
		u->cu = NULL;	/* nothing to release */
		return devmem_fail(-EOPNOTSUPP, "devmem_unpack: the CUDA library lacks the kernel "
				   "launch API (cuModuleLoadData, cuLaunchKernel)");
	}
	if (enter(u))
		return -EIO;
	res = u->cu->module_load_data(&u->mod, KERNEL_IMAGE);
	if (res && !KERNEL_IMAGE[0]) {
		leave(u);
		u->cu = NULL;
		return devmem_fail(-EOPNOTSUPP, "devmem_unpack: this libdevmem was built without "
				   "nvcc, so it has no GPU kernels for CUDA memory (rebuild it where "
				   "/usr/local/cuda/bin/nvcc exists)");
	}
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
			res = u->cu->mem_host_alloc((void **)&s->lin_host, DM_LINEAR, 0);
		if (!res)
			res = u->cu->mem_alloc(&s->lin_dev, DM_LINEAR);
		if (!res)
			res = u->cu->event_create(&s->done, CU_EVENT_DISABLE_TIMING);
	}
	leave(u);
	return res ? devmem_fail(-EIO, "devmem_unpack: setting up the GPU kernels: %s",
				 cu_err(u->cu, res, &n)) : 0;
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
		if (u->slot[i].lin_dev)
			u->cu->mem_free(u->slot[i].lin_dev);
		if (u->slot[i].lin_host)
			u->cu->mem_free_host(u->slot[i].lin_host);
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

/* Checks a batch: dma-buf fragments inside the dma-buf, linear ones with
 * their bytes, the whole within the destination. */
static int check_batch(struct devmem_unpack *u, const struct devmem_frag *f, unsigned int n)
{
	uint64_t pos = u->l.end;

	for (unsigned int i = 0; i < n; i++) {
		if (!f[i].dmabuf_id && !f[i].linear)
			return devmem_fail(-EINVAL, "devmem_unpack_add: fragment %u is linear "
					   "(dmabuf_id 0) but has no bytes (linear is NULL)", i);
		if (f[i].dmabuf_id &&
		    (f[i].offset > u->size || f[i].len > u->size - f[i].offset))
			return devmem_fail(-EINVAL, "devmem_unpack_add: fragment %u (%u bytes at "
					   "%llu) lies outside the %zu-byte dma-buf", i, f[i].len,
					   (unsigned long long)f[i].offset, u->size);
		pos += f[i].len;
	}
	if (pos > u->len)
		return devmem_fail(-EINVAL, "devmem_unpack_add: the batch ends at byte %llu of the "
				   "stream, past the destination's %llu", (unsigned long long)pos,
				   (unsigned long long)u->len);
	return 0;
}

/* The launches up to number @upto have run: batches whose last they were
 * are complete. */
static void retire(struct devmem_unpack *u, uint64_t upto)
{
	while (u->retired < upto) {
		struct dm_slot *s = &u->slot[u->retired++ % DM_SLOTS];

		if (s->last)
			u->completed = s->batch;
	}
}

/* One launch over the stream's bytes [u->l.end, @end): @n descriptors (in
 * @s->host on the GPU, u->frags on the CPU) reading from @base. */
static int launch(struct devmem_unpack *u, struct dm_slot *s, const unsigned char *base,
		  unsigned int n, uint64_t end, bool last)
{
	struct dm_unpack_launch l = u->l;

	l.base = base;
	l.start = u->l.end;
	l.end = end;
	l.n = n;
	if (!u->cu) {
		l.carry_in = u->carry_cpu[u->launched % 2];
		l.carry_out = u->carry_cpu[(u->launched + 1) % 2];
		dm_unpack_cpu(&l, u->frags);
		u->l.end = end;
		u->launched++;
		return 0;
	}

	struct devmem_cuda_errname en;
	CUdeviceptr frags = s->dev;
	struct dm_unpack_inline in;
	void *params[] = { &l, &frags, &in };
	unsigned int group = 32, blocks;
	CUresult res = CUDA_SUCCESS;

	/* about a 16-byte word a thread: a warp for 512 bytes, a block for
	 * 4 KiB and more */
	while (group < DM_UNPACK_THREADS && group * 16 < (end - u->l.end) / n)
		group *= 2;
	blocks = (n + DM_UNPACK_THREADS / group - 1) / (DM_UNPACK_THREADS / group);
	if (blocks > DM_MAX_BLOCKS)
		blocks = DM_MAX_BLOCKS;
	l.group = group;
	l.carry_in = (const unsigned char *)(uintptr_t)(u->carry + 8 * (u->launched % 2));
	l.carry_out = (unsigned char *)(uintptr_t)(u->carry + 8 * ((u->launched + 1) % 2));
	if (n <= DM_UNPACK_INLINE) {
		memcpy(in.f, s->host, n * sizeof(*s->host));
		frags = 0;	/* the kernel reads them from its parameters */
	} else {
		res = u->cu->memcpy_htod_async(s->dev, s->host, n * sizeof(*s->host), u->stream);
	}
	if (!res)
		res = u->cu->launch_kernel(l.op == DM_UNPACK_COPY ? u->gather : u->reduce, blocks, 1,
					   1, DM_UNPACK_THREADS, 1, 1, 0, u->stream, params, NULL);
	if (!res)
		res = u->cu->event_record(s->done, u->stream);
	if (res)
		return devmem_fail(-EIO, "devmem_unpack_add: %s", cu_err(u->cu, res, &en));
	u->l.end = end;
	s->launch = ++u->launched;
	s->batch = u->batches;
	s->last = last;
	return 0;
}

/* The slot for the next GPU launch, once the launch before in it has run. */
static int next_slot(struct devmem_unpack *u, struct dm_slot **out)
{
	struct dm_slot *s = &u->slot[u->launched % DM_SLOTS];
	struct devmem_cuda_errname en;
	CUresult res;

	if (s->launch) {
		res = u->cu->event_synchronize(s->done);
		if (res)
			return devmem_fail(-EIO, "devmem_unpack_add: %s", cu_err(u->cu, res, &en));
		retire(u, s->launch);
	}
	*out = s;
	return 0;
}

/*
 * The batch's launches: each run of dma-buf fragments is one; linear bytes
 * go, up to DM_LINEAR at a time, through the slot's scratch on the GPU,
 * and straight from where they lie on the CPU.
 */
static int add_runs(struct devmem_unpack *u, const struct devmem_frag *f, unsigned int n)
{
	struct devmem_cuda_errname en;
	unsigned int i = 0;
	uint32_t part = 0;	/* bytes of linear fragment i already taken */
	int ret = 0;

	while (i < n && !ret) {
		struct dm_slot *s = NULL;
		struct dm_unpack_frag *d;
		const unsigned char *base;
		uint64_t end = u->l.end;
		unsigned int m = 0;

		if (u->cu && (ret = next_slot(u, &s)))
			break;
		d = s ? s->host : u->frags;
		if (f[i].dmabuf_id) {
			for (; i < n && f[i].dmabuf_id; i++, m++) {
				d[m] = (struct dm_unpack_frag){ .src = f[i].offset, .pos = end,
								.len = f[i].len };
				end += f[i].len;
			}
			base = s ? (const unsigned char *)(uintptr_t)u->base : u->cpu;
		} else if (!s) {
			d[m++] = (struct dm_unpack_frag){ .src = 0, .pos = end, .len = f[i].len };
			end += f[i].len;
			base = f[i++].linear;
		} else {
			uint32_t used = 0;
			CUresult res;

			while (i < n && !f[i].dmabuf_id && used < DM_LINEAR) {
				uint32_t take = f[i].len - part;

				if (take > DM_LINEAR - used)
					take = DM_LINEAR - used;
				memcpy(s->lin_host + used, (const unsigned char *)f[i].linear + part,
				       take);
				used += take;
				part += take;
				if (part == f[i].len) {
					part = 0;
					i++;
				}
			}
			d[m++] = (struct dm_unpack_frag){ .src = 0, .pos = end, .len = used };
			end += used;
			base = (const unsigned char *)(uintptr_t)s->lin_dev;
			res = u->cu->memcpy_htod_async(s->lin_dev, s->lin_host, used, u->stream);
			if (res) {
				ret = devmem_fail(-EIO, "devmem_unpack_add: %s",
						  cu_err(u->cu, res, &en));
				break;
			}
		}
		/* even an empty one: it carries a split element over */
		ret = launch(u, s, base, m, end, i == n);
	}
	return ret;
}

DEVMEM_EXPORT int devmem_unpack_add(struct devmem_unpack *u, const struct devmem_frag *f,
				    unsigned int n)
{
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
		return (int)(u->batches & 0x7fffffff);
	ret = check_batch(u, f, n);
	if (ret)
		return ret;
	u->batches++;
	if (u->cu && enter(u))
		return -EIO;
	ret = add_runs(u, f, n);
	if (u->cu)
		leave(u);
	else
		u->completed = u->batches;
	return ret ? ret : (int)(u->batches & 0x7fffffff);
}

uint64_t dm_unpack_room(const struct devmem_unpack *u)
{
	return u->begun ? u->len - u->l.end : 0;
}

DEVMEM_EXPORT int devmem_unpack_completed(struct devmem_unpack *u, bool wait)
{
	struct devmem_cuda_errname en;
	CUresult res = CUDA_SUCCESS;

	if (!u)
		return devmem_fail(-EINVAL, "devmem_unpack_completed: u is NULL");
	if (!u->cu || u->retired == u->launched)
		return (int)(u->completed & 0x7fffffff);
	if (enter(u))
		return -EIO;
	/* launches finish in order: the oldest slots first */
	while (u->retired < u->launched) {
		struct dm_slot *s = &u->slot[u->retired % DM_SLOTS];

		res = wait ? u->cu->event_synchronize(s->done) : u->cu->event_query(s->done);
		if (res)
			break;
		retire(u, u->retired + 1);
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
