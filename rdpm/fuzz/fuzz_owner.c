// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of STEER's flow arithmetic (owner.c): a socket's state
 * as rdpm_sock_read leaves it, a request, and a third flow. A flow the
 * request gets (rdpm_sock_flow) must match no packet the socket's own
 * flow does not (an IPv6 wildcard listener without IPV6_V6ONLY owning the
 * port in IPv4 too); overlap must be symmetric, reflexive, and a flow that
 * overlaps the narrowed one must overlap the socket's; canon is idempotent.
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "owner.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

struct input {
	uint8_t flags;
	uint8_t local[16], peer[16];
	uint16_t lport, pport;
	uint8_t req_family;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	uint8_t x_family;
	uint8_t x_src[16], x_dst[16];
	uint16_t x_sport, x_dport;
} __attribute__((packed));

static bool zero(const uint8_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i])
			return false;
	return true;
}

static int family_of(uint8_t b)
{
	return b % 3 == 0 ? 0 : b % 3 == 1 ? AF_INET : AF_INET6;
}

/* One part of @o within the socket's @s: a part @s fixes, @o fixes the same. */
static bool part_in(const uint8_t *s, const uint8_t *o, size_t n)
{
	return zero(s, n) || !memcmp(s, o, n);
}

/* Whether every packet flow @o matches, the socket's flow @s matches. */
static bool covers(const struct devmem_flow *s, bool dual, const struct devmem_flow *o)
{
	size_t n = o->family == AF_INET ? 4 : 16;

	if (o->family != s->family)
		return dual && s->family == AF_INET6 && o->family == AF_INET && zero(s->dst, 16) &&
		       zero(s->src, 16) && !s->sport && s->dport == o->dport;
	return part_in(s->src, o->src, n) && part_in(s->dst, o->dst, n) &&
	       (!s->sport || s->sport == o->sport) && s->dport == o->dport;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct input in = { 0 };
	struct rdpm_sock s = { 0 };
	struct rdpm_steer req = { .handle = 1 };
	struct devmem_flow out, x = { 0 }, c1, c2;
	const char *why;
	size_t n;

	memcpy(&in, data, size < sizeof(in) ? size : sizeof(in));
	/* The socket, as rdpm_sock_read leaves it. */
	s.domain = in.flags & 1 ? AF_INET6 : AF_INET;
	n = s.domain == AF_INET6 ? 16 : 4;
	s.listening = in.flags & 2;
	memcpy(s.local, in.local, n);
	s.lport = in.lport ? in.lport : 1;
	if (!s.listening) {
		memcpy(s.peer, in.peer, n);
		s.pport = in.pport ? in.pport : 1;
		if (zero(s.local, n) || zero(s.peer, n))
			return 0;	/* a connection has both ends */
	}
	s.dual = s.domain == AF_INET6 && s.listening && zero(s.local, 16) && (in.flags & 4);
	s.f.family = s.domain;
	memcpy(s.f.dst, s.local, 16);
	memcpy(s.f.src, s.peer, 16);
	s.f.dport = s.lport;
	s.f.sport = s.pport;
	rdpm_flow_canon(&s.f);

	/* The request, as rdpm_parse lets it through. */
	req.family = (uint8_t)family_of(in.req_family);
	if (req.family) {
		n = req.family == AF_INET6 ? 16 : 4;
		memcpy(req.src, in.src, n);
		memcpy(req.dst, in.dst, n);
		req.sport = in.sport;
		req.dport = in.dport;
	}
	if (!rdpm_sock_flow(&s, &req, &out, &why)) {
		if (!covers(&s.f, s.dual, &out))
			abort();
		if (!rdpm_flows_overlap(&out, &out))
			abort();
	} else if (!why || !why[0]) {
		abort();
	} else {
		out = s.f;
	}

	x.family = family_of(in.x_family) ? family_of(in.x_family) : AF_INET;
	n = x.family == AF_INET6 ? 16 : 4;
	memcpy(x.src, in.x_src, n);
	memcpy(x.dst, in.x_dst, n);
	x.sport = in.x_sport;
	x.dport = in.x_dport;
	if (rdpm_flows_overlap(&out, &x) != rdpm_flows_overlap(&x, &out) ||
	    rdpm_flows_overlap(&s.f, &x) != rdpm_flows_overlap(&x, &s.f))
		abort();
	/* Within the socket's flow (same family): what meets it meets the socket's. */
	c1 = out;
	rdpm_flow_canon(&c1);
	if (c1.family == s.f.family && rdpm_flows_overlap(&out, &x) &&
	    !rdpm_flows_overlap(&s.f, &x))
		abort();
	c2 = c1;
	rdpm_flow_canon(&c2);
	if (memcmp(&c1, &c2, sizeof(c1)))
		abort();
	return 0;
}
