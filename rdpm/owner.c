// SPDX-License-Identifier: GPL-2.0
/*
 * Flow ownership for STEER. A client proves which flow is its own with the
 * TCP socket that holds it: the kernel let that socket bind its local port
 * (and, connected, gave it its peer). That holds the port only within one
 * network namespace and one device binding (SO_BINDTODEVICE), while the
 * NIC rule matches packets on the wire, for every namespace behind the NIC
 * (macvlan, ipvlan, bridged guests). So the socket must be in rdpmd's
 * namespace, bound to no device or to the NIC, and the rule's local
 * address must be one assigned to the NIC there: never a wildcard, never
 * an address bound with IP_FREEBIND or IP_TRANSPARENT.
 *
 * rdpmd reads the tuple from the socket rather than believing the request,
 * then has the kernel's one record of the socket (sock_diag, found by its
 * cookie) confirm every part it read: the client holds the socket too and
 * could change it between two system calls. It takes the owner from the
 * socket's inode: the uid that created (or accepted) it, which stays the
 * same when the socket is passed to another process or user. Rules of
 * different users must not overlap, so that no one's rule can take
 * packets of another's flow.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "nlquery.h"
#include "owner.h"

#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78	/* linux/in6.h; glibc's netinet/in.h lacks it */
#endif

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
 * and their addresses are: a port is held only within one namespace. */
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

/* The kernel's overflow uid: what a uid unmapped in rdpmd's user namespace
 * reads as. Many users' sockets may read as it, so it proves nothing. */
static uid_t overflow_uid(void)
{
	static uid_t uid = (uid_t)-1;
	unsigned int u = 65534;
	FILE *f;

	if (uid != (uid_t)-1)
		return uid;
	f = fopen("/proc/sys/kernel/overflowuid", "re");
	if (f) {
		if (fscanf(f, "%u", &u) != 1)
			u = 65534;
		fclose(f);
	}
	uid = u;
	return uid;
}

/* An int socket option of @fd, or -1. */
static int sockopt(int fd, int level, int name)
{
	int v = 0;
	socklen_t l = sizeof(v);

	return getsockopt(fd, level, name, &v, &l) ? -1 : v;
}

/* Whether @fd may bind addresses that are not the host's (IP_FREEBIND,
 * IP_TRANSPARENT and their IPv6 twins): its local address proves nothing. */
static bool binds_foreign(int fd, int domain)
{
	if (domain == AF_INET6)
		return sockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND) != 0 ||
		       sockopt(fd, IPPROTO_IPV6, IPV6_TRANSPARENT) != 0;
	return sockopt(fd, IPPROTO_IP, IP_FREEBIND) != 0 ||
	       sockopt(fd, IPPROTO_IP, IP_TRANSPARENT) != 0;
}

