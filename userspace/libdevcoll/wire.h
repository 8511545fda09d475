/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire format: each data chunk's header and the set-up messages, with
 * their signing and checks (wire.c, pure functions).
 */
#ifndef DEVCOLL_WIRE_H
#define DEVCOLL_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "sha256.h"

#define WIRE_MAGIC 0xdc011ec7u

enum kind {
	K_ALLREDUCE = 1, K_REDUCE, K_BCAST, K_ALLGATHER, K_ALLGATHERV, K_RSCATTER,
	K_ALLTOALL, K_ALLTOALLV, K_GATHER, K_SCATTER, K_BARRIER, K_SPLIT, K_SEND, K_RECV,
	K_ABORT,	/* a rank failed: count = -error, tag = the rank that failed
			 * first, then @len bytes of its message */
};

/* Each chunk on the wire: this header, then @len payload bytes. */
struct wire_hdr {
	uint32_t magic;
	uint32_t seq;		/* collective sequence number (p2p: per pair) */
	uint8_t kind, op, dtype, flags;
	uint32_t step;		/* message number within the collective */
	uint64_t count;		/* the collective's count */
	uint64_t total;		/* bytes of the whole message */
	uint64_t off;		/* of this chunk within the message */
	uint32_t len;
	uint32_t tag;
};

/* wire.c: the set-up handshakes (a challenge, an answer with the HMAC of
 * the job's key) and the data headers' check */
#define AUTH_MAGIC 0xdc0a7431u
#define DC_KEY_LEN 32
#define DC_NONCE_LEN 16
#define DC_ABORT_MSG_MAX 4096

/* What the accepting side sends first. */
struct dc_challenge {
	uint32_t magic;
	uint32_t kind;		/* DC_CH_* */
	uint8_t nonce[DC_NONCE_LEN];
};
enum { DC_CH_REG = 1, DC_CH_HELLO = 2 };

/* A rank's registration at rank 0's rendezvous. */
struct dc_reg {
	uint32_t magic, rank, size, pad;
	uint8_t cnonce[DC_NONCE_LEN];	/* the table's MAC covers it */
	struct sockaddr_storage sa;	/* where the rank listens */
	uint8_t mac[DEVTCP_SHA256_LEN];
};
/* Rank 0's answer: this, the endpoints, their MAC. */
struct dc_table_hdr {
	uint32_t magic, size;
	uint64_t id;			/* the communicator's */
};
/* The first message of a connection between ranks. */
struct dc_hello {
	uint32_t magic, from, idx, to;
	uint64_t id;
	uint8_t mac[DEVTCP_SHA256_LEN];
};
struct dc_hello_want {
	uint64_t id;
	int rank, size;
	unsigned int nconns;
};

void dc_reg_sign(struct dc_reg *r, const uint8_t key[DC_KEY_LEN], const uint8_t nonce[DC_NONCE_LEN]);
/* 0 when @buf (@len bytes) is a registration to a world of @size signed
 * with @key over @nonce (in @out); else -EPROTO or -EACCES and @why. */
int dc_reg_check(const void *buf, size_t len, const uint8_t key[DC_KEY_LEN],
		 const uint8_t nonce[DC_NONCE_LEN], int size, struct dc_reg *out, const char **why);
void dc_hello_sign(struct dc_hello *h, const uint8_t key[DC_KEY_LEN],
		   const uint8_t nonce[DC_NONCE_LEN]);
int dc_hello_check(const void *buf, size_t len, const uint8_t key[DC_KEY_LEN],
		   const uint8_t nonce[DC_NONCE_LEN], const struct dc_hello_want *want,
		   struct dc_hello *out, const char **why);
void dc_table_mac(const uint8_t key[DC_KEY_LEN], const uint8_t cnonce[DC_NONCE_LEN],
		  const struct dc_table_hdr *t, const struct sockaddr_storage *eps,
		  uint8_t out[DEVTCP_SHA256_LEN]);
/* 0 when a received data header is well-formed; else -EPROTO and @why. */
int dc_wire_hdr_check(const struct wire_hdr *h, const char **why);

#endif
