// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The stand-in libcuda of every test on a host without a GPU (t_mem,
 * libdevcoll's t_cuda; loaded through DEVMEM_LIBCUDA): one device whose
 * memory is host memory mapped PROT_NONE, so code touching it other than
 * through the copies below crashes the test. It checks what the driver
 * checks and the libraries must get right: a current context (per thread)
 * for allocations, copies and exports, copies inside an allocation,
 * page-aligned export ranges. cuMemAlloc returns addresses 256 bytes past a
 * page boundary, as the driver may; the dma-buf export is a memfd.
 * FAKE_CUDA_NO_DMABUF=1 makes the device unable to export dma-bufs.
 *
 * It also runs devmem_unpack's two kernels, gpu/unpack.cu itself built for
 * the CPU (kernel_host.cc), in stream order on a worker thread: the
 * asynchronous copies, launches and events that libdevmem's GPU path uses,
 * so that path runs where there is no GPU. FAKE_CUDA_KERNEL_US delays
 * each launch that long (a slow GPU: fragments handed back before their
 * batch ran would be overwritten by the NIC first). With
 * FAKE_CUDA_UDMABUF=1 a dma-buf export is a real udmabuf over the
 * allocation's memory, which a NIC can be bound to: the VM tests receive
 * devmem TCP into this "GPU memory".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/udmabuf.h>

#include "unpack_abi.h"

void fake_cuda_run_kernel(int reduce, unsigned int blocks, unsigned int threads,
			  const struct dm_unpack_launch *l, const struct dm_unpack_frag *f);

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;

#define OK		0
#define INVALID_VALUE	1
#define OUT_OF_MEMORY	2
#define NOT_INIT	3
#define INVALID_DEVICE	101
#define INVALID_CONTEXT	201
#define OS_ERROR	304
#define INVALID_IMAGE	200
#define NOT_FOUND	500
#define NOT_READY	600

#define MAX_ALLOCS	256
#define OFFSET		256

/* Device memory: a memfd mapped twice, PROT_NONE where the caller sees it
 * and read-write for the copies and kernels here. */
static struct { char *map, *rw; size_t len; int fd; } allocs[MAX_ALLOCS];
static int inited, retained, live_allocs, exports, pushed, host_allocs;
static char the_ctx;
static __thread CUcontext current, stack[8];
static __thread int depth;

/* For the tests: what is still held. */
int fake_cuda_retained(void) { return retained; }
int fake_cuda_live_allocs(void) { return live_allocs; }
int fake_cuda_exports(void) { return exports; }
int fake_cuda_pushed(void) { return pushed; }
int fake_cuda_host_allocs(void) { return host_allocs; }

static int in_ctx(void)
{
	return current == (CUcontext)&the_ctx;
}

/* The allocation holding [p, p + len), or -1. */
static int find(CUdeviceptr p, size_t len)
{
	for (int i = 0; i < MAX_ALLOCS; i++)
		if (allocs[i].map && (char *)p >= allocs[i].map &&
		    (char *)p + len <= allocs[i].map + allocs[i].len)
			return i;
	return -1;
}

CUresult cuInit(unsigned int flags) { inited = !flags; return flags ? INVALID_VALUE : OK; }

CUresult cuDeviceGetCount(int *count)
{
	if (!inited)
		return NOT_INIT;
	*count = 1;
	return OK;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	*dev = 0;
	return ordinal ? INVALID_DEVICE : OK;
}

CUresult cuDeviceGetAttribute(int *v, int attrib, CUdevice dev)
{
	const char *no = getenv("FAKE_CUDA_NO_DMABUF");

	if (dev != 0 || attrib != 124)
		return INVALID_VALUE;
	*v = !(no && *no == '1');
	return OK;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (dev != 0)
		return INVALID_DEVICE;
	retained++;
	*ctx = (CUcontext)&the_ctx;
	return OK;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (dev != 0 || !retained)
		return INVALID_VALUE;
	retained--;
	return OK;
}

CUresult cuCtxGetCurrent(CUcontext *ctx) { *ctx = current; return OK; }
CUresult cuCtxSetCurrent(CUcontext ctx) { current = ctx; return OK; }

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	if (depth == 8)
		return INVALID_VALUE;
	stack[depth++] = current;
	current = ctx;
	pushed++;
	return OK;
}

CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
	if (!depth)
		return INVALID_CONTEXT;
	*ctx = current;
	current = stack[--depth];
	pushed--;
	return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	size_t page = sysconf(_SC_PAGESIZE), len = (OFFSET + size + page - 1) / page * page;

	if (!in_ctx())
		return INVALID_CONTEXT;
	for (int i = 0; i < MAX_ALLOCS; i++) {
		int fd;

		if (allocs[i].map)
			continue;
		/* sealed against shrinking, as udmabuf wants */
		fd = memfd_create("fake-cuda-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd < 0 || ftruncate(fd, (off_t)len) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)) {
			if (fd >= 0)
				close(fd);
			return OUT_OF_MEMORY;
		}
		allocs[i].map = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);
		allocs[i].rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (allocs[i].map == MAP_FAILED || allocs[i].rw == MAP_FAILED) {
			if (allocs[i].map != MAP_FAILED)
				munmap(allocs[i].map, len);
			if (allocs[i].rw != MAP_FAILED)
				munmap(allocs[i].rw, len);
			allocs[i].map = NULL;
			close(fd);
			return OUT_OF_MEMORY;
		}
		allocs[i].len = len;
		allocs[i].fd = fd;
		live_allocs++;
		*p = (CUdeviceptr)allocs[i].map + OFFSET;
		return OK;
	}
	return OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	int i = find(p, 0);

	if (!in_ctx())
		return INVALID_CONTEXT;
	if (i < 0 || (char *)p != allocs[i].map + OFFSET)
		return INVALID_VALUE;
	munmap(allocs[i].map, allocs[i].len);
	munmap(allocs[i].rw, allocs[i].len);
	close(allocs[i].fd);
	allocs[i].map = NULL;
	live_allocs--;
	return OK;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t size, int type,
				       unsigned long long flags)
{
	size_t page = sysconf(_SC_PAGESIZE);
	int fd;

	if (!in_ctx())
		return INVALID_CONTEXT;
	int i = find(p, size);
	const char *udma = getenv("FAKE_CUDA_UDMABUF");

	if (type != 1 || flags || (p % page) || (size % page) || i < 0)
		return INVALID_VALUE;
	if (udma && *udma == '1') {
		struct udmabuf_create c = { .memfd = (uint32_t)allocs[i].fd, .flags = UDMABUF_FLAGS_CLOEXEC,
					    .offset = (uint64_t)((char *)p - allocs[i].map), .size = size };
		int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);

		fd = dev < 0 ? -1 : ioctl(dev, UDMABUF_CREATE, &c);
		if (dev >= 0)
			close(dev);
		if (fd < 0)
			return OS_ERROR;
	} else {
		fd = memfd_create("fake-cuda-dmabuf", 0);
		if (fd < 0 || ftruncate(fd, size))
			return OS_ERROR;
	}
	exports++;
	memcpy(handle, &fd, sizeof(fd));
	return OK;
}

/* Where the fake reads and writes device address @dev (@len bytes of one
 * allocation), or NULL. */
static char *rw_of(CUdeviceptr dev, size_t len)
{
	int i = find(dev, len);

	return i < 0 ? NULL : allocs[i].rw + ((char *)dev - allocs[i].map);
}

/* Copies through the read-write mapping: a copy past the allocation fails. */
static CUresult dev_copy(void *dst, const void *src, CUdeviceptr dev, size_t len, int to_dev)
{
	char *rw = rw_of(dev, len);

	if (!in_ctx())
		return INVALID_CONTEXT;
	if (!rw)
		return INVALID_VALUE;
	if (to_dev)
		memcpy(rw, src, len);
	else
		memcpy(dst, rw, len);
	return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len)
{
	return dev_copy(dst, NULL, src, len, 0);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t len)
{
	return dev_copy(NULL, src, dst, len, 1);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t len)
{
	char *bounce = malloc(len ? len : 1);
	CUresult res = bounce ? cuMemcpyDtoH_v2(bounce, src, len) : OUT_OF_MEMORY;

	if (!res)
		res = cuMemcpyHtoD_v2(dst, bounce, len);
	free(bounce);
	return res;
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	if (find(p, 1) < 0)
		return INVALID_VALUE;	/* not CUDA's */
	switch (attr) {
	case 1: *(CUcontext *)data = (CUcontext)&the_ctx; return OK;	/* CONTEXT */
	case 2: *(unsigned int *)data = 2; return OK;		/* MEMORY_TYPE: DEVICE */
	case 8: *(unsigned int *)data = 0; return OK;		/* IS_MANAGED */
	}
	return INVALID_VALUE;
}

/* Pinned memory: plain memory here, counted. */
CUresult cuMemHostAlloc(void **p, size_t len, unsigned int flags)
{
	(void)flags;
	if (!in_ctx())
		return INVALID_CONTEXT;
	*p = malloc(len);
	host_allocs += *p != NULL;
	return *p ? OK : OUT_OF_MEMORY;
}

