// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The GPU side of devmem_unpack (unpack.c): one launch per batch of devmem
 * fragments, which lie anywhere in a dma-buf in GPU memory, in the stream's
 * order. "gather" copies them into a contiguous destination; "reduce"
 * combines the elements they hold with the destination's (out = out op in),
 * reading the fragments in place. Fragments have any length and alignment:
 * an element may straddle fragments, and batches: its first bytes then wait
 * in a small carry buffer for the next launch (two, used in turn, so a
 * launch reads one and writes the other). The arithmetic is what unpack_ops.c
 * does on the CPU, so the two agree bit for bit: fp16 and bf16 go through
 * float and round to nearest even, integers wrap, min and max are a < b.
 *
 * Built with nvcc into a fatbin that libdevmem embeds and loads with the
 * driver API (cuModuleLoadData), so libdevmem links no CUDA library.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "../unpack_abi.h"

/* Each fragment goes to a group of l.group threads (a warp for short
 * fragments, up to a block for long ones): its first, the thread's lane,
 * the step to its next fragment. */
#define GROUP_LOOP(l, i, lane)							\
	unsigned int lane = threadIdx.x % (l).group;				\
	unsigned int step = gridDim.x * (blockDim.x / (l).group);		\
	for (unsigned int i = blockIdx.x * (blockDim.x / (l).group) + threadIdx.x / (l).group; \
	     i < (l).n; i += step)

/* Gather: 16-byte words where source and destination agree modulo 16,
 * else bytes. */
extern "C" __global__ void devmem_unpack_gather(struct dm_unpack_launch l,
						const struct dm_unpack_frag *f)
{
	GROUP_LOOP(l, i, lane) {
		const unsigned char *s = l.base + f[i].src;
		unsigned char *d = l.dst + f[i].pos;
		unsigned int len = f[i].len, head = 0;

		if ((((uintptr_t)s ^ (uintptr_t)d) & 15) == 0) {
			head = (16 - ((uintptr_t)s & 15)) & 15;
			if (head > len)
				head = len;
			for (unsigned int k = lane; k < head; k += l.group)
				d[k] = s[k];
			const uint4 *sw = (const uint4 *)(s + head);
			uint4 *dw = (uint4 *)(d + head);
			unsigned int words = (len - head) / 16;

			for (unsigned int k = lane; k < words; k += l.group)
				dw[k] = sw[k];
			head += words * 16;
		}
		for (unsigned int k = head + lane; k < len; k += l.group)
			d[k] = s[k];
	}
}

/* The byte at stream offset @p (>= the batch's start), from fragment *@i on. */
__device__ static unsigned char byte_at(const struct dm_unpack_launch &l,
					const struct dm_unpack_frag *f, unsigned int *i,
					unsigned long long p)
{
	while (p >= f[*i].pos + f[*i].len)
		(*i)++;
	return l.base[f[*i].src + (p - f[*i].pos)];
}

/* The @es bytes of the element at stream offset @p0, its first byte in
 * fragment @i (or in the carry when before the batch). */
__device__ static uint64_t element(const struct dm_unpack_launch &l,
				   const struct dm_unpack_frag *f, unsigned int i,
				   unsigned long long p0)
{
	union {
		unsigned char b[8];
		uint64_t u;
	} v = { .u = 0 };

	if (p0 >= l.start && p0 - f[i].pos + l.es <= f[i].len &&
	    ((f[i].src + (p0 - f[i].pos)) & (l.es - 1)) == 0) {
		const unsigned char *s = l.base + f[i].src + (p0 - f[i].pos);

		switch (l.es) {
		case 2: return *(const uint16_t *)s;
		case 4: return *(const uint32_t *)s;
		default: return *(const uint64_t *)s;
		}
	}
	for (unsigned int k = 0; k < l.es; k++) {
		unsigned long long p = p0 + k;

		v.b[k] = p < l.start ? l.carry_in[p - p0] : byte_at(l, f, &i, p);
	}
	return v.u;
}

