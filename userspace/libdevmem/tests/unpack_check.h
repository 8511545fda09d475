/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by t_unpack (the CPU, in CI) and gpu_unpack (a GPU): a stream of
 * typed values scattered over a dma-buf image as fragments, batch by batch,
 * either at random (lengths 1 to 9000 bytes, any offset and alignment; with
 * @linear, some fragments are linear bytes in host memory, runs of them and
 * a few longer than a GPU launch's linear scratch) or as a recorded devtcp
 * devmem receive laid them out
 * (data/frags-devtcp.txt: "batch" lines, then "offset len" per fragment);
 * and the expected result computed element by element, independently of
 * unpack_cpu.c's loop.
 */
#ifndef UNPACK_CHECK_H
#define UNPACK_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "internal.h"

#define UC_IMAGE	(8u << 20)	/* the dma-buf */

struct uc_batch {
	unsigned int first, n;	/* into frags */
};

struct uc_layout {
	struct devmem_frag *frags;
	unsigned int nfrags, cap;
	struct uc_batch *batches;
	unsigned int nbatches, bcap;
	size_t bytes;		/* the stream */
};

/* A fragment at dma-buf offset @off, or (@off UC_LINEAR) linear bytes. */
#define UC_LINEAR	UINT64_MAX

static inline void uc_add(struct uc_layout *L, uint64_t off, uint32_t len, int new_batch)
{
	if (L->nfrags == L->cap) {
		L->cap = L->cap ? 2 * L->cap : 1024;
		L->frags = realloc(L->frags, L->cap * sizeof(*L->frags));
	}
	if (new_batch || !L->nbatches) {
		if (L->nbatches == L->bcap) {
			L->bcap = L->bcap ? 2 * L->bcap : 256;
			L->batches = realloc(L->batches, L->bcap * sizeof(*L->batches));
		}
		L->batches[L->nbatches++] = (struct uc_batch){ L->nfrags, 0 };
	}
	L->frags[L->nfrags++] = off == UC_LINEAR ? (struct devmem_frag){ .len = len } :
		(struct devmem_frag){ .offset = off, .len = len, .dmabuf_id = 1 };
	L->batches[L->nbatches - 1].n++;
	L->bytes += len;
}

/* Random: batches of 1 to @most fragments, each batch's fragments apart in
 * the image (they are held at once), anywhere in it; with @linear, one in
 * four is linear and one in fifty of those 64-200 KiB long. */
static inline void uc_random(struct uc_layout *L, size_t bytes, unsigned int seed, int linear,
			     unsigned int most)
{
	srand(seed);
	while (L->bytes < bytes) {
		unsigned int n = 1 + rand() % most;
		uint64_t off = (uint64_t)(rand() % 4096);

		for (unsigned int i = 0; i < n && L->bytes < bytes; i++) {
			uint32_t len = 1 + rand() % 9000;
			int lin = linear && rand() % 4 == 0;

			if (lin && rand() % 50 == 0)
				len = (64u << 10) + rand() % (136u << 10);
			if (len > bytes - L->bytes)
				len = (uint32_t)(bytes - L->bytes);
			if (lin) {
				uc_add(L, UC_LINEAR, len, i == 0);
				continue;
			}
			if (off + len > UC_IMAGE)
				off = (uint64_t)(rand() % 4096);
			uc_add(L, off, len, i == 0);
			off += len + rand() % 300;
		}
	}
}

/*
 * The stream's bytes (@stream) where a batch's fragments say: written into
 * the image (the caller's, through @put) for dma-buf fragments, pointed at
 * for linear ones (in the copy @out of the batch's descriptors).
 */
static inline int uc_place(const struct uc_layout *L, const struct uc_batch *B,
			   const unsigned char *stream, size_t *pos, struct devmem_frag *out,
			   int (*put)(void *arg, uint64_t off, const void *p, uint32_t len),
			   void *arg)
{
	for (unsigned int i = 0; i < B->n; i++) {
		out[i] = L->frags[B->first + i];
		if (out[i].dmabuf_id) {
			if (put(arg, out[i].offset, stream + *pos, out[i].len))
				return -1;
		} else {
			out[i].linear = stream + *pos;
		}
		*pos += out[i].len;
	}
	return 0;
}

/* The recorded layout, repeated until @bytes (0: once); -1 if unreadable. */
static inline int uc_recorded(struct uc_layout *L, const char *path, size_t bytes)
{
	unsigned long long off;
	unsigned int len;
	int new_batch = 1;
	char line[128];

	do {
		FILE *f = fopen(path, "re");

		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "batch", 5))
				new_batch = 1;
			else if (sscanf(line, "%llu %u", &off, &len) == 2 && off + len <= UC_IMAGE) {
				uc_add(L, off, len, new_batch);
				new_batch = 0;
			}
		}
		fclose(f);
	} while (bytes && L->bytes < bytes && L->nfrags);
	return L->nfrags ? 0 : -1;
}

