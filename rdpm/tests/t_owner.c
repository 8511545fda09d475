// SPDX-License-Identifier: GPL-2.0
/*
 * STEER's ownership checks (owner.c) on real sockets of this host: only a
 * listening or connected TCP socket of the client's uid, in rdpmd's network
 * namespace, proves a flow; a request may narrow what the socket leaves
 * open but never name what another socket holds; rules of different users
 * that a packet could match both overlap. Runs as root (a socket of
 * another uid, another network namespace).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devtcp/check.h"
#include "owner.h"
#include "rdpm_wire.h"

static char why[160];

/* A TCP socket of @family bound to @addr (NULL: any) port 0 (any), listening. */
static int listener(int family, const char *addr, uint16_t *port)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	socklen_t len = family == AF_INET ? sizeof(s4) : sizeof(s6);
	struct sockaddr *sa = family == AF_INET ? (struct sockaddr *)&s4 : (struct sockaddr *)&s6;
	int s = socket(family, SOCK_STREAM, 0);

	if (addr)
		inet_pton(family, addr, family == AF_INET ? (void *)&s4.sin_addr :
			  (void *)&s6.sin6_addr);
	if (s < 0 || bind(s, sa, len) || listen(s, 4) || getsockname(s, sa, &len))
		return -1;
	*port = ntohs(family == AF_INET ? s4.sin_port : s6.sin6_port);
	return s;
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	return connect(s, (struct sockaddr *)&sa, sizeof(sa)) ? -1 : s;
}

static struct devmem_flow v4(const char *src, uint16_t sport, const char *dst, uint16_t dport)
{
	struct devmem_flow f = { .family = AF_INET, .sport = sport, .dport = dport };

	if (src)
		inet_pton(AF_INET, src, f.src);
	if (dst)
		inet_pton(AF_INET, dst, f.dst);
	return f;
}

static struct devmem_flow v6(const char *src, uint16_t sport, const char *dst, uint16_t dport)
{
	struct devmem_flow f = { .family = AF_INET6, .sport = sport, .dport = dport };

	if (src)
		inet_pton(AF_INET6, src, f.src);
	if (dst)
		inet_pton(AF_INET6, dst, f.dst);
	return f;
}

static struct rdpm_steer req_of(const struct devmem_flow *f)
{
	struct rdpm_steer r = { .handle = 1, .family = f->family, .sport = f->sport,
				.dport = f->dport };

	memcpy(r.src, f->src, 16);
	memcpy(r.dst, f->dst, 16);
	return r;
}

static void overlaps(void)
{
	struct devmem_flow port = v4(NULL, 0, NULL, 5000);
	struct devmem_flow local = v4(NULL, 0, "10.0.0.2", 5000);
	struct devmem_flow peer = v4("10.0.0.1", 0, "10.0.0.2", 5000);
	struct devmem_flow conn = v4("10.0.0.1", 40000, "10.0.0.2", 5000);
	struct devmem_flow other = v4("10.0.0.1", 40000, "10.0.0.3", 5000);
	struct devmem_flow mapped = v6(NULL, 0, "::ffff:10.0.0.2", 5000);
	struct devmem_flow six = v6(NULL, 0, "fd00::2", 5000);

	CHECK(rdpm_flows_overlap(&port, &local), "wildcard vs specific local address");
	CHECK(rdpm_flows_overlap(&local, &peer), "any peer vs one peer");
	CHECK(rdpm_flows_overlap(&peer, &conn), "one peer vs one connection");
	CHECK(rdpm_flows_overlap(&port, &conn), "the port vs one connection");
	CHECK(!rdpm_flows_overlap(&other, &local), "different local addresses");
	port.dport = 5001;
	CHECK(!rdpm_flows_overlap(&port, &local), "different ports");
	CHECK(rdpm_flows_overlap(&mapped, &local), "v4-mapped v6 vs v4");
	CHECK(rdpm_flows_overlap(&mapped, &conn), "v4-mapped v6 vs a v4 connection");
	CHECK(!rdpm_flows_overlap(&six, &local), "v6 vs v4");
	rdpm_flow_canon(&mapped);
	CHECK(mapped.family == AF_INET && !memcmp(mapped.dst, local.dst, 16),
	      "canon: v4-mapped becomes v4");
}

