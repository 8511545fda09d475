// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devmem_unpack on memory the CPU reads (host dma-bufs), and the reference
 * the GPU kernels (gpu/unpack.cu) are compared with bit for bit: the same
 * launch, the same arithmetic. fp16 and bf16 are converted to float,
 * combined there and rounded back to nearest even; integer sums and
 * products wrap; min and max keep the first operand unless the second
 * compares below (above) it.
 */
#include <string.h>

#include "internal.h"
#include "unpack_abi.h"

float dm_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
	float f;

	if (exp == 0x1f) {
		x = sign | 0x7f800000 | (mant << 13);
	} else if (exp) {
		x = sign | ((exp + 112) << 23) | (mant << 13);
	} else if (!mant) {
		x = sign;
	} else {
		/* subnormal: normalise it */
		exp = 113;
		while (!(mant & 0x400)) {
			mant <<= 1;
			exp--;
		}
		x = sign | (exp << 23) | ((mant & 0x3ff) << 13);
	}
	memcpy(&f, &x, sizeof(f));
	return f;
}

/* Rounds @rem (the bits shifted out, @shift of them) to nearest even into @h. */
static uint32_t round_even(uint32_t h, uint32_t rem, unsigned int shift)
{
	uint32_t half = 1u << (shift - 1);

	return h + (rem > half || (rem == half && (h & 1)));
}

uint16_t dm_float_to_half(float f)
{
	uint32_t x, sign, mant;
	int exp, e;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	mant = x & 0x7fffff;
	exp = (x >> 23) & 0xff;
	if (exp == 0xff)
		return sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0);
	e = exp - 127 + 15;
	if (e >= 31)
		return sign | 0x7c00;
	if (e <= 0) {
		unsigned int shift = 14 - e;

		if (shift > 24)
			return sign;
		mant |= 0x800000;
		return sign | round_even(mant >> shift, mant & ((1u << shift) - 1), shift);
	}
	/* a carry out of the mantissa moves into the exponent, up to infinity */
	return sign | round_even(((uint32_t)e << 10) | (mant >> 13), mant & 0x1fff, 13);
}

float dm_bf16_to_float(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

uint16_t dm_float_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7fffffff) > 0x7f800000)
		return (x >> 16) | 0x40;	/* NaN stays NaN */
	return (x + 0x7fff + ((x >> 16) & 1)) >> 16;
}

#define OP(a, b, o, n)							\
	((o) == DM_UNPACK_SUM ? (a) + (b) :				\
	 (o) == DM_UNPACK_PROD ? (a) * (b) :				\
	 (o) == DM_UNPACK_MIN ? ((b) < (a) ? (b) : (a)) :		\
	 (o) == DM_UNPACK_MAX ? ((b) > (a) ? (b) : (a)) : ((a) + (b)) / (n))

/* dst (at stream offset @p0) = dst op the element in @e. */
static void combine(const struct dm_unpack_launch *l, uint64_t p0, const unsigned char *e)
{
	unsigned char *d = l->dst + p0;

	switch (l->type) {
	case DM_UNPACK_INT32: {
		uint32_t a, b;
		int32_t r;

		memcpy(&a, d, 4);
		memcpy(&b, e, 4);
		if (l->op == DM_UNPACK_MIN || l->op == DM_UNPACK_MAX)
			r = OP((int32_t)a, (int32_t)b, l->op, 1);
		else if (l->op == DM_UNPACK_AVG)
			r = (int32_t)(a + b) / (int32_t)l->avg_n;
		else
			r = (int32_t)(uint32_t)OP(a, b, l->op, 1u);
		memcpy(d, &r, 4);
		break;
	}
	case DM_UNPACK_FP32: {
		float a, b, r;

		memcpy(&a, d, 4);
		memcpy(&b, e, 4);
		r = OP(a, b, l->op, (float)l->avg_n);
		memcpy(d, &r, 4);
		break;
	}
	case DM_UNPACK_FP64: {
		double a, b, r;

		memcpy(&a, d, 8);
		memcpy(&b, e, 8);
		r = OP(a, b, l->op, (double)l->avg_n);
		memcpy(d, &r, 8);
		break;
	}
	default: {
		bool bf = l->type == DM_UNPACK_BF16;
		uint16_t ha, hb, hr;
		float a, b;

		memcpy(&ha, d, 2);
		memcpy(&hb, e, 2);
		a = bf ? dm_bf16_to_float(ha) : dm_half_to_float(ha);
		b = bf ? dm_bf16_to_float(hb) : dm_half_to_float(hb);
		a = OP(a, b, l->op, (float)l->avg_n);
		hr = bf ? dm_float_to_bf16(a) : dm_float_to_half(a);
		memcpy(d, &hr, 2);
		break;
	}
	}
}

void dm_unpack_cpu(const struct dm_unpack_launch *l, const struct dm_unpack_frag *f)
{
	uint64_t es = l->es, p0 = l->start - l->start % es;
	unsigned char e[8];
	unsigned int k = (unsigned int)(l->start - p0);

	if (l->op == DM_UNPACK_COPY) {
		for (uint32_t i = 0; i < l->n; i++)
			memcpy(l->dst + f[i].pos, l->base + f[i].src, f[i].len);
		return;
	}
	memcpy(e, l->carry_in, k);
	for (uint32_t i = 0; i < l->n; i++) {
		for (uint32_t j = 0; j < f[i].len; j++) {
			e[k++] = l->base[f[i].src + j];
			if (k == es) {
				combine(l, p0, e);
				p0 += es;
				k = 0;
			}
		}
	}
	memcpy(l->carry_out, e, k);
}
