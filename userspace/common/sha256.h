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

#define DEVTCP_SHA256_LEN 32

struct devtcp_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
};

void devtcp_sha256_init(struct devtcp_sha256 *s);
void devtcp_sha256_update(struct devtcp_sha256 *s, const void *data, size_t n);
void devtcp_sha256_final(struct devtcp_sha256 *s, uint8_t out[DEVTCP_SHA256_LEN]);

struct devtcp_hmac_sha256 {
	struct devtcp_sha256 inner, outer;
};

void devtcp_hmac_sha256_init(struct devtcp_hmac_sha256 *m, const void *key, size_t klen);
void devtcp_hmac_sha256_update(struct devtcp_hmac_sha256 *m, const void *data, size_t n);
void devtcp_hmac_sha256_final(struct devtcp_hmac_sha256 *m, uint8_t out[DEVTCP_SHA256_LEN]);
/* Compares two MACs in time independent of where they differ. */
bool devtcp_mac_equal(const void *a, const void *b, size_t n);

#endif
