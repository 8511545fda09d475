/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency
 * free: btl/devtcp authenticates its connections with them and links no
 * crypto library (neither Open MPI nor the VM's root provides one to it).
 */
#ifndef BTL_DEVTCP_SHA256_H
#define BTL_DEVTCP_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define DEVTCP_SHA256_LEN 32

struct devtcp_sha256 {
	uint32_t h[8];
	uint64_t bytes;
	unsigned char block[64];
	size_t used;
};

void devtcp_sha256_init(struct devtcp_sha256 *s);
void devtcp_sha256_update(struct devtcp_sha256 *s, const void *data, size_t len);
void devtcp_sha256_final(struct devtcp_sha256 *s, uint8_t out[DEVTCP_SHA256_LEN]);

struct devtcp_hmac {
	struct devtcp_sha256 inner, outer;
};

void devtcp_hmac_init(struct devtcp_hmac *h, const void *key, size_t key_len);
void devtcp_hmac_update(struct devtcp_hmac *h, const void *data, size_t len);
void devtcp_hmac_final(struct devtcp_hmac *h, uint8_t out[DEVTCP_SHA256_LEN]);

/* Whether a and b's len bytes are equal, in a time that does not depend
 * on where they differ. */
int devtcp_equal_ct(const void *a, const void *b, size_t len);

#endif