CUresult cuMemFreeHost(void *p)
{
	free(p);
	host_allocs--;
	return OK;
}

/* Names two errors only: the libraries name the rest themselves. */
CUresult cuGetErrorName(CUresult err, const char **name)
{
	switch (err) {
	case INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
	}
	return INVALID_VALUE;
}

/* ------------------------------------------------------------------------
 * Streams, events and devmem_unpack's kernels. Every stream's work goes
 * through one queue, run in order by one worker thread: asynchronous as on
 * a GPU (a launch returns before it has run), in order as a stream is.
 */
enum { OP_COPY, OP_LAUNCH, OP_EVENT };

struct fake_op {
	int kind;
	struct fake_op *next;
	uint64_t seq;
	/* OP_COPY */
	CUdeviceptr dst;
	const void *src;
	size_t len;
	/* OP_LAUNCH */
	int reduce;
	unsigned int blocks, threads;
	struct dm_unpack_launch l;
	CUdeviceptr frags;
	struct dm_unpack_frag *inline_frags;	/* or in the parameters */
};

struct fake_event {
	uint64_t seq;	/* done once the queue has run this far */
};

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_more = PTHREAD_COND_INITIALIZER, q_done = PTHREAD_COND_INITIALIZER;
static struct fake_op *q_head, *q_tail;
static uint64_t q_queued, q_ran;
static int q_started, q_errors;
static char the_module, fn_gather, fn_reduce, a_stream;

/* For the tests: launches that read or wrote outside device memory. */
int fake_cuda_kernel_errors(void) { return q_errors; }

static void run_launch(struct fake_op *o)
{
	struct dm_unpack_launch l = o->l;
	size_t nf = l.n * sizeof(struct dm_unpack_frag);
	const struct dm_unpack_frag *f = o->inline_frags ? o->inline_frags :
					 (const void *)rw_of(o->frags, nf);
	const char *us = getenv("FAKE_CUDA_KERNEL_US");
	uint64_t lo = UINT64_MAX, hi = 0;

	if (us && atoi(us) > 0)
		usleep((useconds_t)atoi(us));
	for (uint32_t i = 0; f && i < l.n; i++) {
		if (f[i].src < lo)
			lo = f[i].src;
		if (f[i].src + f[i].len > hi)
			hi = f[i].src + f[i].len;
	}
	/* the base as the fake sees it: the fragments' extent must lie in it */
	l.base = (const unsigned char *)rw_of((CUdeviceptr)l.base + (lo == UINT64_MAX ? 0 : lo),
					      hi > lo ? hi - lo : 0);
	if (l.base)
		l.base -= lo == UINT64_MAX ? 0 : lo;
	l.dst = (unsigned char *)rw_of((CUdeviceptr)l.dst + l.start, l.end - l.start);
	if (l.dst)
		l.dst -= l.start;
	l.carry_in = (const unsigned char *)rw_of((CUdeviceptr)l.carry_in, 8);
	l.carry_out = (unsigned char *)rw_of((CUdeviceptr)l.carry_out, 8);
	if (!f || !l.base || !l.dst || !l.carry_in || !l.carry_out) {
		q_errors++;
		return;
	}
	fake_cuda_run_kernel(o->reduce, o->blocks, o->threads, &l, f);
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&q_lock);
	for (;;) {
		struct fake_op *o;

		while (!q_head)
			pthread_cond_wait(&q_more, &q_lock);
		o = q_head;
		q_head = o->next;
		if (!q_head)
			q_tail = NULL;
		pthread_mutex_unlock(&q_lock);
		if (o->kind == OP_COPY) {
			char *rw = rw_of(o->dst, o->len);

			if (rw)
				memcpy(rw, o->src, o->len);
			else
				q_errors++;
		} else if (o->kind == OP_LAUNCH) {
			run_launch(o);
			free(o->inline_frags);
		}
		pthread_mutex_lock(&q_lock);
		q_ran = o->seq;
		free(o);
		pthread_cond_broadcast(&q_done);
	}
	return NULL;
}

/* Queues @o; its number in *@seq. */
static CUresult enqueue(struct fake_op *o, uint64_t *seq)
{
	pthread_t t;

	if (!o)
		return OUT_OF_MEMORY;
	pthread_mutex_lock(&q_lock);
	if (!q_started) {
		if (pthread_create(&t, NULL, worker, NULL)) {
			pthread_mutex_unlock(&q_lock);
			free(o);
			return OUT_OF_MEMORY;
		}
		pthread_detach(t);
		q_started = 1;
	}
	o->seq = ++q_queued;
	if (seq)
		*seq = o->seq;
	if (q_tail)
		q_tail->next = o;
	else
		q_head = o;
	q_tail = o;
	pthread_cond_signal(&q_more);
	pthread_mutex_unlock(&q_lock);
	return OK;
}

