// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The vector reductions of fp16 and bf16 (AVX2 and F16C) against the
 * portable loops, bit for bit: every op, random bit patterns (NaNs,
 * infinities and subnormals among them), lengths around the vector widths,
 * unaligned starts, in place and out of place. Where both give a NaN, its
 * payload may differ: IEEE 754 leaves open which operand's NaN an
 * operation passes on, and the compiler may swap the operands of a sum.
 */
#include "common.h"
#include "internal.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint16_t rand16(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint16_t)(rng >> 24);
}

static bool is_nan(enum devcoll_dtype t, uint16_t x)
{
	return t == DEVCOLL_FP16 ? (x & 0x7c00) == 0x7c00 && (x & 0x3ff) :
				   (x & 0x7f80) == 0x7f80 && (x & 0x7f);
}

static bool same(enum devcoll_dtype t, uint16_t x, uint16_t y)
{
	return x == y || (is_nan(t, x) && is_nan(t, y));
}

int main(void)
{
	static const enum devcoll_dtype types[] = { DEVCOLL_FP16, DEVCOLL_BF16 };
	static const size_t lens[] = { 0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 4099 };
	uint16_t a[4200], b[4200], want[4200], got[4200], inplace[4200];
	int fails = 0, cases = 0, vector = 0;

	for (size_t ti = 0; ti < 2; ti++) {
		for (int op = 0; op < DEVCOLL_NOPS; op++) {
			enum devcoll_dtype t = types[ti];
			reduce_fn fast = dc_reduce_fn(t, op), slow = dc_reduce_fn_scalar(t, op);

			vector += fast != slow;
			for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				for (size_t off = 0; off < 3; off++) {
					size_t n = lens[li];

					for (size_t i = 0; i < n + off; i++) {
						a[i] = rand16();
						b[i] = rand16();
					}
					memset(want, 0x55, sizeof(want));
					memset(got, 0x55, sizeof(got));
					slow(want + off, a + off, b + off, n);
					fast(got + off, a + off, b + off, n);
					memcpy(inplace, a, sizeof(a));
					fast(inplace + off, inplace + off, b + off, n);
					cases++;
					for (size_t i = 0; i < sizeof(want) / 2; i++) {
						bool in = i >= off && i < off + n;

						if (!same(t, got[i], want[i]) ||
						    (in && !same(t, inplace[i], want[i])) ||
						    (!in && i < n + off && inplace[i] != a[i])) {
							printf("FAIL: %s %s, %zu elements from %zu: element %zu: "
							       "%#06x OP %#06x gives %#06x (in place %#06x), the "
							       "portable loop %#06x\n", devcoll_dtype_name(t),
							       devcoll_op_name(op), n, off, i, a[i], b[i], got[i],
							       inplace[i], want[i]);
							fails++;
							break;
						}
					}
				}
			}
		}
	}
	if (!vector) {
		return check_skip("this CPU has no AVX2 and F16C: the vector reductions are not "
				  "used here, so there is nothing to compare");
	}
	printf("%d cases of %d vector reductions compared with the portable loops\n", cases, vector);
	return fails ? 1 : 0;
}
