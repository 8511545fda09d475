/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The RDPM wire protocol: rdpmd <-> clients over a Unix-domain
 * SOCK_SEQPACKET socket (default /run/rdpm/rdpm.sock). One message per
 * packet: a fixed header, then a body whose layout the type fixes. All
 * integers are in host byte order (the socket is local); structures have
 * no implicit padding, explicit pad fields must be zero.
 *
 * Requests carry a client-chosen id that the reply (type | RDPM_REPLY) or
 * error (RDPM_ERROR) repeats. Events (RDPM_EVENT) are pushed with id 0.
 * The first request must be HELLO. See Documentation/rdpm.rst.
 */
#ifndef RDPM_PROTO_H
#define RDPM_PROTO_H

#include <stdint.h>

#define RDPM_MAGIC		0x4d504452u	/* "RDPM" in memory on little-endian */
#define RDPM_VERSION		1
#define RDPM_MAX_MSG		1024		/* requests and their replies */
#define RDPM_MAX_STATUS		(256 * 1024)	/* a STATUS reply */
#define RDPM_IFNAMSIZ		16
#define RDPM_MAX_QUEUES		32		/* per binding */
#define RDPM_DEFAULT_SOCKET	"/run/rdpm/rdpm.sock"

struct rdpm_hdr {
	uint32_t magic;		/* RDPM_MAGIC */
	uint16_t version;	/* RDPM_VERSION (HELLO: the sender's highest) */
	uint16_t type;		/* enum rdpm_type */
	uint32_t length;	/* of the whole message, header included */
	uint32_t id;		/* request id, echoed in the reply */
};

enum rdpm_type {
	RDPM_HELLO = 1,		/* rdpm_hello -> rdpm_hello_reply */
	RDPM_REGISTER = 2,	/* rdpm_register + SCM_RIGHTS fd -> rdpm_register_reply */
	RDPM_STEER = 3,		/* rdpm_steer [+ SCM_RIGHTS TCP socket] -> rdpm_steer_reply */
	RDPM_UNSTEER = 4,	/* rdpm_unsteer -> empty */
	RDPM_UNREGISTER = 5,	/* rdpm_unregister -> empty (its flows go too) */
	RDPM_STATUS = 6,	/* rdpm_status -> text (JSON with RDPM_STATUS_JSON) */
	RDPM_DRAIN = 7,		/* rdpm_drain -> empty; admin only */
	RDPM_RELOAD = 8,	/* empty -> empty; admin only */
	RDPM_WINDOW = 9,	/* rdpm_window + SCM_RIGHTS TCP socket -> rdpm_window_reply */
	RDPM_JOIN = 10,		/* rdpm_join -> rdpm_join_reply + SCM_RIGHTS dma-buf fd */
	RDPM_TYPE_MAX = RDPM_JOIN,

	RDPM_ERROR = 0x4000,	/* rdpm_error: a request failed */
	RDPM_EVENT = 0x4001,	/* rdpm_event: pushed, id 0 */
	RDPM_REPLY = 0x8000,	/* or'ed into the request type */
};

struct rdpm_hello {
	uint16_t min_version;	/* lowest version the client speaks */
	uint16_t max_version;	/* highest */
	uint32_t flags;		/* 0 */
};

struct rdpm_hello_reply {
	uint16_t version;	/* chosen; every later header carries it */
	uint16_t pad;
	uint32_t max_msg;	/* RDPM_MAX_MSG */
};

struct rdpm_register {
	char ifname[RDPM_IFNAMSIZ];	/* NUL-terminated, not empty */
	uint32_t nqueues;	/* reserved queues to bind (0: the NIC's default) */
	uint32_t flags;		/* RDPM_REGISTER_PAGE_SHIFT */
};

/* REGISTER flags, bits 0-5: log2 of the RX buffer size the binding asks
 * for (bind-rx's rx-page-size); 0: the system page size. */
#define RDPM_REGISTER_PAGE_SHIFT	0x3fu

struct rdpm_register_reply {
	uint32_t handle;	/* for STEER and UNREGISTER */
	uint32_t dmabuf_id;	/* in the cmsgs of received data */
	uint32_t nqueues;
	uint32_t queues[RDPM_MAX_QUEUES];
};

