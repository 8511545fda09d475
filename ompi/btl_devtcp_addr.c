/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btl/devtcp addresses: the interface and its address, IPv4 or IPv6, that a
 * rank publishes, and the socket addresses made from a published one.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btl_devtcp.h"

socklen_t devtcp_sockaddr(const struct devtcp_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = port;
		memcpy(&s6->sin6_addr, a->ip, 16);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = port;
	memcpy(&s4->sin_addr, a->ip, 4);
	return sizeof(*s4);
}

const char *devtcp_ntop(const struct devtcp_addr *a, char *buf)
{
	if (!inet_ntop(a->family, a->ip, buf, DEVTCP_ADDRSTRLEN))
		snprintf(buf, DEVTCP_ADDRSTRLEN, "?");
	return buf;
}

/* Whether @a and @b agree in their first @bits bits. */
static bool same_prefix(const uint8_t *a, const uint8_t *b, unsigned int bits)
{
	unsigned int whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole))
		return false;
	return !rest || !((a[whole] ^ b[whole]) & (0xff00 >> rest));
}

/*
 * Which of a peer's @count addresses the module at @index (address @mine)
 * connects to: one in the module's subnet, else the one at the same index
 * if of the same family (interfaces listed in the same order on every
 * host); -1: none, the module does not reach that peer.
 */
int devtcp_match_peer(const struct devtcp_addr *mine, int index, const struct devtcp_addr *theirs,
		      int count)
{
	for (int i = 0; i < count; i++)
		if (theirs[i].family == mine->family &&
		    same_prefix(theirs[i].ip, mine->ip, mine->prefix))
			return i;
	return index < count && theirs[index].family == mine->family ? index : -1;
}

/* The length of a netmask's prefix (its leading one bits). */
static uint8_t prefix_of(const struct sockaddr *mask, int family)
{
	const uint8_t *b;
	size_t len;
	uint8_t bits = 0;

	if (!mask)
		return 0;
	if (family == AF_INET6) {
		b = ((const struct sockaddr_in6 *)mask)->sin6_addr.s6_addr;
		len = 16;
	} else {
		b = (const uint8_t *)&((const struct sockaddr_in *)mask)->sin_addr;
		len = 4;
	}
	for (size_t i = 0; i < len && b[i] == 0xff; i++)
		bits += 8;
	if (bits < len * 8)
		for (uint8_t v = b[bits / 8]; v & 0x80; v <<= 1)
			bits++;
	return bits;
}