static void sockets(void)
{
	struct rdpm_sock s;
	struct rdpm_steer r;
	struct devmem_flow f, want;
	const char *reason;
	uint16_t port, port6;
	int ls = listener(AF_INET, NULL, &port), c, a, fd, pfd[2];

	CHECK(ls >= 0, "listener");
	CHECK(rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0 && s.listening &&
	      s.f.family == AF_INET && s.f.dport == port && !s.f.sport, "a listener: %s", why);
	/* The socket's tuple, narrowed where it is open. */
	r = (struct rdpm_steer){ .handle = 1 };
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == 0 && f.dport == port, "family 0: %s",
	      reason);
	want = v4("10.0.0.1", 0, "127.0.0.1", port);
	r = req_of(&want);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == 0 && !memcmp(&f, &want, sizeof(f)),
	      "a listener narrowed to a peer and an address: %s", reason);
	want.dport = port + 1;
	r = req_of(&want);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == -EACCES, "another port than the socket's");
	want = v6(NULL, 0, NULL, port);
	r = req_of(&want);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == -EACCES, "IPv6 on an IPv4 socket");

	CHECK(rdpm_sock_read(ls, 1000, &s, why, sizeof(why)) == -EPERM,
	      "a socket another uid made");

	/* Both ends of a connection: the peer fixed, no narrowing past it. */
	c = connect_to(port);
	a = accept(ls, NULL, NULL);
	CHECK(c >= 0 && a >= 0, "connection");
	CHECK(rdpm_sock_read(a, 0, &s, why, sizeof(why)) == 0 && !s.listening &&
	      s.f.dport == port && s.f.sport, "the accepted end: %s", why);
	want = v4("127.0.0.2", 0, NULL, 0);
	r = req_of(&want);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == -EACCES, "another peer than the socket's");
	CHECK(rdpm_sock_read(c, 0, &s, why, sizeof(why)) == 0 && s.f.sport == port,
	      "the connecting end: %s", why);
	close(c);
	close(a);

	/* What proves nothing. */
	CHECK(pipe(pfd) == 0, "pipe");
	CHECK(rdpm_sock_read(pfd[0], 0, &s, why, sizeof(why)) == -ENOTSOCK, "a pipe");
	close(pfd[0]);
	close(pfd[1]);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(rdpm_sock_read(fd, 0, &s, why, sizeof(why)) == -ENOTSOCK, "a UDP socket");
	close(fd);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(rdpm_sock_read(fd, 0, &s, why, sizeof(why)) == -ENOTSOCK, "a Unix socket");
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(rdpm_sock_read(fd, 0, &s, why, sizeof(why)) == -EINVAL, "an unbound socket");
	close(fd);
	{
		struct sockaddr_in sa = { .sin_family = AF_INET };

		fd = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(!bind(fd, (struct sockaddr *)&sa, sizeof(sa)), "bind");
		CHECK(rdpm_sock_read(fd, 0, &s, why, sizeof(why)) == -ENOTCONN,
		      "bound, neither listening nor connected");
		close(fd);
	}
	close(ls);

	/* IPv6: a dual-stack wildcard takes IPv4 too; a v4-mapped socket is IPv4. */
	ls = listener(AF_INET6, NULL, &port6);
	CHECK(ls >= 0 && rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0 && s.dual &&
	      s.f.family == AF_INET6, "a dual-stack listener: %s", why);
	want = v4(NULL, 0, "10.0.0.2", port6);
	r = req_of(&want);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == 0 && f.family == AF_INET &&
	      !memcmp(&f, &want, sizeof(f)), "its IPv4 side: %s", reason);
	close(ls);
	ls = listener(AF_INET6, "::ffff:127.0.0.1", &port6);
	CHECK(ls >= 0 && rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0 && !s.dual &&
	      s.f.family == AF_INET, "a v4-mapped listener is IPv4: %s", why);
	close(ls);
}