/*
 * A TCP flow as the receiver sees it (the peer is the source); zero
 * addresses or ports are wildcards.
 *
 * With a TCP socket attached (SCM_RIGHTS), the flow is the socket's: a
 * listening socket's local address (a wildcard if it is bound to none) and
 * port, a connected socket's local and peer address and port. The socket
 * must be the client's uid's own (it made or accepted it) and live in
 * rdpmd's network namespace. Family 0 (and nothing else set) takes the
 * socket's tuple as it is; otherwise what the request names must be the
 * socket's, except where the socket leaves a part open, which the request
 * may narrow (a listener's peer, a wildcard listener's local address; an
 * IPv6 wildcard listener without IPV6_V6ONLY also takes AF_INET).
 *
 * Without a socket the tuple is taken as given (the local port is then
 * required): administrators only (uid 0 and admin_users).
 *
 * Either way, a rule that overlaps a rule of another uid is refused
 * (-EADDRINUSE).
 */
struct rdpm_steer {
	uint32_t handle;	/* a binding of this client */
	uint8_t family;		/* AF_INET (2) or AF_INET6 (10) */
	uint8_t pad[3];
	uint8_t src[16], dst[16];	/* network order; IPv4 in the first 4 */
	uint16_t sport, dport;
};

struct rdpm_steer_reply {
	uint32_t flow;		/* for UNSTEER */
	uint32_t queue;		/* where the flow arrives */
};

struct rdpm_unsteer {
	uint32_t flow;
};

struct rdpm_unregister {
	uint32_t handle;
};

/*
 * Limits the receive window of the client's TCP socket (sent with the
 * message) to what @bytes of the binding's dma-buf hold, as
 * devmem_rx_limit_window() does. rdpmd sets the socket's receive buffer past
 * net.core.rmem_max, which the client could not; @bytes may not exceed the
 * binding's dma-buf, so max_bytes bounds it.
 */
struct rdpm_window {
	uint32_t handle;	/* a binding of this client */
	uint32_t pad;
	uint64_t bytes;		/* the socket's share of the dma-buf */
};

struct rdpm_window_reply {
	int32_t window;		/* the clamp set (0: autotuning stays below it) */
	uint32_t pad;
};

/*
 * A share of the NIC's shared buffer: one dma-buf per NIC, uid and buffer
 * size that rdpmd allocates and binds once, for every process of that user
 * (the ranks of a job on one host). The reply comes with the dma-buf's fd;
 * the handle works as a REGISTER's does (STEER, WINDOW, UNREGISTER). The
 * shares of a buffer's members add up to at most its size; the buffer is
 * unbound when its last member leaves.
 */
struct rdpm_join {
	char ifname[RDPM_IFNAMSIZ];	/* NUL-terminated, not empty */
	uint32_t flags;		/* RDPM_REGISTER_PAGE_SHIFT */
	uint32_t pad;
	uint64_t bytes;		/* this client's share (not 0) */
};

struct rdpm_join_reply {
	uint32_t handle;	/* for STEER, WINDOW and UNREGISTER */
	uint32_t dmabuf_id;	/* in the cmsgs of received data */
	uint32_t nqueues;
	uint32_t queues[RDPM_MAX_QUEUES];
	uint32_t members;	/* clients sharing the buffer, this one included */
	uint64_t size;		/* of the dma-buf (the fd) */
};

#define RDPM_STATUS_JSON	(1u << 0)

struct rdpm_status {
	uint32_t flags;		/* RDPM_STATUS_JSON */
};

struct rdpm_drain {
	char ifname[RDPM_IFNAMSIZ];
};

/* Followed by a NUL-terminated message for people (at least the NUL). */
struct rdpm_error {
	int32_t err;		/* negative errno */
	uint32_t request_type;	/* what failed (0: not parsed) */
};

enum rdpm_event_kind {
	RDPM_EV_LINK_DOWN = 1,	/* the NIC went down: its bindings and flows are gone */
	RDPM_EV_REMOVED = 2,	/* the NIC disappeared */
	RDPM_EV_DRAINED = 3,	/* an administrator drained the NIC */
	RDPM_EV_CONFIG = 4,	/* a reload no longer allows this client the NIC */
};

struct rdpm_event {
	uint32_t event;		/* enum rdpm_event_kind */
	uint32_t handle;	/* the binding dropped (0: all of the NIC) */
	char ifname[RDPM_IFNAMSIZ];
};

#endif
