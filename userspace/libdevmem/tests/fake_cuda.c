// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A fake libcuda for t_mem (loaded through DEVMEM_LIBCUDA): one device whose
 * "device memory" is host memory, and whose dma-buf export is a memfd. It
 * checks what the real driver checks and the library must get right: a
 * current context for allocations and copies, page-aligned export ranges.
 * cuMemAlloc deliberately returns addresses 256 bytes past a page boundary.
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
#define NOT_INIT	3
#define INVALID_DEVICE	101
#define INVALID_CONTEXT	201

static int inited, retained, live_allocs, exports;
static char the_ctx;
static __thread CUcontext current;

/* For the test: what is still held. */
int fake_cuda_retained(void) { return retained; }
int fake_cuda_live_allocs(void) { return live_allocs; }
int fake_cuda_exports(void) { return exports; }

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
	if (ordinal != 0)
		return INVALID_DEVICE;
	*dev = 0;
	return OK;
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

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	char *m;

	if (current != (CUcontext)&the_ctx)
		return INVALID_CONTEXT;
	/* A header before the block remembers the allocation. */
	m = aligned_alloc(page, page + (256 + size + page - 1) / page * page);
	if (!m)
		return 2;
	memcpy(m + page - sizeof(m), &m, sizeof(m));
	live_allocs++;
	*p = (CUdeviceptr)(m + page) + 256;
	return OK;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	char *m;

	if (current != (CUcontext)&the_ctx)
		return INVALID_CONTEXT;
	memcpy(&m, (char *)(p - 256) - sizeof(m), sizeof(m));
	free(m);
	live_allocs--;
	return OK;
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t size, int type,
				       unsigned long long flags)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd;

	if (current != (CUcontext)&the_ctx)
		return INVALID_CONTEXT;
	if (type != 1 || flags || (p % page) || (size % page))
		return INVALID_VALUE;
	fd = memfd_create("fake-cuda-dmabuf", 0);
	if (fd < 0 || ftruncate(fd, size))
		return 304;
	exports++;
	memcpy(handle, &fd, sizeof(fd));
	return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len)
{
	if (current != (CUcontext)&the_ctx)
		return INVALID_CONTEXT;
	memcpy(dst, (void *)src, len);
	return OK;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t len)
{
	if (current != (CUcontext)&the_ctx)
		return INVALID_CONTEXT;
	memcpy((void *)dst, src, len);
	return OK;
}

CUresult cuGetErrorName(CUresult err, const char **name)
{
	switch (err) {
	case INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
	}
	return INVALID_VALUE;
}
