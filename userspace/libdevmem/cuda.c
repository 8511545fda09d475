// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA device memory exported as a dma-buf, through the CUDA driver API
 * loaded at run time: the library neither builds against CUDA nor needs it
 * to run. DEVMEM_LIBCUDA names another library to load (tests use it).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The driver API types and values used here, as in CUDA 13's cuda.h. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;

#define CUDA_SUCCESS				0
#define CUDA_ERROR_NO_DEVICE			100
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED	124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD	1

/* Entry points, resolved by name; the _v2 names are what cuda.h maps the
 * plain names to (64-bit sizes and pointers). */
struct cuda_api {
	CUresult (*init)(unsigned int flags);
	CUresult (*device_get_count)(int *count);
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*device_get_attribute)(int *value, int attrib, CUdevice dev);
	CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*primary_ctx_release)(CUdevice dev);
	CUresult (*ctx_get_current)(CUcontext *ctx);
	CUresult (*ctx_set_current)(CUcontext ctx);
	CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t size);
	CUresult (*mem_free)(CUdeviceptr dptr);
	CUresult (*get_handle)(void *handle, CUdeviceptr dptr, size_t size, int type,
			       unsigned long long flags);
	CUresult (*memcpy_dtoh)(void *dst, CUdeviceptr src, size_t len);
	CUresult (*memcpy_htod)(CUdeviceptr dst, const void *src, size_t len);
	CUresult (*get_error_name)(CUresult err, const char **name);
};

static const struct {
	const char *name;
	size_t off;
} cuda_syms[] = {
	{ "cuInit", offsetof(struct cuda_api, init) },
	{ "cuDeviceGetCount", offsetof(struct cuda_api, device_get_count) },
	{ "cuDeviceGet", offsetof(struct cuda_api, device_get) },
	{ "cuDeviceGetAttribute", offsetof(struct cuda_api, device_get_attribute) },
	{ "cuDevicePrimaryCtxRetain", offsetof(struct cuda_api, primary_ctx_retain) },
	{ "cuDevicePrimaryCtxRelease_v2", offsetof(struct cuda_api, primary_ctx_release) },
	{ "cuCtxGetCurrent", offsetof(struct cuda_api, ctx_get_current) },
	{ "cuCtxSetCurrent", offsetof(struct cuda_api, ctx_set_current) },
	{ "cuMemAlloc_v2", offsetof(struct cuda_api, mem_alloc) },
	{ "cuMemFree_v2", offsetof(struct cuda_api, mem_free) },
	{ "cuMemGetHandleForAddressRange", offsetof(struct cuda_api, get_handle) },
	{ "cuMemcpyDtoH_v2", offsetof(struct cuda_api, memcpy_dtoh) },
	{ "cuMemcpyHtoD_v2", offsetof(struct cuda_api, memcpy_htod) },
	{ "cuGetErrorName", offsetof(struct cuda_api, get_error_name) },
};

struct devmem_cuda {
	void *lib;		/* each allocation holds its own dlopen reference */
	struct cuda_api api;
	int device;
	CUdevice dev;
	CUcontext ctx;		/* the device's primary context, retained */
	CUdeviceptr alloc;	/* what cuMemAlloc returned */
	CUdeviceptr base;	/* page-aligned start of the exported range */
	size_t size;
};

struct cu_name {
	char buf[40];
};

/* Names of the errors this file meets most, for libraries that cannot name
 * them (the toolkit's stub library fails cuGetErrorName too). */
