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
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

#define MAX_ALLOCS	64
#define OFFSET		256

static struct { char *map; size_t len; } allocs[MAX_ALLOCS];
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
		if (allocs[i].map)
			continue;
		allocs[i].map = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (allocs[i].map == MAP_FAILED) {
			allocs[i].map = NULL;
			return OUT_OF_MEMORY;
		}
		allocs[i].len = len;
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
	if (type != 1 || flags || (p % page) || (size % page) || find(p, size) < 0)
		return INVALID_VALUE;
	fd = memfd_create("fake-cuda-dmabuf", 0);
	if (fd < 0 || ftruncate(fd, size))
		return OS_ERROR;
	exports++;
	memcpy(handle, &fd, sizeof(fd));
	return OK;
}

/* Copies through a moment's mapping: a copy past the allocation fails. */
static CUresult dev_copy(void *dst, const void *src, CUdeviceptr dev, size_t len, int prot)
{
	int i = find(dev, len);

	if (!in_ctx())
		return INVALID_CONTEXT;
	if (i < 0)
		return INVALID_VALUE;
	mprotect(allocs[i].map, allocs[i].len, prot);
	memcpy(dst, src, len);
	mprotect(allocs[i].map, allocs[i].len, PROT_NONE);
	return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len)
{
	return dev_copy(dst, (const void *)src, src, len, PROT_READ);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t len)
{
	return dev_copy((void *)dst, src, dst, len, PROT_WRITE);
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
