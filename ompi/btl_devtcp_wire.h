/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What btl/devtcp reads from the network, and the checks every received
 * hello and frame header passes before anything acts on it. Pure code, no
 * Open MPI: the endpoint calls it, the fuzzer (fuzz/) links it alone.
 */
#ifndef BTL_DEVTCP_WIRE_H
#define BTL_DEVTCP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define DEVTCP_KEY_LEN 32	/* a rank's secret, published in the modex */
#define DEVTCP_NONCE_LEN 16

/*
 * The first bytes on every connection: who opens it, for whom, what it
 * carries, and the proof that the opener knows the acceptor's secret: an
 * HMAC-SHA256 keyed with it over the hello and the TCP connection's two
 * ends, so that it is good for this connection to this rank only.
 */
#define DEVTCP_HELLO_MAGIC 0x64747062u	/* "dtpb" */
#define DEVTCP_WIRE_VERSION 3
enum devtcp_link_kind { DEVTCP_LINK_CTRL = 1, DEVTCP_LINK_DATA = 2 };

struct devtcp_hello {
	uint32_t magic;		/* network order, as every field here */
	uint16_t version;
	uint8_t kind;		/* enum devtcp_link_kind */
	uint8_t index;		/* data link number */
	uint32_t jobid;		/* the opener */
	uint32_t vpid;
	uint32_t to_jobid;	/* the acceptor it means */
	uint32_t to_vpid;
	uint8_t nonce[DEVTCP_NONCE_LEN];	/* random, never checked: it only makes each
					 * hello's MAC unique, so two hellos on identical
					 * tuples (a port reused) differ */
	uint8_t mac[DEVTCP_SHA256_LEN];
};

/* A TCP connection's ends as its opener sees them (addresses and ports in
 * network order; IPv4 in the first 4 bytes of an address). */
struct devtcp_tuple {
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint8_t src[16], dst[16];
	uint16_t src_port, dst_port;
};

/* Before every message on the control connection. */
#define DEVTCP_FRAME_BYE 0x01	/* the sender closes: EOF after it is no error */
#define DEVTCP_FRAME_PUT 0x02	/* a put: ctrl is a struct devtcp_put */

/* The most one put carries (btl_put_limit, btl_rdma_pipeline_frag_size). */
#define DEVTCP_PUT_LIMIT (1ul << 30)
/* A message's control part holds at least a PML header; every one of ob1's
 * is longer than this. */
#define DEVTCP_MIN_CTRL 8

struct devtcp_frame {
	uint8_t tag;		/* the PML's active message tag */
	uint8_t flags;
	uint8_t link;		/* data link carrying data_len bytes */
	uint8_t pad;
	uint32_t ctrl_len;	/* bytes following on this connection */
	uint64_t data_len;	/* bytes following on data link `link` */
};

/* A put's control part: the receiver's registration (the handle its
 * register_mem gave, which the PML passed to the sender) and where in it
 * the bytes go. */
struct devtcp_put {
	uint64_t handle;
	uint64_t to;
};

/* What the receiver allows. */
struct devtcp_limits {
	uint64_t max_ctrl;	/* a message's control part */
	uint64_t max_data;	/* a message's payload */
	int data_links;
	bool (*tag_ok)(uint8_t tag);	/* someone receives messages of the tag */
};

/* A registered region (register_mem): the only memory a put may write. */
struct devtcp_region {
	uint64_t base, len;
	bool remote_write;
};

enum devtcp_verdict {
	DEVTCP_OK,
	DEVTCP_BAD_MAGIC,
	DEVTCP_BAD_VERSION,
	DEVTCP_BAD_KIND,
	DEVTCP_BAD_INDEX,
	DEVTCP_NOT_FOR_ME,
	DEVTCP_BAD_MAC,
	DEVTCP_BAD_FLAGS,
	DEVTCP_BAD_CTRL_LEN,
	DEVTCP_BAD_DATA_LEN,
	DEVTCP_BAD_LINK,
	DEVTCP_UNKNOWN_TAG,
	DEVTCP_PUT_UNREGISTERED,
	DEVTCP_PUT_OUTSIDE,
};

const char *devtcp_verdict_str(enum devtcp_verdict v);

/* The MAC a hello must carry: HMAC-SHA256(key, every field of h but mac,
 * then the tuple). */
void devtcp_hello_mac(const uint8_t key[DEVTCP_KEY_LEN], const struct devtcp_hello *h,
		      const struct devtcp_tuple *t, uint8_t mac[DEVTCP_SHA256_LEN]);

/* Checks a received hello: the format, that it is meant for (jobid, vpid),
 * then its MAC under key for the connection t. */
enum devtcp_verdict devtcp_hello_check(const struct devtcp_hello *h, int data_links,
				       uint32_t jobid, uint32_t vpid,
				       const uint8_t key[DEVTCP_KEY_LEN],
				       const struct devtcp_tuple *t);

/* Checks a received frame header against the limits. */
enum devtcp_verdict devtcp_frame_check(const struct devtcp_frame *f, const struct devtcp_limits *l);

/* Checks that a put of len bytes at p->to lies in region r (NULL: the
 * handle names no registration). */
enum devtcp_verdict devtcp_put_check(const struct devtcp_put *p, uint64_t len,
				     const struct devtcp_region *r);

/*
 * The control connection's reader: a frame, checked, then its control
 * part, in a buffer of at least DEVTCP_CTRL_ROOM bytes that is zero past
 * the part (the PML reads its header's fixed fields without a length).
 * Bytes come from read(ctx, dst, want, done), which adds what there is to
 * *done and returns 1 when want bytes are in, 0 when more must wait, -1
 * on an error or at EOF (errno; 0 for EOF). Pure: the endpoint reads its
 * socket through it, the fuzzer a byte string.
 */
#define DEVTCP_CTRL_ROOM 256	/* ob1's longest fixed header is under 100 */

struct devtcp_ctrl_rx {
	bool in_ctrl;			/* reading a control part, else a frame */
	size_t done;			/* bytes of it in */
	struct devtcp_frame frame;	/* the current message's */
	unsigned char *ctrl;		/* its control part */
	size_t ctrl_cap;
};

enum devtcp_ctrl_event {
	DEVTCP_CTRL_ERROR = -1,	/* read failed or EOF (errno), or no memory */
	DEVTCP_CTRL_LATER,	/* the rest has not arrived */
	DEVTCP_CTRL_REFUSED,	/* a frame failed devtcp_frame_check: *v */
	DEVTCP_CTRL_BYE,	/* the sender closes */
	DEVTCP_CTRL_MESSAGE,	/* frame and control part in; data_len bytes on its link */
	DEVTCP_CTRL_PUT,	/* frame and struct devtcp_put in; data_len bytes on its link */
};

typedef int (*devtcp_read_fn)(void *ctx, void *dst, size_t want, size_t *done);

enum devtcp_ctrl_event devtcp_ctrl_step(struct devtcp_ctrl_rx *rx, const struct devtcp_limits *l,
					devtcp_read_fn read, void *ctx, enum devtcp_verdict *v);
void devtcp_ctrl_free(struct devtcp_ctrl_rx *rx);

#endif
