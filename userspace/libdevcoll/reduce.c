// SPDX-License-Identifier: LGPL-2.1-or-later
/* Element-wise reductions for every type and operation: dst = a OP b, where
 * @a may be @dst (in place) and @b overlaps neither (restrict). Out of place
 * saves the copy of @a into @dst: one pass over the memory instead of two. */
#include <string.h>
#include "internal.h"
#ifdef __x86_64__
#include <immintrin.h>
#endif

/* fp16 and bf16 go through float, rounding to nearest even. */
static inline float h2f(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
	float f;

	if (e == 0x1f)
		u = s | 0x7f800000 | (m << 13);
	else if (e)
		u = s | ((e + 112) << 23) | (m << 13);
	else if (!m)
		u = s;
	else {
		/* subnormal: normalise */
		e = 113;
		while (!(m & 0x400)) {
			m <<= 1;
			e--;
		}
		u = s | (e << 23) | ((m & 0x3ff) << 13);
	}
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t f2h(float f)
{
	uint32_t u, s, m;
	int e;

	memcpy(&u, &f, 4);
	s = (u >> 16) & 0x8000;
	e = (int)((u >> 23) & 0xff) - 127 + 15;
	m = u & 0x7fffff;
	if (((u >> 23) & 0xff) == 0xff)
		return (uint16_t)(s | 0x7c00 | (m ? 0x200 | (m >> 13) : 0));
	if (e >= 0x1f)
		return (uint16_t)(s | 0x7c00);
	if (e <= 0) {
		uint32_t shift, r, half;

		if (e < -10)
			return (uint16_t)s;
		m |= 0x800000;
		shift = (uint32_t)(14 - e);
		r = m >> shift;
		half = 1u << (shift - 1);
		if ((m & ((half << 1) - 1)) > half || ((m & ((half << 1) - 1)) == half && (r & 1)))
			r++;
		return (uint16_t)(s | r);
	}
	{
		uint32_t r = ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1fff;

		if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
			r++;	/* may carry into the exponent: correct, up to inf */
		return (uint16_t)(s | r);
	}
}

static inline float b2f(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Branch-free, so that the loops around it vectorise. */
static inline uint16_t f2b(float f)
{
	uint32_t u, rounded, quiet;

	memcpy(&u, &f, 4);
	rounded = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
	quiet = (u >> 16) | 0x40;	/* NaN stays NaN, quiet */
	return (uint16_t)((u & 0x7fffffff) > 0x7f800000 ? quiet : rounded);
}

#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))
#define MIN(a, b) ((b) < (a) ? (b) : (a))
#define MAX(a, b) ((b) > (a) ? (b) : (a))

/* Integers: sum and product in the unsigned type (wrapping, no UB). */
#define INT_FNS(name, T, U)								\
static void name##_sum(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = (T)((U)p[i] + (U)b[i]); } \
static void name##_prod(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = (T)((U)p[i] * (U)b[i]); } \
static void name##_min(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = MIN(p[i], b[i]); }	\
static void name##_max(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = MAX(p[i], b[i]); }

INT_FNS(i8, int8_t, uint8_t)
INT_FNS(i16, int16_t, uint16_t)
INT_FNS(i32, int32_t, uint32_t)
INT_FNS(i64, int64_t, uint64_t)
INT_FNS(u8, uint8_t, uint8_t)
INT_FNS(u16, uint16_t, uint16_t)
INT_FNS(u32, uint32_t, uint32_t)
INT_FNS(u64, uint64_t, uint64_t)

#define FLT_FNS(name, T)									\
static void name##_sum(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = p[i] + b[i]; }	\
static void name##_prod(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = p[i] * b[i]; }	\
static void name##_min(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = MIN(p[i], b[i]); }	\
static void name##_max(void *d, const void *x, const void *y, size_t n)		\
{ T *a = d; const T *p = x; const T *__restrict b = y; for (size_t i = 0; i < n; i++) a[i] = MAX(p[i], b[i]); }

FLT_FNS(f32, float)
FLT_FNS(f64, double)

#define HALF_FNS(name, TOF, FROMF, OPM)							\
static void name(void *d, const void *x, const void *y, size_t n)			\
{ uint16_t *a = d; const uint16_t *p = x; const uint16_t *__restrict b = y;			\
  for (size_t i = 0; i < n; i++) { float u = TOF(p[i]), v = TOF(b[i]); a[i] = FROMF(OPM(u, v)); } }

HALF_FNS(f16_sum, h2f, f2h, SUM)
HALF_FNS(f16_prod, h2f, f2h, PROD)
HALF_FNS(f16_min, h2f, f2h, MIN)
HALF_FNS(f16_max, h2f, f2h, MAX)
HALF_FNS(bf16_sum, b2f, f2b, SUM)
HALF_FNS(bf16_prod, b2f, f2b, PROD)
HALF_FNS(bf16_min, b2f, f2b, MIN)
HALF_FNS(bf16_max, b2f, f2b, MAX)

#ifdef __x86_64__
/*
 * fp16 and bf16 eight at a time, where the CPU has AVX2 (and F16C, which
 * every AVX2 CPU has): the scalar conversions above made an fp16 sum run at
 * 0.5 GB/s and a bf16 one at 3, slower than the network; these run at 27
 * and 10. The results are those of the scalar loops bit for bit (tests/
 * t_reduce.c): the same float operation, and conversions that round to
 * nearest even and keep NaNs NaN the same way (which of two NaNs a sum
 * passes on is left open, as in IEEE 754). The scalar loop takes the tail.
 */
#define TARGET __attribute__((target("avx2,f16c")))

/* bf16 to float is a shift by 16: interleaving zeros below each value
 * does it, eight of the sixteen at a time (in-lane order, which
 * bf16_pack() undoes) */
TARGET static inline __m256 bf16_lo(__m256i w)
{
	return _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), w));
}

