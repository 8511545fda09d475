/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SHA-256 and HMAC-SHA-256 (sha256.c). */
#ifndef DEVCOLL_SHA256_H
#define DEVCOLL_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DC_SHA256_LEN 32

struct dc_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
};

void dc_sha256_init(struct dc_sha256 *s);
void dc_sha256_update(struct dc_sha256 *s, const void *data, size_t n);
void dc_sha256_final(struct dc_sha256 *s, uint8_t out[DC_SHA256_LEN]);

struct dc_hmac {
	struct dc_sha256 inner, outer;
};

void dc_hmac_init(struct dc_hmac *m, const void *key, size_t klen);
void dc_hmac_update(struct dc_hmac *m, const void *data, size_t n);
void dc_hmac_final(struct dc_hmac *m, uint8_t out[DC_SHA256_LEN]);
/* Compares two MACs in time independent of where they differ. */
bool dc_mac_equal(const uint8_t *a, const uint8_t *b, size_t n);

#endif