static const struct {
	CUresult res;
	const char *name;
} cu_errors[] = {
	{ 1, "CUDA_ERROR_INVALID_VALUE" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED" },
	{ 34, "CUDA_ERROR_STUB_LIBRARY" },
	{ 35, "CUDA_ERROR_INSUFFICIENT_DRIVER" },
	{ 100, "CUDA_ERROR_NO_DEVICE" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT" },
	{ 304, "CUDA_ERROR_OPERATING_SYSTEM" },
	{ 801, "CUDA_ERROR_NOT_SUPPORTED" },
	{ 803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" },
	{ 999, "CUDA_ERROR_UNKNOWN" },
};

/* "CUDA_ERROR_..." for @res, or its number when nobody can name it. */
static const char *cu_err(const struct cuda_api *api, CUresult res, struct cu_name *n)
{
	const char *name = NULL;
	size_t i;

	if (api->get_error_name && api->get_error_name(res, &name) == CUDA_SUCCESS && name)
		return name;
	for (i = 0; i < sizeof(cu_errors) / sizeof(cu_errors[0]); i++)
		if (cu_errors[i].res == res)
			return cu_errors[i].name;
	snprintf(n->buf, sizeof(n->buf), "CUDA error %d", res);
	return n->buf;
}

/* Makes the allocation's context current; the caller's goes back in @prev. */
static int ctx_enter(struct devmem_cuda *c, CUcontext *prev, const char *what)
{
	struct cu_name n;
	CUresult res;

	res = c->api.ctx_get_current(prev);
	if (res == CUDA_SUCCESS)
		res = c->api.ctx_set_current(c->ctx);
	if (res != CUDA_SUCCESS)
		return devmem_fail(-EIO, "CUDA memory on device %d: %s: cannot make its context current: %s",
				   c->device, what, cu_err(&c->api, res, &n));
	return 0;
}

static void ctx_leave(struct devmem_cuda *c, CUcontext prev)
{
	c->api.ctx_set_current(prev);
}

static int load(struct devmem_cuda *c)
{
	const char *path = getenv("DEVMEM_LIBCUDA");
	const char *err;
	size_t i;

	if (!path || !*path)
		path = "libcuda.so.1";
	/* NODELETE: libcuda keeps threads and state that must not be unmapped. */
	c->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!c->lib) {
		err = dlerror();
		if (err && strstr(err, "No such file"))
			return devmem_fail(-ENODEV, "CUDA memory: %s not found (no NVIDIA driver on this host)",
					   path);
		return devmem_fail(-ENODEV, "CUDA memory: cannot load %s (is the NVIDIA driver installed?): %s",
				   path, err ? err : "unknown error");
	}
	for (i = 0; i < sizeof(cuda_syms) / sizeof(cuda_syms[0]); i++) {
		void *sym = dlsym(c->lib, cuda_syms[i].name);

		if (!sym)
			return devmem_fail(-ENODEV, "CUDA memory: %s has no %s (the NVIDIA driver is too old: dma-buf export needs CUDA 11.7 or later)",
					   path, cuda_syms[i].name);
		memcpy((char *)&c->api + cuda_syms[i].off, &sym, sizeof(sym));
	}
	return 0;
}

static void cuda_release(struct devmem_cuda *c)
{
	CUcontext prev;

	if (c->alloc && ctx_enter(c, &prev, "freeing") == 0) {
		c->api.mem_free(c->alloc);
		ctx_leave(c, prev);
	}
	if (c->ctx)
		c->api.primary_ctx_release(c->dev);
	if (c->lib)
		dlclose(c->lib);
	free(c);
}

/* Allocates @size bytes starting at a host-page boundary: the dma-buf
 * export wants the range page aligned, cuMemAlloc only promises 256 bytes. */
static CUresult alloc_aligned(struct devmem_cuda *c, size_t size, size_t page)
{
	CUresult res = c->api.mem_alloc(&c->alloc, size);

	if (res != CUDA_SUCCESS || !(c->alloc & (page - 1))) {
		c->base = c->alloc;
		return res;
	}
	c->api.mem_free(c->alloc);
	c->alloc = 0;
	res = c->api.mem_alloc(&c->alloc, size + page);
	c->base = (c->alloc + page - 1) & ~(CUdeviceptr)(page - 1);
	return res;
}

int devmem_cuda_alloc(struct devmem_cuda **out, int device, size_t size, int *fd, size_t *rsize)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct devmem_cuda *c;
	int count = 0, supported = 0, dmabuf = -1, ret;
	CUcontext prev = NULL;
	struct cu_name n;
	CUresult res;

	if (size > SIZE_MAX - 2 * page)
		return devmem_fail(-EINVAL, "CUDA memory of %zu bytes: too large", size);
	size = (size + page - 1) & ~(page - 1);
	c = calloc(1, sizeof(*c));
	if (!c)
		return devmem_fail(-ENOMEM, "CUDA memory: out of host memory");
	c->device = device;
	c->size = size;
	ret = load(c);
	if (ret)
		goto err;
	res = c->api.init(0);
	if (res != CUDA_SUCCESS) {
		ret = devmem_fail(-ENODEV, "CUDA memory: cuInit failed: %s (%s)", cu_err(&c->api, res, &n),
				  res == CUDA_ERROR_NO_DEVICE ? "no GPU on this host" :
				  "no usable NVIDIA driver or GPU");
		goto err;
	}
	res = c->api.device_get_count(&count);
	if (res != CUDA_SUCCESS) {
		ret = devmem_fail(-ENODEV, "CUDA memory: cuDeviceGetCount failed: %s",
				  cu_err(&c->api, res, &n));
		goto err;
	}
	if (device < 0 || device >= count) {
		ret = devmem_fail(-ENODEV, "CUDA memory: device %d does not exist (this host has %d CUDA device%s, 0 to %d)",
				  device, count, count == 1 ? "" : "s", count - 1);
		goto err;
	}
	res = c->api.device_get(&c->dev, device);
	if (res == CUDA_SUCCESS)
		res = c->api.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
						  c->dev);
	if (res != CUDA_SUCCESS) {
		ret = devmem_fail(-ENODEV, "CUDA memory: device %d: cannot query it: %s", device,
				  cu_err(&c->api, res, &n));
		goto err;
	}
	if (!supported) {
		ret = devmem_fail(-EOPNOTSUPP, "CUDA memory: device %d cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: it needs NVIDIA's open kernel module driver)",
				  device);
		goto err;
	}
	res = c->api.primary_ctx_retain(&c->ctx, c->dev);
	if (res != CUDA_SUCCESS) {
		c->ctx = NULL;
		ret = devmem_fail(-ENODEV, "CUDA memory: device %d: cuDevicePrimaryCtxRetain failed: %s",
				  device, cu_err(&c->api, res, &n));
		goto err;
	}
	ret = ctx_enter(c, &prev, "allocating");
	if (ret)
		goto err;
	res = alloc_aligned(c, size, page);
	if (res != CUDA_SUCCESS) {
		c->alloc = 0;
		ret = devmem_fail(-ENOMEM, "CUDA memory: %zu bytes on device %d: cuMemAlloc failed: %s",
				  size, device, cu_err(&c->api, res, &n));
		goto err_leave;
	}
	res = c->api.get_handle(&dmabuf, c->base, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (res != CUDA_SUCCESS || dmabuf < 0) {
		ret = devmem_fail(-EOPNOTSUPP, "CUDA memory: device %d: exporting %zu bytes as a dma-buf (cuMemGetHandleForAddressRange) failed: %s",
				  device, size, cu_err(&c->api, res, &n));
		goto err_leave;
	}
	ctx_leave(c, prev);
	/* Like every fd of the library: not inherited across exec. */
	fcntl(dmabuf, F_SETFD, FD_CLOEXEC);
	*fd = dmabuf;
	*rsize = size;
	*out = c;
	return 0;

err_leave:
	ctx_leave(c, prev);
err:
	cuda_release(c);
	return ret;
}

int devmem_cuda_copy(struct devmem_cuda *c, uint64_t off, void *host, size_t len, bool to_device)
{
	CUcontext prev;
	struct cu_name n;
	CUresult res;
	int ret;

	ret = ctx_enter(c, &prev, to_device ? "writing" : "reading");
	if (ret)
		return ret;
	if (to_device)
		res = c->api.memcpy_htod(c->base + off, host, len);
	else
		res = c->api.memcpy_dtoh(host, c->base + off, len);
	ctx_leave(c, prev);
	if (res != CUDA_SUCCESS)
		return devmem_fail(-EIO, "CUDA memory on device %d: %s %zu bytes at offset %llu: %s",
				   c->device, to_device ? "cuMemcpyHtoD of" : "cuMemcpyDtoH of", len,
				   (unsigned long long)off, cu_err(&c->api, res, &n));
	return 0;
}

void devmem_cuda_free(struct devmem_cuda *c)
{
	if (c)
		cuda_release(c);
}