/*
 * A listener made by a child after @how ("netns": in a new network
 * namespace; "overflow": as the overflow uid 65534), passed back to us;
 * -1 when the child failed.
 */
static int child_listener(const char *how)
{
	int sp[2], status, fd = -1;
	char byte;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socketpair");
	pid = fork();
	if (pid == 0) {
		struct iovec iov = { "x", 1 };
		uint16_t port;
		int ls;

		if (!strcmp(how, "netns") ? unshare(CLONE_NEWNET) != 0 :
		    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		ls = listener(AF_INET, NULL, &port);
		_exit(ls < 0 || rdpm_send_fds(sp[1], &iov, 1, &ls, 1, 0) != 1);
	}
	{
		struct iovec iov = { &byte, 1 };
		unsigned int nfds;
		int flags;

		if (rdpm_recv_fds(sp[0], &iov, 1, &fd, 1, &nfds, &flags, 0) != 1 || !nfds)
			fd = -1;
	}
	waitpid(pid, &status, 0);
	close(sp[0]);
	close(sp[1]);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A socket made in another network namespace: its port is not the NIC's. */
static void other_netns(void)
{
	struct rdpm_sock s;
	int fd = child_listener("netns");

	CHECK(fd >= 0, "a listener in a new network namespace (unshare needs root)");
	CHECK(fd >= 0 && rdpm_sock_read(fd, 0, &s, why, sizeof(why)) == -EACCES,
	      "a socket of another network namespace: %s", why);
	close(fd);
}

/* The overflow uid is what any unmapped uid reads as: it proves nothing,
 * even when the client's uid reads as it too. */
static void overflow_uid(void)
{
	struct rdpm_sock s;
	int fd = child_listener("overflow");

	CHECK(fd >= 0, "a listener made as uid 65534");
	CHECK(fd >= 0 && rdpm_sock_read(fd, 65534, &s, why, sizeof(why)) == -EPERM &&
	      strstr(why, "overflow uid"), "the overflow uid's socket, for the overflow uid: %s",
	      why);
	close(fd);
}

/* A socket that may bind foreign addresses, or is bound to a device. */
static void binding_options(void)
{
	static const struct { int level, name; const char *what; } opts[] = {
		{ IPPROTO_IP, IP_FREEBIND, "IP_FREEBIND" },
		{ IPPROTO_IP, IP_TRANSPARENT, "IP_TRANSPARENT" },
	};
	struct devmem_flow f;
	struct rdpm_sock s;
	uint16_t port;
	int one = 1, ls, lo = (int)if_nametoindex("lo");

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		ls = listener(AF_INET, "127.0.0.1", &port);
		CHECK(ls >= 0 && !setsockopt(ls, opts[i].level, opts[i].name, &one, sizeof(one)),
		      "setting %s", opts[i].what);
		CHECK(rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == -EACCES,
		      "a listener with %s: %s", opts[i].what, why);
		close(ls);
	}
	ls = socket(AF_INET6, SOCK_STREAM, 0);
	CHECK(!setsockopt(ls, IPPROTO_IPV6, 78 /* IPV6_FREEBIND */, &one, sizeof(one)) &&
	      !listen(ls, 1), "an IPv6 listener with IPV6_FREEBIND");
	CHECK(rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == -EACCES,
	      "... refused: %s", why);
	close(ls);

	/* SO_BINDTODEVICE: its port is its own on that device only. */
	ls = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(ls >= 0 && !setsockopt(ls, SOL_SOCKET, SO_BINDTODEVICE, "lo", 3) &&
	      !listen(ls, 1), "a listener bound to lo");
	f = v4(NULL, 0, "127.0.0.1", 0);
	CHECK(rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0 && s.ifindex == (uint32_t)lo,
	      "... reads as bound to lo: %s", why);
	f.dport = s.f.dport;
	CHECK(rdpm_flow_on_nic(&s, &f, lo, "lo", why, sizeof(why)) == 0,
	      "... may steer on lo: %s", why);
	CHECK(rdpm_flow_on_nic(&s, &f, lo + 1000, "other", why, sizeof(why)) == -EACCES,
	      "... not on another NIC: %s", why);
	close(ls);
}

/* The rule's local address must be one of the NIC's (lo here): never a
 * wildcard, never another host's or namespace's. */
static void nic_addresses(void)
{
	int lo = (int)if_nametoindex("lo");
	struct devmem_flow f, want;
	struct rdpm_steer r = { .handle = 1 };
	struct rdpm_sock s;
	const char *reason;
	uint16_t port;
	int ls = listener(AF_INET, NULL, &port);

	CHECK(ls >= 0 && lo > 0 && rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0,
	      "a wildcard listener: %s", why);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == 0 &&
	      rdpm_flow_on_nic(&s, &f, lo, "lo", why, sizeof(why)) == -EDESTADDRREQ,
	      "... its bare flow (dst *:port) refused: %s", why);
	want = v4(NULL, 0, "10.200.0.9", port);
	r = req_of(&want);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == 0 &&
	      rdpm_flow_on_nic(&s, &f, lo, "lo", why, sizeof(why)) == -EADDRNOTAVAIL,
	      "... narrowed to an address that is not lo's, refused: %s", why);
	want = v4(NULL, 0, "127.0.0.1", port);
	r = req_of(&want);
	CHECK(rdpm_sock_flow(&s, &r, &f, &reason) == 0 &&
	      rdpm_flow_on_nic(&s, &f, lo, "lo", why, sizeof(why)) == 0,
	      "... narrowed to lo's 127.0.0.1: %s", why);
	close(ls);
	ls = listener(AF_INET6, "::1", &port);
	CHECK(ls >= 0 && rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0 &&
	      rdpm_flow_on_nic(&s, &s.f, lo, "lo", why, sizeof(why)) == 0,
	      "an IPv6 listener on lo's ::1: %s", why);
	close(ls);
}

