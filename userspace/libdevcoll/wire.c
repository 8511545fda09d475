// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Everything a peer, or a stranger, sends at set-up and each data header,
 * built and checked by pure functions (fuzz/ drives them with any bytes).
 * Set-up messages answer a challenge: the side that accepts sends a fresh
 * nonce, the side that connects proves knowledge of the job's key with an
 * HMAC over it and the message, so neither the key nor a replayable answer
 * is ever on the wire. A connection fails its check (and is dropped) unless
 * its message is exactly ours, for this communicator, from a job member.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include "internal.h"

/* The HMAC of @label, @nonce and @len bytes of @msg under @key. */
static void mac_of(const uint8_t key[DC_KEY_LEN], const char *label, const uint8_t *nonce,
		   const void *msg, size_t len, uint8_t out[DEVTCP_SHA256_LEN])
{
	struct devtcp_hmac_sha256 m;

	devtcp_hmac_sha256_init(&m, key, DC_KEY_LEN);
	devtcp_hmac_sha256_update(&m, label, strlen(label) + 1);
	devtcp_hmac_sha256_update(&m, nonce, DC_NONCE_LEN);
	devtcp_hmac_sha256_update(&m, msg, len);
	devtcp_hmac_sha256_final(&m, out);
}

/* A signed set-up message: the label its MAC covers, where the MAC is,
 * and what to say when it is not one. */
struct signed_msg {
	const char *label;
	size_t size, mac_at;
	const char *wrong_len, *bad_magic, *no_secret;
};

static const struct signed_msg REG = {
	"devcoll registration", sizeof(struct dc_reg), offsetof(struct dc_reg, mac),
	"not a registration (wrong length)", "not a registration (bad magic)",
	"a registration without the job's secret",
};
static const struct signed_msg HELLO = {
	"devcoll hello", sizeof(struct dc_hello), offsetof(struct dc_hello, mac),
	"not a hello (wrong length)", "not a hello (bad magic)",
	"a hello without the job's secret",
};

static void sign(const struct signed_msg *k, void *msg, const uint8_t key[DC_KEY_LEN],
		 const uint8_t nonce[DC_NONCE_LEN])
{
	mac_of(key, k->label, nonce, msg, k->mac_at, (uint8_t *)msg + k->mac_at);
}

/* Copies @buf (@len bytes) into @out if it is a message of @k that starts
 * with AUTH_MAGIC and carries the MAC of @key over @nonce: 0, else -EPROTO
 * or -EACCES and @why. */
static int check_signed(const struct signed_msg *k, const void *buf, size_t len,
			const uint8_t key[DC_KEY_LEN], const uint8_t nonce[DC_NONCE_LEN],
			void *out, const char **why)
{
	uint8_t mac[DEVTCP_SHA256_LEN];
	uint32_t magic;

	if (len != k->size) {
		*why = k->wrong_len;
		return -EPROTO;
	}
	memcpy(out, buf, k->size);
	memcpy(&magic, out, sizeof(magic));
	if (magic != AUTH_MAGIC) {
		*why = k->bad_magic;
		return -EPROTO;
	}
	memcpy(mac, (uint8_t *)out + k->mac_at, sizeof(mac));
	sign(k, out, key, nonce);
	if (!devtcp_mac_equal(mac, (uint8_t *)out + k->mac_at, DEVTCP_SHA256_LEN)) {
		*why = k->no_secret;
		return -EACCES;
	}
	return 0;
}

void dc_reg_sign(struct dc_reg *r, const uint8_t key[DC_KEY_LEN], const uint8_t nonce[DC_NONCE_LEN])
{
	sign(&REG, r, key, nonce);
}

int dc_reg_check(const void *buf, size_t len, const uint8_t key[DC_KEY_LEN],
		 const uint8_t nonce[DC_NONCE_LEN], int size, struct dc_reg *out, const char **why)
{
	int ret = check_signed(&REG, buf, len, key, nonce, out, why);

	if (ret)
		return ret;
	if ((int)out->size != size || out->rank == 0 || out->rank >= (uint32_t)size) {
		*why = "a registration for another world size or rank";
		return -EPROTO;
	}
	if (out->sa.ss_family != AF_INET && out->sa.ss_family != AF_INET6) {
		*why = "a registration with no IPv4 or IPv6 endpoint";
		return -EPROTO;
	}
	return 0;
}

void dc_hello_sign(struct dc_hello *h, const uint8_t key[DC_KEY_LEN],
		   const uint8_t nonce[DC_NONCE_LEN])
{
	sign(&HELLO, h, key, nonce);
}

int dc_hello_check(const void *buf, size_t len, const uint8_t key[DC_KEY_LEN],
		   const uint8_t nonce[DC_NONCE_LEN], const struct dc_hello_want *want,
		   struct dc_hello *out, const char **why)
{
	int ret = check_signed(&HELLO, buf, len, key, nonce, out, why);

	if (ret)
		return ret;
	if (out->id != want->id || out->to != (uint32_t)want->rank) {
		*why = "a hello for another communicator";
		return -EPROTO;
	}
	if (out->from <= (uint32_t)want->rank || out->from >= (uint32_t)want->size ||
	    out->idx >= want->nconns) {
		*why = "a hello from no higher rank of this communicator";
		return -EPROTO;
	}
	return 0;
}

void dc_table_mac(const uint8_t key[DC_KEY_LEN], const uint8_t cnonce[DC_NONCE_LEN],
		  const struct dc_table_hdr *t, const struct sockaddr_storage *eps,
		  uint8_t out[DEVTCP_SHA256_LEN])
{
	struct devtcp_hmac_sha256 m;

	devtcp_hmac_sha256_init(&m, key, DC_KEY_LEN);
	devtcp_hmac_sha256_update(&m, "devcoll table", sizeof("devcoll table"));
	devtcp_hmac_sha256_update(&m, cnonce, DC_NONCE_LEN);
	devtcp_hmac_sha256_update(&m, t, sizeof(*t));
	devtcp_hmac_sha256_update(&m, eps, t->size * sizeof(*eps));
	devtcp_hmac_sha256_final(&m, out);
}

int dc_wire_hdr_check(const struct wire_hdr *h, const char **why)
{
	if (h->magic != WIRE_MAGIC) {
		*why = "garbage (bad magic)";
		return -EPROTO;
	}
	if (h->kind < K_ALLREDUCE || h->kind > K_ABORT) {
		*why = "a header of no known kind";
		return -EPROTO;
	}
	if (h->kind == K_ABORT) {
		if (h->len > DC_ABORT_MSG_MAX) {
			*why = "an abort with an overlong message";
			return -EPROTO;
		}
		return 0;
	}
	if (h->off > h->total || h->len > h->total - h->off) {
		*why = "a chunk outside its message";
		return -EPROTO;
	}
	return 0;
}
