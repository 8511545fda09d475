/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libdevmem internals shared between its source files; not installed. */
#ifndef LIBDEVMEM_INTERNAL_H
#define LIBDEVMEM_INTERNAL_H

#include <stdarg.h>

#include "devmem.h"

#define DEVMEM_EXPORT __attribute__((visibility("default")))

/*
 * Records the thread's error message (printf-style, without a trailing
 * newline) and returns @err, a negative errno, so that callers can write
 * "return devmem_fail(-EINVAL, "%s: queue %u does not exist", ...)".
 */
int devmem_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, appending ": strerror(-err)". */
int devmem_fail_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * CUDA device memory behind devmem_mem_cuda() (cuda.c). mem.c owns the
 * dma-buf fd; the allocation, its context and libcuda stay with @cuda.
 */
struct devmem_cuda;

/* Allocates @size bytes (rounded up to the page size, in @rsize) on CUDA
 * device @device and exports them as a dma-buf (@fd). */
int devmem_cuda_alloc(struct devmem_cuda **out, int device, size_t size, int *fd,
		      size_t *rsize);
/* Copies @len bytes at @off between the device memory and @host. */
int devmem_cuda_copy(struct devmem_cuda *cuda, uint64_t off, void *host, size_t len,
		     bool to_device);
void devmem_cuda_free(struct devmem_cuda *cuda);

#endif
