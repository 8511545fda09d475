/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btl/devtcp addresses: the interface and its address, IPv4 or IPv6, that a
 * rank publishes, and the socket addresses made from a published one.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
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

/*
 * The interface (the one named, else the first that is up and not loopback,
 * else loopback) and its address of @family (4 or 6; 0: IPv4 where the
 * interface has one, else IPv6).
 */
int devtcp_pick_interface(struct devtcp_module *m, const char *want, int family)
{
	struct ifaddrs *ifs, *i, *pick = NULL, *lo = NULL;
	const char *fam = family == 4 ? "IPv4 " : family == 6 ? "IPv6 " : "";
	const char *name;

	if (getifaddrs(&ifs) < 0)
		return OPAL_ERROR;
	for (i = ifs; i && !pick; i = i->ifa_next) {
		if (!candidate(i, family))
			continue;
		if (want && *want)
			pick = strcmp(i->ifa_name, want) ? NULL : i;
		else if (!(i->ifa_flags & IFF_LOOPBACK))
			pick = i;
		else if (!lo)
			lo = i;
	}
	if (!pick)
		pick = lo;
	if (!pick) {
		if (want && *want)
			opal_output(0, "btl:devtcp: no interface named %s is up with an %saddress "
				    "(MCA parameters btl_devtcp_if_include, btl_devtcp_family; IPv6 "
				    "link-local addresses are not used)", want, fam);
		else
			opal_output(0, "btl:devtcp: no interface is up with an %saddress (MCA "
				    "parameters btl_devtcp_if_include, btl_devtcp_family)", fam);
		freeifaddrs(ifs);
		return OPAL_ERR_NOT_FOUND;
	}
	/* On that interface, IPv4 first. */
	name = pick->ifa_name;
	for (i = ifs; i; i = i->ifa_next)
		if (!strcmp(i->ifa_name, name) && candidate(i, family) &&
		    i->ifa_addr->sa_family == AF_INET) {
			pick = i;
			break;
		}
	m->addr.family = pick->ifa_addr->sa_family;
	if (m->addr.family == AF_INET)
		memcpy(m->addr.ip, &((struct sockaddr_in *)pick->ifa_addr)->sin_addr, 4);
	else
		memcpy(m->addr.ip, &((struct sockaddr_in6 *)pick->ifa_addr)->sin6_addr, 16);
	snprintf(m->ifname, sizeof(m->ifname), "%s", pick->ifa_name);
	freeifaddrs(ifs);
	return OPAL_SUCCESS;
}
