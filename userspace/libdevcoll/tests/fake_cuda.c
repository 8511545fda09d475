// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A stand-in for libcuda in t_cuda where there is no GPU: "device memory"
 * is host memory mapped PROT_NONE, so the library touching it other than
 * through the copies below crashes the test. The entry points are the ones
 * libdevcoll and the test use, with the driver API's types and values.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;

#define MAX_ALLOCS 64
static struct { char *p; size_t len; } allocs[MAX_ALLOCS];
static int ctx_object, pushed;
static CUcontext current;

static int find(CUdeviceptr p, size_t len)
{
	for (int i = 0; i < MAX_ALLOCS; i++)
		if (allocs[i].p && (char *)p >= allocs[i].p &&
		    (char *)p + len <= allocs[i].p + allocs[i].len)
			return i;
	return -1;
}

CUresult cuInit(unsigned int flags) { return flags ? 1 : 0; }
CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return ordinal ? 101 : 0; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int dev)
{
	(void)dev;
	*ctx = (CUcontext)&ctx_object;
	return 0;
}
CUresult cuCtxSetCurrent(CUcontext ctx) { current = ctx; return 0; }
CUresult cuCtxPushCurrent_v2(CUcontext ctx) { pushed++; current = ctx; return 0; }
CUresult cuCtxPopCurrent_v2(CUcontext *ctx) { pushed--; *ctx = current; return 0; }
int fake_cuda_pushed(void) { return pushed; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t len)
{
	for (int i = 0; i < MAX_ALLOCS; i++) {
		if (allocs[i].p)
			continue;
		allocs[i].p = mmap(NULL, len ? len : 1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
		if (allocs[i].p == MAP_FAILED) {
			allocs[i].p = NULL;
			return 2;	/* CUDA_ERROR_OUT_OF_MEMORY */
		}
		allocs[i].len = len ? len : 1;
		*p = (CUdeviceptr)allocs[i].p;
		return 0;
	}
	return 2;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	int i = find(p, 0);

	if (i < 0 || (char *)p != allocs[i].p)
		return 1;	/* CUDA_ERROR_INVALID_VALUE */
	munmap(allocs[i].p, allocs[i].len);
	allocs[i].p = NULL;
	return 0;
}

/* Copies through a moment's mapping: a copy past the allocation fails. */
static CUresult dev_copy(void *dst, const void *src, CUdeviceptr dev, size_t len, int prot)
{
	int i = find(dev, len);

	if (!current)
		return 201;	/* CUDA_ERROR_INVALID_CONTEXT */
	if (i < 0)
		return 1;
	mprotect(allocs[i].p, allocs[i].len, prot);
	memcpy(dst, src, len);
	mprotect(allocs[i].p, allocs[i].len, PROT_NONE);
	return 0;
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
	CUresult res = bounce ? cuMemcpyDtoH_v2(bounce, src, len) : 2;

	if (!res)
		res = cuMemcpyHtoD_v2(dst, bounce, len);
	free(bounce);
	return res;
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	if (find(p, 1) < 0)
		return 1;	/* not CUDA's: CUDA_ERROR_INVALID_VALUE */
	switch (attr) {
	case 1: *(CUcontext *)data = (CUcontext)&ctx_object; return 0;	/* CONTEXT */
	case 2: *(unsigned int *)data = 2; return 0;	/* MEMORY_TYPE: DEVICE */
	case 8: *(unsigned int *)data = 0; return 0;	/* IS_MANAGED */
	}
	return 1;
}

CUresult cuGetErrorName(CUresult err, const char **name)
{
	*name = err == 1 ? "CUDA_ERROR_INVALID_VALUE" : err == 201 ? "CUDA_ERROR_INVALID_CONTEXT" :
		"CUDA_ERROR_UNKNOWN";
	return 0;
}

static int host_allocs;
int fake_cuda_host_allocs(void) { return host_allocs; }

/* Pinned memory: plain memory here, counted. */
CUresult cuMemHostAlloc(void **p, size_t len, unsigned int flags)
{
	(void)flags;
	if (!current)
		return 201;
	*p = malloc(len);
	host_allocs += *p != NULL;
	return *p ? 0 : 2;
}

CUresult cuMemFreeHost(void *p)
{
	free(p);
	host_allocs--;
	return 0;
}
