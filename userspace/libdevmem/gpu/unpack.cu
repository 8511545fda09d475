// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The GPU side of devmem_unpack (unpack.c): one launch per batch of devmem
 * fragments, which lie anywhere in a dma-buf in GPU memory, in the stream's
 * order. "gather" copies them into a contiguous destination; "reduce"
 * combines the elements they hold with the destination's (out = out op in),
 * reading the fragments in place. Fragments have any length and alignment:
 * an element may straddle fragments, and batches: its first bytes then wait
 * in a small carry buffer for the next launch (two, used in turn, so a
 * launch reads one and writes the other). The arithmetic is what
 * unpack_cpu.c does on the CPU, so the two agree bit for bit: fp16 and bf16
 * go through float and round to nearest even, integers wrap, min and max
 * are a < b.
 *
 * Both move whole 16-byte words of the destination, whatever the source's
 * alignment: a NIC puts a segment's payload at the start of a buffer, so
 * the stream's position and the dma-buf's rarely agree modulo 16 (a
 * 1448-byte segment ends 8 bytes off). Only a fragment's ragged ends, and
 * elements split between fragments, go a byte or an element at a time.
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

/*
 * The 16 bytes at @p, whatever its alignment: the aligned word that holds
 * p and the next one, shifted into place. The second holds p + 15, so it
 * lies within the dma-buf whenever p + 15 does. The shift is the same for
 * every word of a fragment, so a warp never diverges on it.
 */
__device__ static uint4 load16(const unsigned char *p)
{
	uintptr_t a = (uintptr_t)p;
	unsigned int r = a & 15;
	const uint4 *w = (const uint4 *)(a - r);
	uint4 x = __ldg(w);

	if (!r)
		return x;
	uint4 y = __ldg(w + 1);
	uint32_t v[8] = { x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w };
	uint32_t s[5];
	unsigned int q = r / 4, sh = (r % 4) * 8;

	/* constant indices only: a run-time one would put v in local memory */
#pragma unroll
	for (int i = 0; i < 5; i++)
		s[i] = q == 0 ? v[i] : q == 1 ? v[i + 1] : q == 2 ? v[i + 2] : v[i + 3];
	return make_uint4(__funnelshift_r(s[0], s[1], sh), __funnelshift_r(s[1], s[2], sh),
			  __funnelshift_r(s[2], s[3], sh), __funnelshift_r(s[3], s[4], sh));
}

/* Gather: the destination's whole words from any source alignment, the
 * bytes before and after them one by one. */
__device__ static void gather(const struct dm_unpack_launch &l, const struct dm_unpack_frag *f)
{
	GROUP_LOOP(l, i, lane) {
		const unsigned char *s = l.base + f[i].src;
		unsigned char *d = l.dst + f[i].pos;
		unsigned int len = f[i].len, g = l.group;
		unsigned int head = (16 - ((uintptr_t)d & 15)) & 15;

		if (head > len)
			head = len;
		unsigned int words = (len - head) / 16;
		uint4 *dw = (uint4 *)(d + head);
		const unsigned char *sw = s + head;

		for (unsigned int b = lane; b < head; b += g)
			d[b] = s[b];
		for (unsigned int k = lane; k < words; k += g)
			dw[k] = load16(sw + 16 * k);
		for (unsigned int b = head + words * 16 + lane; b < len; b += g)
			d[b] = s[b];
	}
}

/*
 * The kernels' entry points take the fragments in device memory (@f), or
 * with @f NULL in the launch's parameters (@in, read where it lies: a
 * __grid_constant__ is never copied), one entry for both to halve the code.
 */
extern "C" __global__ void __launch_bounds__(DM_UNPACK_THREADS)
devmem_unpack_gather(struct dm_unpack_launch l, const struct dm_unpack_frag *f,
		     const __grid_constant__ struct dm_unpack_inline in)
{
	gather(l, f ? f : in.f);
}