__device__ static float half_bits_to_float(uint16_t b, bool bf)
{
	if (bf) {
		__nv_bfloat16_raw r;

		r.x = b;
		return __bfloat162float(__nv_bfloat16(r));
	}
	__half_raw r;

	r.x = b;
	return __half2float(__half(r));
}

__device__ static uint16_t float_to_half_bits(float x, bool bf)
{
	if (bf) {
		__nv_bfloat16_raw r = __float2bfloat16_rn(x);

		return r.x;
	}
	__half_raw r = __float2half_rn(x);

	return r.x;
}

template <typename T> __device__ static T op(T a, T b, unsigned int o, unsigned int n)
{
	switch (o) {
	case DM_UNPACK_SUM: return a + b;
	case DM_UNPACK_PROD: return a * b;
	case DM_UNPACK_MIN: return b < a ? b : a;
	case DM_UNPACK_MAX: return b > a ? b : a;
	default: return (a + b) / (T)n;	/* AVG: n is 1 until the last contribution */
	}
}

__device__ static void combine(const struct dm_unpack_launch &l, unsigned long long p0,
			       uint64_t in)
{
	unsigned char *d = l.dst + p0;

	switch (l.type) {
	case DM_UNPACK_INT32: {
		uint32_t a = *(uint32_t *)d, b = (uint32_t)in;

		/* sums and products wrap; min, max and the average are signed */
		if (l.op == DM_UNPACK_MIN || l.op == DM_UNPACK_MAX)
			*(int32_t *)d = op<int32_t>((int32_t)a, (int32_t)b, l.op, 1);
		else if (l.op == DM_UNPACK_AVG)
			*(int32_t *)d = (int32_t)(a + b) / (int32_t)l.avg_n;
		else
			*(uint32_t *)d = op<uint32_t>(a, b, l.op, 1);
		break;
	}
	case DM_UNPACK_FP32: {
		float a = *(float *)d, b = __uint_as_float((uint32_t)in);

		*(float *)d = op<float>(a, b, l.op, l.avg_n);
		break;
	}
	case DM_UNPACK_FP64: {
		double a = *(double *)d, b = __longlong_as_double((long long)in);

		*(double *)d = op<double>(a, b, l.op, l.avg_n);
		break;
	}
	default: {
		bool bf = l.type == DM_UNPACK_BF16;
		float a = half_bits_to_float(*(uint16_t *)d, bf);
		float b = half_bits_to_float((uint16_t)in, bf);

		*(uint16_t *)d = float_to_half_bits(op<float>(a, b, l.op, l.avg_n), bf);
		break;
	}
	}
}

/*
 * Reduce: a fragment's group takes the elements whose first byte is in it
 * and that end within the batch. Block 0 also takes an
 * element begun in an earlier batch (first bytes in the carry) and saves
 * the first bytes of one that goes on in the next.
 */
extern "C" __global__ void devmem_unpack_reduce(struct dm_unpack_launch l,
						const struct dm_unpack_frag *f)
{
	unsigned long long es = l.es, tail = l.end - l.end % es;

	if (blockIdx.x == 0 && threadIdx.x == 0) {
		unsigned long long first = l.start - l.start % es;

		if (first < l.start && first + es <= l.end)
			combine(l, first, element(l, f, 0, first));
		if (tail < l.end) {
			unsigned int i = 0;

			for (unsigned long long p = tail; p < l.end; p++)
				l.carry_out[p - tail] = p < l.start ? l.carry_in[p - tail] :
								      byte_at(l, f, &i, p);
		}
	}
	GROUP_LOOP(l, i, lane) {
		unsigned long long lo = f[i].pos, hi = f[i].pos + f[i].len;
		unsigned long long e0 = (lo + es - 1) / es;

		if (hi > tail)
			hi = tail;
		for (unsigned long long p = (e0 + lane) * es; p < hi; p += l.group * es)
			combine(l, p, element(l, f, i, p));
	}
}
