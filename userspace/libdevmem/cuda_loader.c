// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one place that loads libcuda. Each library path is loaded once and
 * its table kept for the life of the process: libcuda keeps threads and
 * state that must stay mapped (RTLD_NODELETE), and a table handed out must
 * stay valid while DEVMEM_LIBCUDA changes under a test.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem_cuda.h"
#include "internal.h"

static const struct {
	const char *name;
	size_t off;
	bool optional;	/* devmem_unpack's: it says so when one is missing */
} cuda_syms[] = {
	{ "cuInit", offsetof(struct devmem_cuda_api, init), false },
	{ "cuDeviceGetCount", offsetof(struct devmem_cuda_api, device_get_count), false },
	{ "cuDeviceGet", offsetof(struct devmem_cuda_api, device_get), false },
	{ "cuDeviceGetAttribute", offsetof(struct devmem_cuda_api, device_get_attribute), false },
	{ "cuDevicePrimaryCtxRetain", offsetof(struct devmem_cuda_api, primary_ctx_retain), false },
	{ "cuDevicePrimaryCtxRelease_v2", offsetof(struct devmem_cuda_api, primary_ctx_release), false },
	{ "cuCtxGetCurrent", offsetof(struct devmem_cuda_api, ctx_get_current), false },
	{ "cuCtxSetCurrent", offsetof(struct devmem_cuda_api, ctx_set_current), false },
	{ "cuCtxPushCurrent_v2", offsetof(struct devmem_cuda_api, ctx_push), false },
	{ "cuCtxPopCurrent_v2", offsetof(struct devmem_cuda_api, ctx_pop), false },
	{ "cuMemAlloc_v2", offsetof(struct devmem_cuda_api, mem_alloc), false },
	{ "cuMemFree_v2", offsetof(struct devmem_cuda_api, mem_free), false },
	{ "cuMemHostAlloc", offsetof(struct devmem_cuda_api, mem_host_alloc), false },
	{ "cuMemFreeHost", offsetof(struct devmem_cuda_api, mem_free_host), false },
	{ "cuMemGetHandleForAddressRange", offsetof(struct devmem_cuda_api, get_handle), false },
	{ "cuPointerGetAttribute", offsetof(struct devmem_cuda_api, pointer_get_attribute), false },
	{ "cuMemcpyDtoH_v2", offsetof(struct devmem_cuda_api, memcpy_dtoh), false },
	{ "cuMemcpyHtoD_v2", offsetof(struct devmem_cuda_api, memcpy_htod), false },
	{ "cuMemcpyDtoD_v2", offsetof(struct devmem_cuda_api, memcpy_dtod), false },
	{ "cuGetErrorName", offsetof(struct devmem_cuda_api, get_error_name), false },
	{ "cuModuleLoadData", offsetof(struct devmem_cuda_api, module_load_data), true },
	{ "cuModuleUnload", offsetof(struct devmem_cuda_api, module_unload), true },
	{ "cuModuleGetFunction", offsetof(struct devmem_cuda_api, module_get_function), true },
	{ "cuLaunchKernel", offsetof(struct devmem_cuda_api, launch_kernel), true },
	{ "cuStreamCreate", offsetof(struct devmem_cuda_api, stream_create), true },
	{ "cuStreamDestroy_v2", offsetof(struct devmem_cuda_api, stream_destroy), true },
	{ "cuStreamSynchronize", offsetof(struct devmem_cuda_api, stream_synchronize), true },
	{ "cuEventCreate", offsetof(struct devmem_cuda_api, event_create), true },
	{ "cuEventDestroy_v2", offsetof(struct devmem_cuda_api, event_destroy), true },
	{ "cuEventRecord", offsetof(struct devmem_cuda_api, event_record), true },
	{ "cuEventQuery", offsetof(struct devmem_cuda_api, event_query), true },
	{ "cuEventSynchronize", offsetof(struct devmem_cuda_api, event_synchronize), true },
	{ "cuMemcpyHtoDAsync_v2", offsetof(struct devmem_cuda_api, memcpy_htod_async), true },
};

struct loaded {
	struct loaded *next;
	struct devmem_cuda_api api;
	char path[];
};

static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loaded *loaded;

static int resolve(const char *path, bool only_if_loaded, struct loaded **out)
{
	int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE | (only_if_loaded ? RTLD_NOLOAD : 0);
	struct loaded *l;
	const char *err;
	void *lib;

	lib = dlopen(path, flags);
	if (!lib && only_if_loaded)
		return 0;
	if (!lib) {
		err = dlerror();
		if (err && strstr(err, "No such file"))
			return devmem_fail(-ENODEV, "%s not found (no NVIDIA driver on this host)",
					   path);
		return devmem_fail(-ENODEV, "cannot load %s (is the NVIDIA driver installed?): %s",
				   path, err ? err : "unknown error");
	}
	l = calloc(1, sizeof(*l) + strlen(path) + 1);
	if (!l)
		return devmem_fail(-ENOMEM, "out of memory");
	strcpy(l->path, path);
	for (size_t i = 0; i < sizeof(cuda_syms) / sizeof(cuda_syms[0]); i++) {
		void *sym = dlsym(lib, cuda_syms[i].name);

		if (!sym && cuda_syms[i].optional)
			continue;
		if (!sym) {
			free(l);
			return devmem_fail(-ENODEV, "%s has no %s (the NVIDIA driver is too old: "
					   "CUDA 11.7 or later is needed)", path,
					   cuda_syms[i].name);
		}
		memcpy((char *)&l->api + cuda_syms[i].off, &sym, sizeof(sym));
	}
	*out = l;
	return 1;
}

DEVMEM_EXPORT int devmem_cuda_load(bool only_if_loaded, const struct devmem_cuda_api **api)
{
	const char *path = getenv("DEVMEM_LIBCUDA");
	struct loaded *l;
	int ret = 1;

	if (!path || !*path)
		path = "libcuda.so.1";
	pthread_mutex_lock(&loaded_lock);
	for (l = loaded; l && strcmp(l->path, path); l = l->next)
		;
	if (!l) {
		ret = resolve(path, only_if_loaded, &l);
		if (ret == 1) {
			l->next = loaded;
			loaded = l;
		}
	}
	pthread_mutex_unlock(&loaded_lock);
	if (ret == 1)
		*api = &l->api;
	return ret;
}

/* The errors met most, for libraries that cannot name them (the toolkit's
 * stub library fails cuGetErrorName too). */
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

DEVMEM_EXPORT const char *devmem_cuda_strerror(const struct devmem_cuda_api *api, CUresult res,
					       struct devmem_cuda_errname *n)
{
	const char *name = NULL;

	if (api && api->get_error_name(res, &name) == CUDA_SUCCESS && name)
		return name;
	for (size_t i = 0; i < sizeof(cu_errors) / sizeof(cu_errors[0]); i++)
		if (cu_errors[i].res == res)
			return cu_errors[i].name;
	snprintf(n->buf, sizeof(n->buf), "CUDA error %d", res);
	return n->buf;
}