static void wait_for(uint64_t seq)
{
	pthread_mutex_lock(&q_lock);
	while (q_ran < seq)
		pthread_cond_wait(&q_done, &q_lock);
	pthread_mutex_unlock(&q_lock);
}

CUresult cuModuleLoadData(void **mod, const void *image)
{
	(void)image;
	if (!in_ctx())
		return INVALID_CONTEXT;
	*mod = &the_module;
	return OK;
}

CUresult cuModuleUnload(void *mod)
{
	return mod == &the_module ? OK : INVALID_VALUE;
}

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name)
{
	if (mod != &the_module)
		return INVALID_VALUE;
	if (!strcmp(name, "devmem_unpack_gather"))
		*fn = &fn_gather;
	else if (!strcmp(name, "devmem_unpack_reduce"))
		*fn = &fn_reduce;
	else
		return NOT_FOUND;
	return OK;
}

CUresult cuLaunchKernel(void *fn, unsigned int gx, unsigned int gy, unsigned int gz,
			unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
			void *stream, void **params, void **extra)
{
	struct fake_op *o;

	(void)shared; (void)stream;
	if (!in_ctx())
		return INVALID_CONTEXT;
	/* the kernels use x alone */
	if ((fn != &fn_gather && fn != &fn_reduce) || !params || extra || !gx || !bx ||
	    gy != 1 || gz != 1 || by != 1 || bz != 1 || bx > 1024)
		return INVALID_VALUE;
	o = calloc(1, sizeof(*o));
	if (!o)
		return OUT_OF_MEMORY;
	o->kind = OP_LAUNCH;
	o->reduce = fn == &fn_reduce;
	o->blocks = gx;
	o->threads = bx;
	memcpy(&o->l, params[0], sizeof(o->l));
	memcpy(&o->frags, params[1], sizeof(o->frags));
	/* no device address: the fragments are in the parameters, copied at
	 * the launch as a driver does */
	if (!o->frags) {
		if (o->l.n > DM_UNPACK_INLINE) {
			free(o);
			return INVALID_VALUE;
		}
		o->inline_frags = malloc(sizeof(struct dm_unpack_inline));
		if (!o->inline_frags) {
			free(o);
			return OUT_OF_MEMORY;
		}
		memcpy(o->inline_frags, params[2], sizeof(struct dm_unpack_inline));
	}
	return enqueue(o, NULL);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t len, void *stream)
{
	struct fake_op *o;

	(void)stream;
	if (!in_ctx())
		return INVALID_CONTEXT;
	if (find(dst, len) < 0)
		return INVALID_VALUE;
	o = calloc(1, sizeof(*o));
	if (o) {
		o->kind = OP_COPY;
		o->dst = dst;
		o->src = src;
		o->len = len;
	}
	return enqueue(o, NULL);
}

CUresult cuStreamCreate(void **stream, unsigned int flags)
{
	(void)flags;
	*stream = &a_stream;
	return in_ctx() ? OK : INVALID_CONTEXT;
}

CUresult cuStreamDestroy_v2(void *stream)
{
	return stream == &a_stream ? OK : INVALID_VALUE;
}

CUresult cuStreamSynchronize(void *stream)
{
	(void)stream;
	pthread_mutex_lock(&q_lock);
	uint64_t last = q_queued;

	pthread_mutex_unlock(&q_lock);
	wait_for(last);
	return OK;
}

CUresult cuEventCreate(struct fake_event **ev, unsigned int flags)
{
	(void)flags;
	*ev = calloc(1, sizeof(**ev));
	return *ev ? OK : OUT_OF_MEMORY;
}

CUresult cuEventDestroy_v2(struct fake_event *ev)
{
	free(ev);
	return OK;
}

CUresult cuEventRecord(struct fake_event *ev, void *stream)
{
	struct fake_op *o = calloc(1, sizeof(*o));

	(void)stream;
	if (o)
		o->kind = OP_EVENT;
	return enqueue(o, &ev->seq);
}

CUresult cuEventQuery(struct fake_event *ev)
{
	bool done;

	pthread_mutex_lock(&q_lock);
	done = q_ran >= ev->seq;
	pthread_mutex_unlock(&q_lock);
	return done ? OK : NOT_READY;
}

CUresult cuEventSynchronize(struct fake_event *ev)
{
	wait_for(ev->seq);
	return OK;
}