TARGET static inline __m256 bf16_hi(__m256i w)
{
	return _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), w));
}

/* f2b(): the upper 16 bits rounded to nearest even, NaN kept quiet */
TARGET static inline __m256i bf16_round(__m256 f)
{
	__m256i u = _mm256_castps_si256(f);
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
	__m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb,
					    _mm256_set1_epi32(0x7fff))), 16);
	__m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
	__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
					 _mm256_set1_epi32(0x7f800000));

	return _mm256_blendv_epi8(rounded, quiet, nan);
}

TARGET static inline __m256i bf16_pack(__m256 lo, __m256 hi)
{
	return _mm256_packus_epi32(bf16_round(lo), bf16_round(hi));
}

TARGET static inline __m256 f16_load(const uint16_t *s)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)s));
}

TARGET static inline void f16_store(uint16_t *d, __m256 f)
{
	_mm_storeu_si128((__m128i *)d, _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
}

/* MIN(u, v) is v < u ? v : u, which is _mm256_min_ps(v, u), NaNs included */
#define VSUM(u, v) _mm256_add_ps(u, v)
#define VPROD(u, v) _mm256_mul_ps(u, v)
#define VMIN(u, v) _mm256_min_ps(v, u)
#define VMAX(u, v) _mm256_max_ps(v, u)

#define VHALF_FN(name, T, VOP)								\
TARGET static void name##_avx2(void *d, const void *x, const void *y, size_t n)		\
{ uint16_t *a = d; const uint16_t *p = x, *b = y; size_t i = 0;				\
  T##_LOOP(VOP)										\
  name(a + i, p + i, b + i, n - i); }

#define f16_LOOP(VOP)									\
  for (; i + 8 <= n; i += 8) f16_store(a + i, VOP(f16_load(p + i), f16_load(b + i)));
#define bf16_LOOP(VOP)									\
  for (; i + 16 <= n; i += 16) {							\
	__m256i u = _mm256_loadu_si256((const __m256i *)(p + i));			\
	__m256i v = _mm256_loadu_si256((const __m256i *)(b + i));			\
	_mm256_storeu_si256((__m256i *)(a + i), bf16_pack(VOP(bf16_lo(u), bf16_lo(v)),	\
							  VOP(bf16_hi(u), bf16_hi(v))));	\
  }

#define VHALF_FNS(T)									\
	VHALF_FN(T##_sum, T, VSUM) VHALF_FN(T##_prod, T, VPROD)				\
	VHALF_FN(T##_min, T, VMIN) VHALF_FN(T##_max, T, VMAX)

VHALF_FNS(f16)
VHALF_FNS(bf16)

#define VROW(p) { p##_sum_avx2, p##_prod_avx2, p##_min_avx2, p##_max_avx2, p##_sum_avx2 }
static const reduce_fn half_avx2[2][DEVCOLL_NOPS] = { VROW(f16), VROW(bf16) };

/* reads what libgcc's constructor found (cheap; the init is idempotent) */
static bool have_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}
#endif

#define ROW(p) { p##_sum, p##_prod, p##_min, p##_max, p##_sum }
static const reduce_fn table[DEVCOLL_NTYPES][DEVCOLL_NOPS] = {
	ROW(i8), ROW(i16), ROW(i32), ROW(i64), ROW(u8), ROW(u16), ROW(u32), ROW(u64),
	ROW(f16), ROW(bf16), ROW(f32), ROW(f64),
};

reduce_fn dc_reduce_fn_scalar(enum devcoll_dtype t, enum devcoll_op op)
{
	if ((unsigned int)t >= DEVCOLL_NTYPES || (unsigned int)op >= DEVCOLL_NOPS)
		return NULL;
	return table[t][op];
}

reduce_fn dc_reduce_fn(enum devcoll_dtype t, enum devcoll_op op)
{
#ifdef __x86_64__
	if (have_avx2() && (t == DEVCOLL_FP16 || t == DEVCOLL_BF16) && (unsigned int)op < DEVCOLL_NOPS)
		return half_avx2[t == DEVCOLL_BF16][op];
#endif
	return dc_reduce_fn_scalar(t, op);
}

/* avg: the reduction sums; the result is divided by the world size. */
void dc_avg_finish(void *buf, size_t n, enum devcoll_dtype t, int size)
{
	size_t i;

#define DIV(T) do { T *a = buf; for (i = 0; i < n; i++) a[i] = (T)(a[i] / (T)size); } while (0)
	switch (t) {
	case DEVCOLL_INT8: DIV(int8_t); break;
	case DEVCOLL_INT16: DIV(int16_t); break;
	case DEVCOLL_INT32: DIV(int32_t); break;
	case DEVCOLL_INT64: DIV(int64_t); break;
	case DEVCOLL_UINT8: DIV(uint8_t); break;
	case DEVCOLL_UINT16: DIV(uint16_t); break;
	case DEVCOLL_UINT32: DIV(uint32_t); break;
	case DEVCOLL_UINT64: DIV(uint64_t); break;
	case DEVCOLL_FP32: DIV(float); break;
	case DEVCOLL_FP64: DIV(double); break;
	case DEVCOLL_FP16: {
		uint16_t *a = buf;

		for (i = 0; i < n; i++)
			a[i] = f2h(h2f(a[i]) / (float)size);
		break;
	}
	case DEVCOLL_BF16: {
		uint16_t *a = buf;

		for (i = 0; i < n; i++)
			a[i] = f2b(b2f(a[i]) / (float)size);
		break;
	}
	default:
		break;
	}
#undef DIV
}

static const size_t sizes[DEVCOLL_NTYPES] = { 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8 };
static const char *const tnames[DEVCOLL_NTYPES] = {
	"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"fp16", "bf16", "fp32", "fp64",
};
static const char *const onames[DEVCOLL_NOPS] = { "sum", "prod", "min", "max", "avg" };

DEVCOLL_EXPORT size_t devcoll_dtype_size(enum devcoll_dtype t)
{
	return (unsigned int)t < DEVCOLL_NTYPES ? sizes[t] : 0;
}

DEVCOLL_EXPORT const char *devcoll_dtype_name(enum devcoll_dtype t)
{
	return (unsigned int)t < DEVCOLL_NTYPES ? tnames[t] : "?";
}

DEVCOLL_EXPORT const char *devcoll_op_name(enum devcoll_op op)
{
	return (unsigned int)op < DEVCOLL_NOPS ? onames[op] : "?";
}
