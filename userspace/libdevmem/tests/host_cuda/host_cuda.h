/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What gpu/unpack.cu takes from CUDA, for building it as CPU code
 * (kernel_host.cc): the qualifiers, the thread's coordinates, uint4 and
 * the intrinsics it calls, each doing on the CPU what it does on the GPU.
 * fp16 and bf16 conversions are unpack_cpu.c's, which round as the GPU's
 * do (to nearest even).
 */
#ifndef HOST_CUDA_H
#define HOST_CUDA_H

#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
#define __grid_constant__

struct host_dim {
	unsigned int x;
};

/* set by the launcher for each thread it runs */
extern thread_local host_dim threadIdx, blockIdx, blockDim, gridDim;

struct alignas(16) uint4 {
	unsigned int x, y, z, w;
};

static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w)
{
	return uint4{ x, y, z, w };
}

template <typename T> static inline T __ldg(const T *p)
{
	return *p;
}

/* hi:lo shifted right by the shift modulo 32, the low word */
static inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift)
{
	return (unsigned int)((((uint64_t)hi << 32) | lo) >> (shift & 31));
}

template <typename To, typename From> static inline To host_bits(From v)
{
	To t;

	static_assert(sizeof(To) == sizeof(From), "same size");
	memcpy(&t, &v, sizeof(t));
	return t;
}

static inline unsigned int __float_as_uint(float f) { return host_bits<unsigned int>(f); }
static inline float __uint_as_float(unsigned int u) { return host_bits<float>(u); }
static inline long long __double_as_longlong(double d) { return host_bits<long long>(d); }
static inline double __longlong_as_double(long long l) { return host_bits<double>(l); }

extern "C" {
float dm_half_to_float(uint16_t h);
uint16_t dm_float_to_half(float f);
float dm_bf16_to_float(uint16_t b);
uint16_t dm_float_to_bf16(float f);
}

/* __half and __nv_bfloat16: 16 bits, made from and turned into their raw
 * forms, as cuda_fp16.h and cuda_bf16.h let the kernels do. */
#define HOST_HALF(name, raw, to_float, from_float, tof, fromf)		\
	struct raw {								\
		unsigned short x;						\
	};									\
	struct name {								\
		unsigned short x;						\
		name(raw r) : x(r.x) {}						\
		operator raw() const { return raw{ x }; }			\
	};									\
	static inline float to_float(name h) { return tof(h.x); }		\
	static inline name from_float(float f) { return name(raw{ fromf(f) }); }

HOST_HALF(__half, __half_raw, __half2float, __float2half_rn, dm_half_to_float, dm_float_to_half)
HOST_HALF(__nv_bfloat16, __nv_bfloat16_raw, __bfloat162float, __float2bfloat16_rn,
	  dm_bf16_to_float, dm_float_to_bf16)

#endif