int rdpm_sock_read(int fd, uid_t uid, struct rdpm_sock *s, char *why, size_t len)
{
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	socklen_t ll = sizeof(local), pl = sizeof(peer), l;
	int domain = 0, type = 0, proto = 0, err;
	uint64_t cookie = 0;
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
	if (uid == overflow_uid() || st.st_uid == overflow_uid()) {
		snprintf(why, len, "uid %u is the overflow uid (a uid rdpmd's user namespace "
			 "does not map): it proves no ownership", (unsigned int)overflow_uid());
		return -EPERM;
	}
	if (st.st_uid != uid) {
		snprintf(why, len, "the socket attached was made by another user: steer with a "
			 "socket of your own");
		return -EPERM;
	}
	err = same_netns(fd, why, len);
	if (err)
		return err;
	if (binds_foreign(fd, domain)) {
		snprintf(why, len, "the socket may bind addresses that are not the host's "
			 "(IP_FREEBIND or IP_TRANSPARENT set, or unreadable): it proves no address");
		return -EACCES;
	}
	s->ifindex = (uint32_t)sockopt(fd, SOL_SOCKET, SO_BINDTOIFINDEX);
	if (s->ifindex == (uint32_t)-1) {
		snprintf(why, len, "cannot read the socket's device binding (%s)", strerror(errno));
		return -EINVAL;
	}
	if (getsockname(fd, (struct sockaddr *)&local, &ll) || ll > sizeof(local) ||
	    local.ss_family != domain) {
		snprintf(why, len, "cannot read the socket's local address (%s)", strerror(errno));
		return -EINVAL;
	}
	s->domain = domain;
	addr_of(&local, s->local, &s->lport);
	if (!s->lport) {
		snprintf(why, len, "the socket attached is not bound to a port");
		return -EINVAL;
	}
	s->listening = sockopt(fd, SOL_SOCKET, SO_ACCEPTCONN) == 1;
	/* Bound without listening holds no port against others (SO_REUSEADDR
	 * lets another socket bind it too): listening or connected only. */
	if (!s->listening) {
		if (getpeername(fd, (struct sockaddr *)&peer, &pl) || pl > sizeof(peer) ||
		    peer.ss_family != domain) {
			snprintf(why, len, "the socket attached neither listens nor is connected");
			return -ENOTCONN;
		}
		addr_of(&peer, s->peer, &s->pport);
	}
	/* The kernel finds a listener by its tuple, and in an SO_REUSEPORT
	 * group that is any member: rdpmd could not look this one up again. */
	if (s->listening && sockopt(fd, SOL_SOCKET, SO_REUSEPORT) != 0) {
		snprintf(why, len, "the socket attached listens with SO_REUSEPORT: rdpmd cannot "
			 "tell it from the others of its group (steer with a connected socket)");
		return -EINVAL;
	}
	if (domain == AF_INET6 && s->listening && zero(s->local, 16))
		s->dual = sockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY) == 0;
	l = sizeof(cookie);
	if (getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &l)) {
		snprintf(why, len, "cannot read the socket's cookie (%s)", strerror(errno));
		return -EINVAL;
	}
	s->cookie = cookie;
	s->uid = uid;
	s->ino = st.st_ino;
	/* Each read above was a moment of its own; the kernel's record is one
	 * moment and must agree with them all. */
	err = rdpm_sock_alive(s, why, len);
	if (err == -ENOENT || err == -ESTALE) {
		snprintf(why, len, "the socket changed while rdpmd read it");
		return -ESTALE;
	}
	if (err)
		return err;
	s->f.family = domain;
	memcpy(s->f.dst, s->local, 16);
	s->f.dport = s->lport;
	memcpy(s->f.src, s->peer, 16);
	s->f.sport = s->pport;
	rdpm_flow_canon(&s->f);
	return 0;
}

int rdpm_sock_alive(const struct rdpm_sock *s, char *why, size_t len)
{
	size_t n = s->domain == AF_INET6 ? 16 : 4;
	struct rdpm_diag_key k = { .family = s->domain, .local = s->local, .peer = s->peer,
				   .lport = s->lport, .pport = s->pport, .ifindex = s->ifindex,
				   .cookie = s->cookie };
	struct rdpm_diag d;
	int err = rdpm_diag_find(&k, &d);

	if (err < 0) {
		snprintf(why, len, "cannot look the socket up (sock_diag: %s)", strerror(-err));
		return err;
	}
	if (!err || !d.inode) {
		snprintf(why, len, "the socket is closed, shut down (neither listening nor "
			 "connected) or no longer has its addresses");
		return -ENOENT;
	}
	if (s->listening ? d.state != TCP_LISTEN :
	    d.state != TCP_ESTABLISHED && d.state != TCP_CLOSE_WAIT) {
		snprintf(why, len, "the socket no longer %s", s->listening ? "listens" :
			 "is connected");
		return -ESTALE;
	}
	if (d.family != s->domain || memcmp(d.local, s->local, n) || d.lport != s->lport ||
	    (!s->listening && (memcmp(d.peer, s->peer, n) || d.pport != s->pport)) ||
	    d.ifindex != s->ifindex || d.uid != s->uid || d.inode != s->ino ||
	    (s->dual && d.v6only != 0)) {
		snprintf(why, len, "the socket's addresses, device or owner changed");
		return -ESTALE;
	}
	return 0;
}

int rdpm_flow_on_nic(const struct rdpm_sock *s, const struct devmem_flow *f, int ifindex,
		     const char *ifname, char *why, size_t len)
{
	int err;

	if (s->ifindex && s->ifindex != (uint32_t)ifindex) {
		snprintf(why, len, "the socket is bound to another device (ifindex %u) than %s "
			 "(SO_BINDTODEVICE, a VRF): its port there is not its port on %s",
			 s->ifindex, ifname, ifname);
		return -EACCES;
	}
	if (zero(f->dst, 16)) {
		snprintf(why, len, "the socket listens on every address: name one of %s's "
			 "addresses as the local (destination) address", ifname);
		return -EDESTADDRREQ;
	}
	err = rdpm_if_has_addr(ifindex, f->family, f->dst);
	if (err < 0) {
		snprintf(why, len, "cannot read %s's addresses (rtnetlink: %s)", ifname,
			 strerror(-err));
		return err;
	}
	if (!err) {
		snprintf(why, len, "the local (destination) address is not one of %s's: the "
			 "rule would take packets of another host or namespace", ifname);
		return -EADDRNOTAVAIL;
	}
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