/*
 * rdpm_sock_alive: the kernel's record must agree with every part read
 * (what catches a socket changed between rdpm_sock_read's reads), and a
 * socket closed, shut down or disconnected no longer proves its flow.
 */
static void lifetime(void)
{
	struct rdpm_sock s, t;
	uint16_t port;
	int ls = listener(AF_INET, "127.0.0.1", &port), c, a;
	struct sockaddr sa = { .sa_family = AF_UNSPEC };

	CHECK(ls >= 0 && rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0 && s.cookie,
	      "a listener: %s", why);
	CHECK(rdpm_sock_alive(&s, why, sizeof(why)) == 0, "... alive: %s", why);
	t = s;
	t.cookie++;
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) == -ENOENT, "another cookie: %s", why);
	t = s;
	t.local[3] = 2;
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) == -ENOENT, "another local address: %s", why);
	t = s;
	t.listening = false;
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) == -ESTALE, "read as connected: %s", why);
	t = s;
	t.ifindex = 1;
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) == -ESTALE, "read as bound to lo: %s", why);
	t = s;
	t.uid = 1000;
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) == -ESTALE, "read as another uid's: %s", why);

	c = connect_to(port);
	a = accept(ls, NULL, NULL);
	CHECK(c >= 0 && a >= 0 && rdpm_sock_read(a, 0, &t, why, sizeof(why)) == 0 &&
	      rdpm_sock_alive(&t, why, sizeof(why)) == 0, "the accepted end, alive: %s", why);
	t.pport++;
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) == -ENOENT, "another peer port: %s", why);
	close(a);
	t.pport--;
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) == -ENOENT,
	      "the accepted end closed (FIN_WAIT, no file): %s", why);
	CHECK(rdpm_sock_read(c, 0, &t, why, sizeof(why)) == 0, "the connecting end: %s", why);
	CHECK(connect(c, &sa, sizeof(sa)) == 0, "... disconnected (AF_UNSPEC)");
	CHECK(rdpm_sock_alive(&t, why, sizeof(why)) != 0, "... no longer proves its flow: %s",
	      why);
	close(c);

	CHECK(shutdown(ls, SHUT_RD) == 0, "the listener shut down");
	CHECK(rdpm_sock_alive(&s, why, sizeof(why)) == -ENOENT,
	      "... no longer listens (closed, unhashed): %s", why);
	close(ls);
	CHECK(rdpm_sock_alive(&s, why, sizeof(why)) == -ENOENT, "... closed: %s", why);
}

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Seconds for LOOKUPS looks of listener @s up again. */
#define LOOKUPS 300
static double lookups(const struct rdpm_sock *s)
{
	double t0 = seconds();

	for (int i = 0; i < LOOKUPS; i++)
		if (rdpm_sock_alive(s, why, sizeof(why)))
			return 1e9;
	return seconds() - t0;
}

