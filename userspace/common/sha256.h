/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), small and dependency
 * free: libdevcoll and btl/devtcp prove knowledge of a job's secret with
 * them. Compiled into each (hidden), never exported.
 */
#ifndef DEVTCP_SHA256_H
#define DEVTCP_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);

struct hmac_sha256 {
	struct sha256 inner, outer;
};

void hmac_sha256_init(struct hmac_sha256 *m, const void *key, size_t klen);
void hmac_sha256_update(struct hmac_sha256 *m, const void *data, size_t n);
void hmac_sha256_final(struct hmac_sha256 *m, uint8_t out[SHA256_LEN]);
/* Compares two MACs in time independent of where they differ. */
bool mac_equal(const void *a, const void *b, size_t n);

#endif
