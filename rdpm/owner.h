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

/* What a client's socket owns. */
struct rdpm_sock {
	struct devmem_flow f;	/* local address and port; a connected socket's peer */
	bool listening;
	bool dual;		/* an IPv6 wildcard listener that takes IPv4 too */
};

/*
 * Reads @fd, a client's, as a TCP socket of uid @uid in rdpmd's network
 * namespace that listens or is connected, into @s. 0, or -errno with the
 * reason in @why.
 */
int rdpm_sock_read(int fd, uid_t uid, struct rdpm_sock *s, char *why, size_t len);

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
