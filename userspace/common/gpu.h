/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CUDA device memory for devcoll-perf --gpu and libdevcoll's tests (gpu.c). */
#ifndef DEVTCP_COMMON_GPU_H
#define DEVTCP_COMMON_GPU_H

#include <stddef.h>

enum gpu_dir { GPU_TO_DEVICE, GPU_TO_HOST, GPU_ON_DEVICE };

/* Loads libcuda (DEVMEM_LIBCUDA: another library) and makes device 0's
 * primary context current; 0, or -1 after saying why on stderr. */
int gpu_open(void);
/* @len bytes of device memory, or NULL after saying why. */
void *gpu_alloc(size_t len);
void gpu_free(void *p);
/* 0, or -1 after saying why. */
int gpu_copy(void *dst, const void *src, size_t len, enum gpu_dir dir);

#endif
