// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DEVCOLL_IF: which of the host's addresses a rank listens on and gives its
 * peers. Hosts with several networks (a management port, the data NICs)
 * must say which one collectives run over; with mpirun every rank gets the
 * same environment, so the setting names interfaces or subnets, not one
 * host's address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

struct subnet {
	int family;
	unsigned char addr[16];
	unsigned int bits;
};

/* "10.0.0.0/8", "fd00::/8": 1; not a subnet: 0; a bad one: negative. */
static int parse_subnet(const char *s, struct subnet *n)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	unsigned long bits;

	if (strlen(s) >= sizeof(buf) || !(slash = strchr(s, '/')))
		return 0;
	strcpy(buf, s);
	slash = buf + (slash - s);
	*slash = 0;
	n->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(n->family, buf, n->addr) != 1)
		return -EINVAL;
	bits = strtoul(slash + 1, &end, 10);
	if (!slash[1] || *end || bits > (n->family == AF_INET ? 32u : 128u))
		return -EINVAL;
	n->bits = (unsigned int)bits;
	return 1;
}

static const unsigned char *addr_bytes(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ? (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr
					: ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
}

static bool in_subnet(const struct sockaddr *sa, const struct subnet *n)
{
	const unsigned char *a = addr_bytes(sa);
	unsigned int full = n->bits / 8, rest = n->bits % 8;

	if (sa->sa_family != n->family || memcmp(a, n->addr, full))
		return false;
	return !rest || !((a[full] ^ n->addr[full]) & (0xff00u >> rest) & 0xff);
}

/* An address peers can connect to: IPv4, or IPv6 other than link-local
 * (which would need the interface's scope on every peer). */
static bool usable(const struct ifaddrs *i)
{
	if (!i->ifa_addr || !(i->ifa_flags & IFF_UP))
		return false;
	if (i->ifa_addr->sa_family == AF_INET)
		return true;
	return i->ifa_addr->sa_family == AF_INET6 &&
	       !IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr);
}

/* The up interfaces and their addresses, for the error message. */
static void list_up(const struct ifaddrs *ifa, char *out, size_t len)
{
	size_t o = 0;

	out[0] = 0;
	for (const struct ifaddrs *i = ifa; i && o + 1 < len; i = i->ifa_next) {
		char a[INET6_ADDRSTRLEN];

		if (!usable(i) || !inet_ntop(i->ifa_addr->sa_family, addr_bytes(i->ifa_addr), a, sizeof(a)))
			continue;
		int n = snprintf(out + o, len - o, "%s%s %s", o ? ", " : "", i->ifa_name, a);

		if (n < 0)
			break;
		o += (size_t)n;
	}
}

int dc_if_addr(const char *spec, char *out, size_t len)
{
	struct ifaddrs *ifa;
	char items[256], *save = NULL, up[400];
	int ret = -ENOENT;

	if (strlen(spec) >= sizeof(items))
		return dc_fail(-EINVAL, "DEVCOLL_IF=%s: too long", spec);
	if (getifaddrs(&ifa))
		return dc_fail(-errno, "DEVCOLL_IF: getifaddrs: %s", strerror(errno));
	strcpy(items, spec);
	/* the first item that matches wins; an interface gives its IPv4
	 * address before an IPv6 one */
	for (char *it = strtok_r(items, ",", &save); it && ret == -ENOENT;
	     it = strtok_r(NULL, ",", &save)) {
		struct subnet n;
		int sub = parse_subnet(it, &n);

		if (sub < 0) {
			ret = dc_fail(-EINVAL, "DEVCOLL_IF=%s: bad subnet '%s' (want ADDRESS/BITS)",
				      spec, it);
			break;
		}
		for (int fam = 0; fam < 2 && ret == -ENOENT; fam++) {
			for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
				if (!usable(i) || i->ifa_addr->sa_family != (fam ? AF_INET6 : AF_INET))
					continue;
				if (sub ? !in_subnet(i->ifa_addr, &n) : strcmp(i->ifa_name, it))
					continue;
				if (!inet_ntop(i->ifa_addr->sa_family, addr_bytes(i->ifa_addr), out,
					       (socklen_t)len))
					continue;
				ret = 0;
				break;
			}
		}
	}
	if (ret == -ENOENT) {
		list_up(ifa, up, sizeof(up));
		ret = dc_fail(-ENODEV, "DEVCOLL_IF=%s: no address of an interface that is up matches "
			      "(up here: %s)", spec, up[0] ? up : "none");
	}
	freeifaddrs(ifa);
	return ret;
}
