// SPDX-License-Identifier: GPL-2.0
/*
 * Flow ownership for STEER. A client proves which flow is its own with the
 * TCP socket that holds it: the kernel let that socket bind its local port
 * (and, connected, gave it its peer), so no other user's socket holds the
 * same. rdpmd reads the tuple from the socket rather than believing the
 * request, and takes the owner from the socket's inode: the uid that
 * created (or accepted) it, which stays the same when the socket is passed
 * to another process or user. Rules of different users must not overlap,
 * so that no one's rule can take packets of another's flow.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "owner.h"

static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

static bool zero(const uint8_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i])
			return false;
	return true;
}

static bool is_mapped(const uint8_t a[16])
{
	return !memcmp(a, v4mapped, sizeof(v4mapped));
}

void rdpm_flow_canon(struct devmem_flow *f)
{
	if (f->family != AF_INET6 || (zero(f->src, 16) && zero(f->dst, 16)))
		return;
	if (!(zero(f->src, 16) || is_mapped(f->src)) || !(zero(f->dst, 16) || is_mapped(f->dst)))
		return;
	f->family = AF_INET;
	memmove(f->src, f->src + 12, 4);
	memset(f->src + 4, 0, 12);
	memmove(f->dst, f->dst + 12, 4);
	memset(f->dst + 4, 0, 12);
}

/* Two parts of a tuple meet when either is a wildcard (zero) or they agree. */
static bool meet(const uint8_t *a, const uint8_t *b, size_t n)
{
	return zero(a, n) || zero(b, n) || !memcmp(a, b, n);
}

bool rdpm_flows_overlap(const struct devmem_flow *a, const struct devmem_flow *b)
{
	struct devmem_flow x = *a, y = *b;
	size_t n;

	rdpm_flow_canon(&x);
	rdpm_flow_canon(&y);
	if (x.family != y.family)
		return false;
	n = x.family == AF_INET ? 4 : 16;
	return meet(x.src, y.src, n) && meet(x.dst, y.dst, n) &&
	       (!x.sport || !y.sport || x.sport == y.sport) &&
	       (!x.dport || !y.dport || x.dport == y.dport);
}

/* The address and port of @ss into @a and @port (host order). */
static void addr_of(const struct sockaddr_storage *ss, uint8_t a[16], uint16_t *port)
{
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		memcpy(a, &s6->sin6_addr, 16);
		*port = ntohs(s6->sin6_port);
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		memcpy(a, &s4->sin_addr, 4);
		*port = ntohs(s4->sin_port);
	}
}

/* Whether @fd's socket lives in rdpmd's network namespace, where the NICs
 * are: a port is only someone's within one namespace. */
static int same_netns(int fd, char *why, size_t len)
{
	struct stat theirs, ours;
	int ns = ioctl(fd, SIOCGSKNS);

	if (ns < 0) {
		snprintf(why, len, "cannot tell the socket's network namespace (%s)",
			 strerror(errno));
		return -EACCES;
	}
	if (fstat(ns, &theirs) || stat("/proc/self/ns/net", &ours)) {
		snprintf(why, len, "cannot tell the socket's network namespace (%s)",
			 strerror(errno));
		close(ns);
		return -EACCES;
	}
	close(ns);
	if (theirs.st_dev != ours.st_dev || theirs.st_ino != ours.st_ino) {
		snprintf(why, len, "the socket is in another network namespace than rdpmd's NICs");
		return -EACCES;
	}
	return 0;
}

int rdpm_sock_read(int fd, uid_t uid, struct rdpm_sock *s, char *why, size_t len)
{
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	socklen_t ll = sizeof(local), pl = sizeof(peer), l;
	int domain = 0, type = 0, proto = 0, listening = 0, v6only = 0, err;
	struct stat st;

	memset(s, 0, sizeof(*s));
	/* Before fstat: getsockopt of anything but a socket fails at once,
	 * where fstat of a FUSE file would wait for its server. */
	l = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) ||
	    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) ||
	    (domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM ||
	    proto != IPPROTO_TCP) {
		snprintf(why, len, "the file descriptor attached is not a TCP socket");
		return -ENOTSOCK;
	}
	/* The socket inode's owner is the uid that made the socket; whoever
	 * passed it on, it stays that. */
	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "cannot tell who owns the socket attached");
		return -EBADF;
	}
	if (st.st_uid != uid) {
		snprintf(why, len, "the socket attached was made by another user: steer with a "
			 "socket of your own");
		return -EPERM;
	}
	err = same_netns(fd, why, len);
	if (err)
		return err;
	if (getsockname(fd, (struct sockaddr *)&local, &ll) || ll > sizeof(local) ||
	    local.ss_family != domain) {
		snprintf(why, len, "cannot read the socket's local address (%s)", strerror(errno));
		return -EINVAL;
	}
	s->f.family = domain;
	addr_of(&local, s->f.dst, &s->f.dport);
	if (!s->f.dport) {
		snprintf(why, len, "the socket attached is not bound to a port");
		return -EINVAL;
	}
	l = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l);
	s->listening = listening;
	/* Bound without listening holds no port against others (SO_REUSEADDR
	 * lets another socket bind it too): listening or connected only. */
	if (!listening) {
		if (getpeername(fd, (struct sockaddr *)&peer, &pl) || pl > sizeof(peer) ||
		    peer.ss_family != domain) {
			snprintf(why, len, "the socket attached neither listens nor is connected");
			return -ENOTCONN;
		}
		addr_of(&peer, s->f.src, &s->f.sport);
	}
	if (domain == AF_INET6 && listening && zero(s->f.dst, 16)) {
		l = sizeof(int);
		getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &l);
		s->dual = !v6only;
	}
	rdpm_flow_canon(&s->f);
	return 0;
}

/* One part of the flow: the socket's where it fixes it (the request may
 * only repeat it), the request's where the socket leaves it open. */
static bool take(uint8_t *sock, const uint8_t *req, size_t n)
{
	if (zero(sock, n)) {
		memcpy(sock, req, n);
		return true;
	}
	return zero(req, n) || !memcmp(sock, req, n);
}

static bool take_port(uint16_t *sock, uint16_t req)
{
	if (!*sock)
		*sock = req;
	return !req || *sock == req;
}

#define FAIL(e, w) do { *why = (w); return (e); } while (0)

int rdpm_sock_flow(const struct rdpm_sock *s, const struct rdpm_steer *req,
		   struct devmem_flow *out, const char **why)
{
	struct devmem_flow r = { .family = req->family, .sport = req->sport, .dport = req->dport };
	size_t n;

	*why = "";
	*out = s->f;
	if (!req->family)
		return 0;
	memcpy(r.src, req->src, 16);
	memcpy(r.dst, req->dst, 16);
	rdpm_flow_canon(&r);
	if (r.family != out->family) {
		/* An IPv6 wildcard listener without IPV6_V6ONLY has the port
		 * in IPv4 too. */
		if (!s->dual || r.family != AF_INET)
			FAIL(-EACCES, "the address family is not the socket's");
		out->family = AF_INET;
	}
	n = out->family == AF_INET ? 4 : 16;
	if (!take_port(&out->dport, r.dport))
		FAIL(-EACCES, "the local (destination) port is not the socket's");
	if (!take(out->dst, r.dst, n))
		FAIL(-EACCES, "the local (destination) address is not the socket's");
	if (!take_port(&out->sport, r.sport))
		FAIL(-EACCES, "the peer (source) port is not the connected socket's");
	if (!take(out->src, r.src, n))
		FAIL(-EACCES, "the peer (source) address is not the connected socket's");
	return 0;
}
