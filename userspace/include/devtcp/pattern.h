/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The payload pattern of devmem(1) and the stream tests: a seeded
 * splitmix64 of each 8-byte word's index, written little-endian, so any
 * byte can be checked from its stream offset alone. Senders and receivers must share this exactly.
 * Also the clock they time throughput with.
 */
#ifndef DEVTCP_PATTERN_H
#define DEVTCP_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Monotonic seconds, for throughput lines. */
static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The pattern at stream offset @off: byte k of word (off / 8). */
static inline void pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t off)
{
	uint64_t blk = UINT64_MAX, w = 0;

	for (size_t i = 0; i < len; i++) {
		if ((off + i) >> 3 != blk) {
			blk = (off + i) >> 3;
			w = splitmix64(seed ^ blk);
			/* Whole aligned words at once. */
			while (!((off + i) & 7) && i + 8 <= len) {
				memcpy(buf + i, &w, 8);
				i += 8;
				blk++;
				w = splitmix64(seed ^ blk);
			}
			if (i == len)
				break;
		}
		buf[i] = (uint8_t)(w >> (((off + i) & 7) * 8));
	}
}

/*
 * Checks @len received bytes at stream offset @off: adds the bytes that
 * differ from the pattern to *@bad and, for the first of all, records its
 * offset in *@first_bad.
 */
static inline void pattern_check(const uint8_t *data, size_t len, uint64_t seed, uint64_t off,
				 uint64_t *bad, uint64_t *first_bad)
{
	uint8_t want[4096];

	while (len) {
		size_t n = len < sizeof(want) ? len : sizeof(want);

		pattern_fill(want, n, seed, off);
		if (memcmp(data, want, n)) {
			for (size_t i = 0; i < n; i++) {
				if (data[i] != want[i] && !(*bad)++)
					*first_bad = off + i;
			}
		}
		off += n;
		data += n;
		len -= n;
	}
}

#endif /* DEVTCP_PATTERN_H */
