// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA device memory for devcoll-perf --gpu and t_cuda, through the driver
 * API loaded at run time: neither builds against CUDA nor needs it.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include "gpu.h"

typedef unsigned long long CUdeviceptr;

static struct {
	int (*init)(unsigned int flags);
	int (*device_get)(int *dev, int ordinal);
	int (*retain)(void **ctx, int dev);
	int (*set_current)(void *ctx);
	int (*alloc)(CUdeviceptr *p, size_t len);
	int (*free)(CUdeviceptr p);
	int (*htod)(CUdeviceptr dst, const void *src, size_t len);
	int (*dtoh)(void *dst, CUdeviceptr src, size_t len);
	int (*dtod)(CUdeviceptr dst, CUdeviceptr src, size_t len);
} cu;

int gpu_open(const char *path)
{
	const struct { const char *name; void **fn; } syms[] = {
		{ "cuInit", (void **)&cu.init },
		{ "cuDeviceGet", (void **)&cu.device_get },
		{ "cuDevicePrimaryCtxRetain", (void **)&cu.retain },
		{ "cuCtxSetCurrent", (void **)&cu.set_current },
		{ "cuMemAlloc_v2", (void **)&cu.alloc },
		{ "cuMemFree_v2", (void **)&cu.free },
		{ "cuMemcpyHtoD_v2", (void **)&cu.htod },
		{ "cuMemcpyDtoH_v2", (void **)&cu.dtoh },
		{ "cuMemcpyDtoD_v2", (void **)&cu.dtod },
	};
	void *lib = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NODELETE);
	void *ctx;
	int dev, res;

	if (!lib) {
		fprintf(stderr, "CUDA: %s (no NVIDIA driver?)\n", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!(*syms[i].fn = dlsym(lib, syms[i].name))) {
			fprintf(stderr, "CUDA: libcuda has no %s\n", syms[i].name);
			return -1;
		}
	res = cu.init(0);
	if (!res)
		res = cu.device_get(&dev, 0);
	if (!res)
		res = cu.retain(&ctx, dev);
	if (!res)
		res = cu.set_current(ctx);
	if (res) {
		fprintf(stderr, "CUDA: no context on CUDA device 0 (error %d)\n", res);
		return -1;
	}
	return 0;
}

void *gpu_alloc(size_t len)
{
	CUdeviceptr p;
	int res = cu.alloc(&p, len);

	if (res) {
		fprintf(stderr, "CUDA: cuMemAlloc of %zu bytes: error %d\n", len, res);
		return NULL;
	}
	return (void *)(uintptr_t)p;
}

void gpu_free(void *p)
{
	if (p)
		cu.free((CUdeviceptr)(uintptr_t)p);
}

int gpu_copy(void *dst, const void *src, size_t len, enum gpu_dir dir)
{
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, s = (CUdeviceptr)(uintptr_t)src;
	int res = dir == GPU_TO_DEVICE ? cu.htod(d, src, len) :
		  dir == GPU_TO_HOST ? cu.dtoh(dst, s, len) : cu.dtod(d, s, len);

	if (res)
		fprintf(stderr, "CUDA: copying %zu bytes: CUDA error %d\n", len, res);
	return res ? -1 : 0;
}
