/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who owns a flow: the TCP socket a client passes with STEER proves which
 * local address and port (and, connected, which peer) are its own, and the
 * rules of different users must not overlap.
 */
#ifndef RDPM_OWNER_H
#define RDPM_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <devmem.h>
#include "rdpm_proto.h"

/* What a client's socket owns, and how to find the socket again. */
struct rdpm_sock {
	struct devmem_flow f;	/* local address and port; a connected socket's peer
				 * (IPv4-mapped as IPv4) */
	bool listening;
	bool dual;		/* an IPv6 wildcard listener that takes IPv4 too */
	/* As the socket has them: its family's addresses, ports in host order */
	int domain;
	uint8_t local[16], peer[16];
	uint16_t lport, pport;
	uint32_t ifindex;	/* SO_BINDTOIFINDEX; 0: no device */
	uint64_t cookie;	/* SO_COOKIE: this socket, never reused */
	uid_t uid;
	ino_t ino;
};

/*
 * Reads @fd, a client's, as a TCP socket of uid @uid in rdpmd's network
 * namespace that listens or is connected, into @s; the kernel's record of
 * the socket must agree with every read. 0, or -errno with the reason in
 * @why.
 */
int rdpm_sock_read(int fd, uid_t uid, struct rdpm_sock *s, char *why, size_t len);

/*
 * Whether the socket @s read still holds what it held then: open, the same
 * state, addresses, device and owner (sock_diag by its tuple and cookie;
 * rdpmd keeps no copy of it). 0; -ENOENT (closed, or its tuple no longer
 * reaches it) or -ESTALE (changed) with the reason in @why; another -errno
 * when the kernel could not be asked.
 */
int rdpm_sock_alive(const struct rdpm_sock *s, char *why, size_t len);

/*
 * Whether flow @f of socket @s may be steered on the NIC @ifindex
 * (@ifname): the socket bound to no device or to that one, the flow's
 * local address one assigned to the NIC in rdpmd's namespace (never a
 * wildcard). 0, or -errno with the reason in @why.
 */
int rdpm_flow_on_nic(const struct rdpm_sock *s, const struct devmem_flow *f, int ifindex,
		     const char *ifname, char *why, size_t len);

/*
 * The flow a STEER with socket @s asks for: the socket's tuple, narrowed
 * by what the request names where the socket leaves a part open (a
 * listener's peer, a wildcard local address). A part the request names
 * that the socket fixes must be the socket's. 0, or -errno with *@why.
 */
int rdpm_sock_flow(const struct rdpm_sock *s, const struct rdpm_steer *req,
		   struct devmem_flow *out, const char **why);

/* @f with IPv4-mapped IPv6 addresses as IPv4 (the packets they match). */
void rdpm_flow_canon(struct devmem_flow *f);

/* Whether a packet could match both @a and @b (0: a wildcard part). */
bool rdpm_flows_overlap(const struct devmem_flow *a, const struct devmem_flow *b);

#endif
