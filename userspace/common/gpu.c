// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA device memory for devcoll-perf --gpu and libdevcoll's tests, through
 * libdevmem's CUDA loader (devmem_cuda_load(3)): none builds against CUDA
 * nor needs it.
 */
#include <stdint.h>
#include <stdio.h>
#include "devmem_cuda.h"
#include "devmem.h"
#include "gpu.h"

static const struct devmem_cuda_api *cu;

int gpu_open(void)
{
	struct devmem_cuda_errname n;
	CUcontext ctx;
	CUdevice dev;
	CUresult res;

	if (devmem_cuda_load(false, &cu) < 0) {
		fprintf(stderr, "CUDA: %s\n", devmem_last_error());
		return -1;
	}
	res = cu->init(0);
	if (!res)
		res = cu->device_get(&dev, 0);
	if (!res)
		res = cu->primary_ctx_retain(&ctx, dev);
	if (!res)
		res = cu->ctx_set_current(ctx);
	if (res) {
		fprintf(stderr, "CUDA: no context on CUDA device 0: %s\n",
			devmem_cuda_strerror(cu, res, &n));
		return -1;
	}
	return 0;
}

void *gpu_alloc(size_t len)
{
	struct devmem_cuda_errname n;
	CUdeviceptr p;
	CUresult res = cu->mem_alloc(&p, len);

	if (res) {
		fprintf(stderr, "CUDA: cuMemAlloc of %zu bytes: %s\n", len,
			devmem_cuda_strerror(cu, res, &n));
		return NULL;
	}
	return (void *)(uintptr_t)p;
}

void gpu_free(void *p)
{
	if (p)
		cu->mem_free((CUdeviceptr)(uintptr_t)p);
}

int gpu_copy(void *dst, const void *src, size_t len, enum gpu_dir dir)
{
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, s = (CUdeviceptr)(uintptr_t)src;
	struct devmem_cuda_errname n;
	CUresult res = dir == GPU_TO_DEVICE ? cu->memcpy_htod(d, src, len) :
		       dir == GPU_TO_HOST ? cu->memcpy_dtoh(dst, s, len) :
		       cu->memcpy_dtod(d, s, len);

	if (res)
		fprintf(stderr, "CUDA: copying %zu bytes: %s\n", len,
			devmem_cuda_strerror(cu, res, &n));
	return res ? -1 : 0;
}