/* Trims the stream to a multiple of 8 bytes (any element size divides it). */
static inline void uc_trim(struct uc_layout *L)
{
	while (L->bytes % 8) {
		struct devmem_frag *f = &L->frags[L->nfrags - 1];
		uint32_t cut = (uint32_t)(L->bytes % 8) < f->len ? (uint32_t)(L->bytes % 8) : f->len - 1;

		if (!cut) {	/* a 1-byte last fragment: drop it */
			L->nfrags--;
			L->batches[L->nbatches - 1].n--;
			L->bytes -= 1;
			if (!L->batches[L->nbatches - 1].n)
				L->nbatches--;
			continue;
		}
		f->len -= cut;
		L->bytes -= cut;
	}
}

static inline unsigned int uc_size(unsigned int type)
{
	return type == DEVMEM_UNPACK_FP16 || type == DEVMEM_UNPACK_BF16 ? 2 :
	       type == DEVMEM_UNPACK_FP64 ? 8 : 4;
}

/* @n finite values of @type, between -8 and 8 for floats. */
static inline void uc_values(unsigned char *p, size_t n, unsigned int type)
{
	for (size_t i = 0; i < n; i++) {
		float f = ((float)rand() / (float)RAND_MAX - 0.5f) * 16.0f;
		double d = f + (double)rand() / RAND_MAX * 1e-9;
		int32_t v = (int32_t)((uint32_t)rand() * 2654435761u);
		uint16_t h;

		switch (type) {
		case DEVMEM_UNPACK_INT32: memcpy(p + 4 * i, &v, 4); break;
		case DEVMEM_UNPACK_FP32: memcpy(p + 4 * i, &f, 4); break;
		case DEVMEM_UNPACK_FP64: memcpy(p + 8 * i, &d, 8); break;
		case DEVMEM_UNPACK_FP16: h = dm_float_to_half(f); memcpy(p + 2 * i, &h, 2); break;
		default: h = dm_float_to_bf16(f); memcpy(p + 2 * i, &h, 2); break;
		}
	}
}

/* dst op in, for one element, written straight from the definitions. */
static inline void uc_expect(unsigned char *d, const unsigned char *in, unsigned int type,
			     unsigned int op, unsigned int n)
{
	if (type == DEVMEM_UNPACK_INT32) {
		int32_t a, b, r;

		memcpy(&a, d, 4);
		memcpy(&b, in, 4);
		switch (op) {
		case DEVMEM_UNPACK_SUM: r = (int32_t)((uint32_t)a + (uint32_t)b); break;
		case DEVMEM_UNPACK_PROD: r = (int32_t)((uint32_t)a * (uint32_t)b); break;
		case DEVMEM_UNPACK_MIN: r = b < a ? b : a; break;
		case DEVMEM_UNPACK_MAX: r = b > a ? b : a; break;
		default: r = (int32_t)((uint32_t)a + (uint32_t)b) / (int32_t)n; break;
		}
		memcpy(d, &r, 4);
	} else if (type == DEVMEM_UNPACK_FP64) {
		double a, b, r;

		memcpy(&a, d, 8);
		memcpy(&b, in, 8);
		switch (op) {
		case DEVMEM_UNPACK_SUM: r = a + b; break;
		case DEVMEM_UNPACK_PROD: r = a * b; break;
		case DEVMEM_UNPACK_MIN: r = b < a ? b : a; break;
		case DEVMEM_UNPACK_MAX: r = b > a ? b : a; break;
		default: r = (a + b) / n; break;
		}
		memcpy(d, &r, 8);
	} else {
		float a, b, r;
		uint16_t h;

		if (type == DEVMEM_UNPACK_FP32) {
			memcpy(&a, d, 4);
			memcpy(&b, in, 4);
		} else {
			uint16_t x, y;

			memcpy(&x, d, 2);
			memcpy(&y, in, 2);
			a = type == DEVMEM_UNPACK_FP16 ? dm_half_to_float(x) : dm_bf16_to_float(x);
			b = type == DEVMEM_UNPACK_FP16 ? dm_half_to_float(y) : dm_bf16_to_float(y);
		}
		switch (op) {
		case DEVMEM_UNPACK_SUM: r = a + b; break;
		case DEVMEM_UNPACK_PROD: r = a * b; break;
		case DEVMEM_UNPACK_MIN: r = b < a ? b : a; break;
		case DEVMEM_UNPACK_MAX: r = b > a ? b : a; break;
		default: r = (a + b) / (float)n; break;
		}
		if (type == DEVMEM_UNPACK_FP32) {
			memcpy(d, &r, 4);
			return;
		}
		h = type == DEVMEM_UNPACK_FP16 ? dm_float_to_half(r) : dm_float_to_bf16(r);
		memcpy(d, &h, 2);
	}
}

static const char *const uc_type_name[] = { "int32", "fp16", "bf16", "fp32", "fp64" };
static const char *const uc_op_name[] = { "copy", "sum", "prod", "min", "max", "avg" };

#endif
