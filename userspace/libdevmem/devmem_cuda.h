/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libdevmem's CUDA driver API, loaded at run time (devmem_cuda_load(3)):
 * the entry points libdevmem uses itself, for programs that want CUDA
 * memory without building against CUDA or needing it to run (libdevcoll,
 * devcoll-perf). Include cuda.h first, if at all: its types are these.
 */
#ifndef DEVMEM_CUDA_H
#define DEVMEM_CUDA_H

#include <stdbool.h>
#include <stddef.h>

#ifndef CUDA_VERSION
/* The types and values used, as in CUDA 13's cuda.h. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS				0
#define CUDA_ERROR_NOT_READY			600
#define CU_STREAM_NON_BLOCKING			1
#define CU_EVENT_DISABLE_TIMING			2
#define CUDA_ERROR_NO_DEVICE			100
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED	124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD	1
#define CU_POINTER_ATTRIBUTE_CONTEXT		1
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE	2
#define CU_POINTER_ATTRIBUTE_IS_MANAGED		8
#define CU_MEMORYTYPE_DEVICE			2
#define CU_MEMHOSTALLOC_PORTABLE		1
#endif /* !CUDA_VERSION */

/* Entry points; the _v2 names are what cuda.h maps the plain names to.
 * New ones are added at the end only. */
struct devmem_cuda_api {
	CUresult (*init)(unsigned int flags);
	CUresult (*device_get_count)(int *count);
	CUresult (*device_get)(CUdevice *dev, int ordinal);
	CUresult (*device_get_attribute)(int *value, int attrib, CUdevice dev);
	CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice dev);
	CUresult (*primary_ctx_release)(CUdevice dev);
	CUresult (*ctx_get_current)(CUcontext *ctx);
	CUresult (*ctx_set_current)(CUcontext ctx);
	CUresult (*ctx_push)(CUcontext ctx);
	CUresult (*ctx_pop)(CUcontext *ctx);
	CUresult (*mem_alloc)(CUdeviceptr *dptr, size_t size);
	CUresult (*mem_free)(CUdeviceptr dptr);
	CUresult (*mem_host_alloc)(void **p, size_t len, unsigned int flags);
	CUresult (*mem_free_host)(void *p);
	CUresult (*get_handle)(void *handle, CUdeviceptr dptr, size_t size, int type,
			       unsigned long long flags);
	CUresult (*pointer_get_attribute)(void *data, int attr, CUdeviceptr ptr);
	CUresult (*memcpy_dtoh)(void *dst, CUdeviceptr src, size_t len);
	CUresult (*memcpy_htod)(CUdeviceptr dst, const void *src, size_t len);
	CUresult (*memcpy_dtod)(CUdeviceptr dst, CUdeviceptr src, size_t len);
	CUresult (*get_error_name)(CUresult err, const char **name);
	/* For devmem_unpack's kernels (unpack.c); NULL where the library
	 * lacks them (the tests' stand-in). */
	CUresult (*module_load_data)(CUmodule *mod, const void *image);
	CUresult (*module_unload)(CUmodule mod);
	CUresult (*module_get_function)(CUfunction *f, CUmodule mod, const char *name);
	CUresult (*launch_kernel)(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
				  unsigned int bx, unsigned int by, unsigned int bz,
				  unsigned int shared, CUstream stream, void **params, void **extra);
	CUresult (*stream_create)(CUstream *stream, unsigned int flags);
	CUresult (*stream_destroy)(CUstream stream);
	CUresult (*stream_synchronize)(CUstream stream);
	CUresult (*event_create)(CUevent *ev, unsigned int flags);
	CUresult (*event_destroy)(CUevent ev);
	CUresult (*event_record)(CUevent ev, CUstream stream);
	CUresult (*event_query)(CUevent ev);
	CUresult (*event_synchronize)(CUevent ev);
	CUresult (*memcpy_htod_async)(CUdeviceptr dst, const void *src, size_t len, CUstream s);
};

/*
 * Loads libcuda.so.1, or the library DEVMEM_LIBCUDA names (tests), once per
 * library path and process. With @only_if_loaded, only when the process has
 * loaded it already (a program that has not cannot hold device memory).
 * Returns 1 with the entry points in *@api, 0 when @only_if_loaded and it
 * is not loaded, or -ENODEV saying why (devmem_last_error()).
 */
int devmem_cuda_load(bool only_if_loaded, const struct devmem_cuda_api **api);

struct devmem_cuda_errname {
	char buf[40];
};

/* "CUDA_ERROR_..." for @res, or its number when nobody can name it. */
const char *devmem_cuda_strerror(const struct devmem_cuda_api *api, CUresult res,
				 struct devmem_cuda_errname *n);

#endif /* DEVMEM_CUDA_H */
