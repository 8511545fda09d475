// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA device memory exported as a dma-buf, through the CUDA driver API
 * loaded at run time (cuda_loader.c): the library neither builds against
 * CUDA nor needs it to run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devmem_cuda.h"
#include "internal.h"

struct devmem_cuda {
	const struct devmem_cuda_api *api;
	int device;
	CUdevice dev;
	CUcontext ctx;		/* the device's primary context, retained */
	CUdeviceptr alloc;	/* what cuMemAlloc returned */
	CUdeviceptr base;	/* page-aligned start of the exported range */
	size_t size;
};

/* Makes the allocation's context current; the caller's goes back in @prev. */
static int ctx_enter(struct devmem_cuda *c, CUcontext *prev, const char *what)
{
	struct devmem_cuda_errname n;
	CUresult res;

	res = c->api->ctx_get_current(prev);
	if (res == CUDA_SUCCESS)
		res = c->api->ctx_set_current(c->ctx);
	if (res != CUDA_SUCCESS)
		return devmem_fail(-EIO, "CUDA memory on device %d: %s: cannot make its context current: %s",
				   c->device, what, devmem_cuda_strerror(c->api, res, &n));
	return 0;
}

static void ctx_leave(struct devmem_cuda *c, CUcontext prev)
{
	c->api->ctx_set_current(prev);
}

static int load(struct devmem_cuda *c)
{
	int ret = devmem_cuda_load(false, &c->api);

	return ret < 0 ? devmem_fail(ret, "CUDA memory: %s", devmem_last_error()) : 0;
}

static void cuda_release(struct devmem_cuda *c)
{
	CUcontext prev;

	if (c->alloc && ctx_enter(c, &prev, "freeing") == 0) {
		c->api->mem_free(c->alloc);
		ctx_leave(c, prev);
	}
	if (c->ctx)
		c->api->primary_ctx_release(c->dev);
	free(c);
}

/* Allocates @size bytes starting at a host-page boundary: the dma-buf
 * export wants the range page aligned, cuMemAlloc only promises 256 bytes. */
static CUresult alloc_aligned(struct devmem_cuda *c, size_t size, size_t page)
{
	CUresult res = c->api->mem_alloc(&c->alloc, size);

	if (res != CUDA_SUCCESS || !(c->alloc & (page - 1))) {
		c->base = c->alloc;
		return res;
	}
	c->api->mem_free(c->alloc);
	c->alloc = 0;
	res = c->api->mem_alloc(&c->alloc, size + page);
	c->base = (c->alloc + page - 1) & ~(CUdeviceptr)(page - 1);
	return res;
}

int devmem_cuda_alloc(struct devmem_cuda **out, int device, size_t size, int *fd, size_t *rsize)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct devmem_cuda *c;
	int count = 0, supported = 0, dmabuf = -1, ret;
	CUcontext prev = NULL;
	struct devmem_cuda_errname n;
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
	res = c->api->init(0);
	if (res != CUDA_SUCCESS) {
		ret = devmem_fail(-ENODEV, "CUDA memory: cuInit failed: %s (%s)", devmem_cuda_strerror(c->api, res, &n),
				  res == CUDA_ERROR_NO_DEVICE ? "no GPU on this host" :
				  "no usable NVIDIA driver or GPU");
		goto err;
	}
	res = c->api->device_get_count(&count);
	if (res != CUDA_SUCCESS) {
		ret = devmem_fail(-ENODEV, "CUDA memory: cuDeviceGetCount failed: %s",
				  devmem_cuda_strerror(c->api, res, &n));
		goto err;
	}
	if (device < 0 || device >= count) {
		ret = devmem_fail(-ENODEV, "CUDA memory: device %d does not exist (this host has %d CUDA device%s, 0 to %d)",
				  device, count, count == 1 ? "" : "s", count - 1);
		goto err;
	}
	res = c->api->device_get(&c->dev, device);
	if (res == CUDA_SUCCESS)
		res = c->api->device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
						  c->dev);
	if (res != CUDA_SUCCESS) {
		ret = devmem_fail(-ENODEV, "CUDA memory: device %d: cannot query it: %s", device,
				  devmem_cuda_strerror(c->api, res, &n));
		goto err;
	}
	if (!supported) {
		ret = devmem_fail(-EOPNOTSUPP, "CUDA memory: device %d cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: it needs NVIDIA's open kernel module driver)",
				  device);
		goto err;
	}
	res = c->api->primary_ctx_retain(&c->ctx, c->dev);
	if (res != CUDA_SUCCESS) {
		c->ctx = NULL;
		ret = devmem_fail(-ENODEV, "CUDA memory: device %d: cuDevicePrimaryCtxRetain failed: %s",
				  device, devmem_cuda_strerror(c->api, res, &n));
		goto err;
	}
	ret = ctx_enter(c, &prev, "allocating");
	if (ret)
		goto err;
	res = alloc_aligned(c, size, page);
	if (res != CUDA_SUCCESS) {
		c->alloc = 0;
		ret = devmem_fail(-ENOMEM, "CUDA memory: %zu bytes on device %d: cuMemAlloc failed: %s",
				  size, device, devmem_cuda_strerror(c->api, res, &n));
		goto err_leave;
	}
	res = c->api->get_handle(&dmabuf, c->base, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (res != CUDA_SUCCESS || dmabuf < 0) {
		ret = devmem_fail(-EOPNOTSUPP, "CUDA memory: device %d: exporting %zu bytes as a dma-buf (cuMemGetHandleForAddressRange) failed: %s",
				  device, size, devmem_cuda_strerror(c->api, res, &n));
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
	struct devmem_cuda_errname n;
	CUresult res;
	int ret;

	ret = ctx_enter(c, &prev, to_device ? "writing" : "reading");
	if (ret)
		return ret;
	/* From pageable memory cuMemcpyHtoD may return before its DMA has
	 * landed; a kernel on another stream (devmem_unpack's is
	 * non-blocking) must find the bytes there, so wait for it. */
	if (to_device) {
		res = c->api->memcpy_htod(c->base + off, host, len);
		if (res == CUDA_SUCCESS)
			res = c->api->stream_synchronize(NULL);
	} else
		res = c->api->memcpy_dtoh(host, c->base + off, len);
	ctx_leave(c, prev);
	if (res != CUDA_SUCCESS)
		return devmem_fail(-EIO, "CUDA memory on device %d: %s %zu bytes at offset %llu: %s",
				   c->device, to_device ? "cuMemcpyHtoD of" : "cuMemcpyDtoH of", len,
				   (unsigned long long)off, devmem_cuda_strerror(c->api, res, &n));
	return 0;
}

void devmem_cuda_free(struct devmem_cuda *c)
{
	if (c)
		cuda_release(c);
}

void devmem_cuda_where(struct devmem_cuda *c, unsigned long long *base, void **ctx,
		       const struct devmem_cuda_api **api)
{
	*base = c->base;
	*ctx = c->ctx;
	*api = c->api;
}
