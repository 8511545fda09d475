/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What unpack.c hands the GPU kernels (gpu/unpack.cu) and the CPU backend
 * (unpack_cpu.c): one launch's parameters and its fragment descriptors.
 * Shared by C and CUDA C++, so plain types only.
 */
#ifndef LIBDEVMEM_UNPACK_ABI_H
#define LIBDEVMEM_UNPACK_ABI_H

#include <stdint.h>

/* Threads a block: the kernels are compiled for no more. */
#define DM_UNPACK_THREADS 256

enum { DM_UNPACK_INT32, DM_UNPACK_FP16, DM_UNPACK_BF16, DM_UNPACK_FP32, DM_UNPACK_FP64 };
enum { DM_UNPACK_COPY, DM_UNPACK_SUM, DM_UNPACK_PROD, DM_UNPACK_MIN, DM_UNPACK_MAX,
       DM_UNPACK_AVG };

/* A fragment: @len bytes at dma-buf offset @src are the stream's bytes
 * from offset @pos on. In a batch they follow each other: pos + len is
 * the next one's pos. */
struct dm_unpack_frag {
	uint64_t src;
	uint64_t pos;
	uint32_t len;
	uint32_t pad;
};

/* A batch of up to DM_UNPACK_INLINE fragments travels in the launch's
 * parameters (with struct dm_unpack_launch, within the 4 KiB that every
 * driver takes), so no copy to the GPU goes before its kernel. */
#define DM_UNPACK_INLINE 160

struct dm_unpack_inline {
	struct dm_unpack_frag f[DM_UNPACK_INLINE];
};

struct dm_unpack_launch {
	const unsigned char *base;	/* the dma-buf (device or CPU address) */
	unsigned char *dst;		/* the stream's first byte goes here */
	uint64_t start, end;		/* the batch's bytes of the stream */
	const unsigned char *carry_in;	/* first bytes of an element begun before start */
	unsigned char *carry_out;	/* ... and of one that goes on after end */
	uint32_t n;			/* fragments */
	uint32_t es;			/* element size: 1 (copy), 2, 4, 8 */
	uint32_t type, op;		/* DM_UNPACK_* */
	uint32_t avg_n;			/* AVG divides by it (1: not the last step) */
	uint32_t group;			/* GPU: threads per fragment, 32 to 256 */
};

#endif