__host__ __device__ constexpr unsigned int elem_size(int type)
{
	return type == DM_UNPACK_FP16 || type == DM_UNPACK_BF16 ? 2 : type == DM_UNPACK_FP64 ? 8 : 4;
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

/* The ES bytes of the element at stream offset @p0, its first byte in
 * fragment @i (or in the carry when before the batch). */
template <unsigned int ES>
__device__ static uint64_t element(const struct dm_unpack_launch &l,
				   const struct dm_unpack_frag *f, unsigned int i,
				   unsigned long long p0)
{
	union {
		unsigned char b[8];
		uint64_t u;
	} v = { .u = 0 };

	if (p0 >= l.start && p0 - f[i].pos + ES <= f[i].len &&
	    ((f[i].src + (p0 - f[i].pos)) & (ES - 1)) == 0) {
		const unsigned char *s = l.base + f[i].src + (p0 - f[i].pos);

		switch (ES) {
		case 2: return *(const uint16_t *)s;
		case 4: return *(const uint32_t *)s;
		default: return *(const uint64_t *)s;
		}
	}
	for (unsigned int k = 0; k < ES; k++) {
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

template <typename T, int OP> __device__ static T op(T a, T b, unsigned int n)
{
	switch (OP) {
	case DM_UNPACK_SUM: return a + b;
	case DM_UNPACK_PROD: return a * b;
	case DM_UNPACK_MIN: return b < a ? b : a;
	case DM_UNPACK_MAX: return b > a ? b : a;
	default: return (a + b) / (T)n;	/* AVG: n is 1 until the last contribution */
	}
}

/* a op b, on the elements' bits. */
template <int TYPE, int OP> __device__ static uint64_t apply(uint64_t a, uint64_t b, unsigned int n)
{
	switch (TYPE) {
	case DM_UNPACK_INT32:
		/* sums and products wrap; min, max and the average are signed */
		if (OP == DM_UNPACK_MIN || OP == DM_UNPACK_MAX)
			return (uint32_t)op<int32_t, OP>((int32_t)a, (int32_t)b, 1);
		if (OP == DM_UNPACK_AVG)
			return (uint32_t)((int32_t)(uint32_t)(a + b) / (int32_t)n);
		return op<uint32_t, OP>((uint32_t)a, (uint32_t)b, 1);
	case DM_UNPACK_FP32:
		return __float_as_uint(op<float, OP>(__uint_as_float((uint32_t)a),
						      __uint_as_float((uint32_t)b), n));
	case DM_UNPACK_FP64:
		return (uint64_t)__double_as_longlong(op<double, OP>(
			__longlong_as_double((long long)a), __longlong_as_double((long long)b), n));
	default: {
		const bool bf = TYPE == DM_UNPACK_BF16;

		return float_to_half_bits(op<float, OP>(half_bits_to_float((uint16_t)a, bf),
							 half_bits_to_float((uint16_t)b, bf), n), bf);
	}
	}
}

/* The destination's element at stream offset @p0 op @in. */
template <int TYPE, int OP>
__device__ static void combine(const struct dm_unpack_launch &l, unsigned long long p0, uint64_t in)
{
	unsigned char *d = l.dst + p0;

	switch (elem_size(TYPE)) {
	case 2:
		*(uint16_t *)d = (uint16_t)apply<TYPE, OP>(*(uint16_t *)d, in, l.avg_n);
		break;
	case 4:
		*(uint32_t *)d = (uint32_t)apply<TYPE, OP>(*(uint32_t *)d, in, l.avg_n);
		break;
	default:
		*(uint64_t *)d = apply<TYPE, OP>(*(uint64_t *)d, in, l.avg_n);
	}
}

/* Two 2-byte elements in a 32-bit word, op'ed each. */
template <int TYPE, int OP> __device__ static uint32_t apply_pair(uint32_t a, uint32_t b,
								    unsigned int n)
{
	return (uint32_t)(apply<TYPE, OP>(a & 0xffff, b & 0xffff, n) & 0xffff) |
	       (uint32_t)apply<TYPE, OP>(a >> 16, b >> 16, n) << 16;
}

/* A 16-byte word of elements: a op b, element by element. */
template <int TYPE, int OP> __device__ static uint4 apply16(uint4 a, uint4 b, unsigned int n)
{
	switch (elem_size(TYPE)) {
	case 2:
		return make_uint4(apply_pair<TYPE, OP>(a.x, b.x, n), apply_pair<TYPE, OP>(a.y, b.y, n),
				  apply_pair<TYPE, OP>(a.z, b.z, n), apply_pair<TYPE, OP>(a.w, b.w, n));
	case 4:
		return make_uint4(apply<TYPE, OP>(a.x, b.x, n), apply<TYPE, OP>(a.y, b.y, n),
				  apply<TYPE, OP>(a.z, b.z, n), apply<TYPE, OP>(a.w, b.w, n));
	default: {
		uint64_t lo = apply<TYPE, OP>(a.x | (uint64_t)a.y << 32, b.x | (uint64_t)b.y << 32, n);
		uint64_t hi = apply<TYPE, OP>(a.z | (uint64_t)a.w << 32, b.z | (uint64_t)b.w << 32, n);

		return make_uint4((uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi,
				  (uint32_t)(hi >> 32));
	}
	}
}

/*
 * Reduce: a fragment's group takes the elements whose first byte is in it
 * and that end within the batch: the destination's whole words among them
 * 16 bytes at a time, the others element by element. Block 0 also takes
 * an element begun in an earlier batch (first bytes in the carry) and
 * saves the first bytes of one that goes on in the next.
 */
template <int TYPE, int OP>
__device__ static void reduce(const struct dm_unpack_launch &l, const struct dm_unpack_frag *f)
{
	constexpr unsigned int es = elem_size(TYPE);
	unsigned long long tail = l.end - l.end % es;
	uintptr_t d = (uintptr_t)l.dst;

	if (blockIdx.x == 0 && threadIdx.x == 0) {
		unsigned long long first = l.start - l.start % es;

		if (first < l.start && first + es <= l.end)
			combine<TYPE, OP>(l, first, element<es>(l, f, 0, first));
		if (tail < l.end) {
			unsigned int i = 0;

			for (unsigned long long p = tail; p < l.end; p++)
				l.carry_out[p - tail] = p < l.start ? l.carry_in[p - tail] :
								      byte_at(l, f, &i, p);
		}
	}
	GROUP_LOOP(l, i, lane) {
		unsigned long long lo = f[i].pos, hi = f[i].pos + f[i].len, g = l.group;
		unsigned long long e0 = (lo + es - 1) / es * es;

		if (hi > tail)
			hi = tail;
		/* the whole words: [w0, w1) of the stream */
		unsigned long long w0 = ((d + e0 + 15) & ~15ull) - d, w1 = ((d + hi) & ~15ull) - d;

		if (hi <= e0 || w1 <= w0)
			w0 = w1 = hi;
		for (unsigned long long p = e0 + lane * es; p < w0; p += g * es)
			combine<TYPE, OP>(l, p, element<es>(l, f, i, p));
		for (unsigned long long p = w1 + lane * es; p < hi; p += g * es)
			combine<TYPE, OP>(l, p, element<es>(l, f, i, p));

		const unsigned char *s = l.base + f[i].src + (w0 - lo);
		uint4 *dw = (uint4 *)(l.dst + w0);
		unsigned int words = (unsigned int)((w1 - w0) / 16);

		for (unsigned int k = lane; k < words; k += g)
			dw[k] = apply16<TYPE, OP>(dw[k], load16(s + 16 * k), l.avg_n);
	}
}

/* Every type and operation: the launch picks its case. */
__device__ static void reduce_any(const struct dm_unpack_launch &l, const struct dm_unpack_frag *f)
{
#define OPS(T)									\
	case T * 8 + DM_UNPACK_SUM: reduce<T, DM_UNPACK_SUM>(l, f); break;	\
	case T * 8 + DM_UNPACK_PROD: reduce<T, DM_UNPACK_PROD>(l, f); break;	\
	case T * 8 + DM_UNPACK_MIN: reduce<T, DM_UNPACK_MIN>(l, f); break;	\
	case T * 8 + DM_UNPACK_MAX: reduce<T, DM_UNPACK_MAX>(l, f); break;	\
	case T * 8 + DM_UNPACK_AVG: reduce<T, DM_UNPACK_AVG>(l, f); break;

	switch (l.type * 8 + l.op) {
	OPS(DM_UNPACK_INT32)
	OPS(DM_UNPACK_FP16)
	OPS(DM_UNPACK_BF16)
	OPS(DM_UNPACK_FP32)
	OPS(DM_UNPACK_FP64)
	}
#undef OPS
}

/*
 * Short fragments give a thread one word or two, so speed comes from
 * threads in flight: six blocks an SM, as many as the simplest case would
 * get, which caps the registers.
 */
extern "C" __global__ void __launch_bounds__(DM_UNPACK_THREADS, 6)
devmem_unpack_reduce(struct dm_unpack_launch l, const struct dm_unpack_frag *f,
		     const __grid_constant__ struct dm_unpack_inline in)
{
	reduce_any(l, f ? f : in.f);
}