/* An address a peer can connect to without a scope: not IPv6 link-local. */
static bool usable(const struct sockaddr *sa, int family)
{
	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return false;
	if (family && (family == 4) != (sa->sa_family == AF_INET))
		return false;
	return sa->sa_family == AF_INET ||
	       !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* Whether @i is a candidate: up, with an address of the family wanted. */
static bool candidate(const struct ifaddrs *i, int family)
{
	return (i->ifa_flags & IFF_UP) && usable(i->ifa_addr, family);
}

/* A subnet of btl_devtcp_if_include ("10.1.0.0/16", "fd00::/64"). */
struct subnet {
	int family;
	uint8_t ip[16];
	unsigned int prefix;
};

/* 1: @s is a subnet, 0: not one (an interface name), -1: a bad one. */
static int parse_subnet(const char *s, struct subnet *net)
{
	char ip[DEVTCP_ADDRSTRLEN], *end;
	const char *slash = strchr(s, '/');
	unsigned long bits;

	if (!slash)
		return 0;
	if ((size_t)(slash - s) >= sizeof(ip))
		return -1;
	memcpy(ip, s, slash - s);
	ip[slash - s] = 0;
	net->family = strchr(ip, ':') ? AF_INET6 : AF_INET;
	bits = strtoul(slash + 1, &end, 10);
	if (*end || end == slash + 1 || bits > (net->family == AF_INET ? 32u : 128u) ||
	    inet_pton(net->family, ip, net->ip) != 1)
		return -1;
	net->prefix = bits;
	return 1;
}

static const uint8_t *ip_of(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ?
	       (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr :
	       ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
}

/* Whether @i is what @want asks for: the interface it names, or an address
 * in its subnet (then exactly that address). */
static bool wanted(const struct ifaddrs *i, const char *want, const struct subnet *net)
{
	if (net->family)
		return i->ifa_addr->sa_family == net->family &&
		       same_prefix(ip_of(i->ifa_addr), net->ip, net->prefix);
	return !strcmp(i->ifa_name, want);
}

/*
 * The interface (the one named, or the one with an address in the subnet
 * given, else the first that is up and not loopback, else loopback) and its
 * address of @family (4 or 6; 0: IPv4 where the interface has one, else
 * IPv6; with a subnet, the address in it).
 */
int devtcp_pick_interface(struct devtcp_module *m, const char *want, int family)
{
	struct ifaddrs *ifs, *i, *pick = NULL, *lo = NULL;
	const char *fam = family == 4 ? "IPv4 " : family == 6 ? "IPv6 " : "";
	struct subnet net = { 0 };
	const char *name;

	if (want && *want && parse_subnet(want, &net) < 0) {
		opal_output(0, "btl:devtcp: btl_devtcp_if_include: '%s' is neither an interface "
			    "name nor a subnet (address/bits)", want);
		return OPAL_ERR_BAD_PARAM;
	}
	if (getifaddrs(&ifs) < 0)
		return OPAL_ERROR;
	for (i = ifs; i && !pick; i = i->ifa_next) {
		if (!candidate(i, family))
			continue;
		if (want && *want)
			pick = wanted(i, want, &net) ? i : NULL;
		else if (!(i->ifa_flags & IFF_LOOPBACK))
			pick = i;
		else if (!lo)
			lo = i;
	}
	if (!pick)
		pick = lo;
	if (!pick) {
		if (want && *want)
			opal_output(0, "btl:devtcp: no interface %s %s is up with an %saddress "
				    "(MCA parameters btl_devtcp_if_include, btl_devtcp_family; IPv6 "
				    "link-local addresses are not used)",
				    net.family ? "in subnet" : "named", want, fam);
		else
			opal_output(0, "btl:devtcp: no interface is up with an %saddress (MCA "
				    "parameters btl_devtcp_if_include, btl_devtcp_family)", fam);
		freeifaddrs(ifs);
		return OPAL_ERR_NOT_FOUND;
	}
	/* On a named interface, IPv4 first. */
	name = pick->ifa_name;
	for (i = ifs; i && !net.family; i = i->ifa_next)
		if (!strcmp(i->ifa_name, name) && candidate(i, family) &&
		    i->ifa_addr->sa_family == AF_INET) {
			pick = i;
			break;
		}
	m->addr.family = pick->ifa_addr->sa_family;
	m->addr.prefix = prefix_of(pick->ifa_netmask, m->addr.family);
	memcpy(m->addr.ip, ip_of(pick->ifa_addr), m->addr.family == AF_INET ? 4 : 16);
	snprintf(m->ifname, sizeof(m->ifname), "%s", pick->ifa_name);
	freeifaddrs(ifs);
	return OPAL_SUCCESS;
}

/* An address's bytes (IPv4 in the first 4) and port, from a socket address. */
static void split(const struct sockaddr_storage *ss, uint8_t ip[16], uint16_t *port)
{
	memset(ip, 0, 16);
	if (ss->ss_family == AF_INET6) {
		memcpy(ip, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
		*port = ((const struct sockaddr_in6 *)ss)->sin6_port;
	} else {
		memcpy(ip, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		*port = ((const struct sockaddr_in *)ss)->sin_port;
	}
}

/* The connection from @src to @dst, as a hello's MAC covers it. */
void devtcp_tuple(struct devtcp_tuple *t, const struct sockaddr_storage *src,
		  const struct sockaddr_storage *dst)
{
	memset(t, 0, sizeof(*t));
	t->family = (uint8_t)src->ss_family;
	split(src, t->src, &t->src_port);
	split(dst, t->dst, &t->dst_port);
}

/* Whether @ss is one of the @count addresses a peer published. */
bool devtcp_from(const struct devtcp_addr *addrs, int count, const struct sockaddr_storage *ss)
{
	uint8_t ip[16];
	uint16_t port;

	split(ss, ip, &port);
	for (int i = 0; i < count; i++)
		if (addrs[i].family == ss->ss_family &&
		    !memcmp(addrs[i].ip, ip, ss->ss_family == AF_INET ? 4 : 16))
			return true;
	return false;
}
