/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel says, over netlink, about an interface's addresses and
 * about one TCP socket: the facts STEER's ownership checks rest on.
 */
#ifndef RDPM_NLQUERY_H
#define RDPM_NLQUERY_H

#include <stdbool.h>
#include <stdint.h>

/* The kernel's record of a TCP socket (inet_diag), addresses in network
 * order (IPv4: the first 4 bytes), ports in host order. */
struct rdpm_diag {
	int family;
	uint8_t state;			/* TCP_LISTEN, TCP_ESTABLISHED, ... */
	uint8_t local[16], peer[16];
	uint16_t lport, pport;
	uint32_t ifindex;		/* SO_BINDTOIFINDEX; 0: none */
	uint32_t uid;
	uint32_t inode;			/* 0: no file holds it (closed) */
	int v6only;			/* IPV6_V6ONLY of a listener; -1: not told */
};

/* Which socket to look up: its tuple as it has it (addresses in network
 * order, ports in host order; a listener's peer zero), its device
 * (SO_BINDTOIFINDEX) and its SO_COOKIE. */
struct rdpm_diag_key {
	int family;
	const uint8_t *local, *peer;
	uint16_t lport, pport;
	uint32_t ifindex;
	uint64_t cookie;
};

/*
 * The kernel's record of the TCP socket @k names, in rdpmd's network
 * namespace (NETLINK_SOCK_DIAG, one exact request on a socket kept open:
 * the kernel finds the socket a packet of the tuple would reach and answers
 * only if it has the cookie). 1 found, 0 none (closed, or the tuple now
 * reaches another socket), -errno.
 */
int rdpm_diag_find(const struct rdpm_diag_key *k, struct rdpm_diag *d);

/* Whether address @addr of @family (4 or 16 bytes) is assigned to the
 * interface @ifindex in rdpmd's network namespace (rtnetlink): 1, 0, -errno. */
int rdpm_if_has_addr(int ifindex, int family, const uint8_t *addr);

#endif