/*
 * A look-up costs the same however many sockets share the port (the kernel
 * finds the socket by its tuple; a dump would read them all), on the one
 * netlink socket rdpmd keeps; a listener of an SO_REUSEPORT group, which
 * a tuple does not name, is refused.
 */
static void lookup_cost(void)
{
	enum { PAIRS = 1500 };
	static int fds[2 * PAIRS];
	struct rlimit rl = { 4 * PAIRS, 4 * PAIRS };
	struct rdpm_sock s;
	uint16_t port;
	int ls, n = 0, one = 1, fd0;
	double few, many;

	CHECK(!setrlimit(RLIMIT_NOFILE, &rl), "RLIMIT_NOFILE %d", 4 * PAIRS);
	ls = listener(AF_INET, "127.0.0.1", &port);
	CHECK(ls >= 0 && rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == 0, "a listener: %s", why);
	few = lookups(&s);
	fd0 = dup(0);
	close(fd0);
	few = lookups(&s);
	CHECK(dup(0) == fd0, "no fd left open by the look-ups");
	close(fd0);
	for (int i = 0; i < PAIRS; i++) {
		fds[n] = connect_to(port);
		if (fds[n] < 0)
			break;
		n++;
		fds[n] = accept(ls, NULL, NULL);
		if (fds[n] < 0)
			break;
		n++;
	}
	CHECK(n == 2 * PAIRS, "%d connections to port %u (%d sockets)", PAIRS, port, n);
	many = lookups(&s);
	CHECK(many < 2 * few + 0.05, "%d look-ups: %.3f s with %d sockets on the port, %.3f s "
	      "without", LOOKUPS, many, n, few);
	printf("t_owner: %d look-ups: %.3f s with %d sockets on the port, %.3f s without\n",
	       LOOKUPS, many, n, few);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	close(ls);

	ls = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(ls >= 0 && !setsockopt(ls, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) &&
	      !listen(ls, 4), "a listener with SO_REUSEPORT");
	CHECK(rdpm_sock_read(ls, 0, &s, why, sizeof(why)) == -EINVAL && strstr(why, "SO_REUSEPORT"),
	      "... refused: %s", why);
	close(ls);
}

int main(void)
{
	if (geteuid())
		return check_skip("t_owner: needs root (sockets of another uid and netns)");
	overlaps();
	sockets();
	other_netns();
	overflow_uid();
	binding_options();
	nic_addresses();
	lifetime();
	lookup_cost();
	return check_done("t_owner");
}
