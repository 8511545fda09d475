// SPDX-License-Identifier: GPL-2.0
/*
 * A test client of rdpmd, through libdevmem's rdpm API (and, for bad
 * input, raw protocol messages). Runs as root or as any uid.
 *
 *   rdpm_client recv IFACE PORT BYTES SEED   register a udmabuf, steer tcp4 PORT to it,
 *                                            receive one stream with devmem RX, validate
 *   rdpm_client recv6 IFACE PORT BYTES SEED  the same over IPv6 (tcp6 to fd99::2 PORT)
 *   rdpm_client shared IFACE PORT BYTES SEED SHARE  the same (tcp4) in a share of SHARE
 *                                            bytes of the user's shared buffer (JOIN)
 *   rdpm_client join IFACE SHARE             join only, print the buffer, wait for a
 *                                            signal; exit 3 when refused
 *   rdpm_client hold IFACE PORT              register + steer, print ids, wait for a signal
 *   rdpm_client steal IFACE PORT HANDLE FLOW  steer PORT without a socket, use HANDLE/FLOW
 *                                            (not ours)
 *   rdpm_client capture IFACE PORT           as another user than PORT's, try to steer
 *                                            PORT: every way must be refused (run as
 *                                            root with RDPM_UID: drops to that uid);
 *                                            says "capture done: N failed", waits for
 *                                            a signal
 *   rdpm_client own IFACE PORT [mapped|raw|close]  listen on PORT (mapped:
 *                                            ::ffff:10.99.0.2; raw: steer the tuple
 *                                            without a socket) and steer it to
 *                                            10.99.0.2; hold it until a signal (close:
 *                                            close the listener first, say "closed");
 *                                            exit 4 when refused with EADDRINUSE
 *   rdpm_client register IFACE               register only
 *   rdpm_client lowport IFACE PORT           steer a port < 1024
 *   rdpm_client cycles IFACE N               N steer/unsteer cycles
 *   rdpm_client quota IFACE                  steer until refused; register past max_bytes
 *   rdpm_client malformed                    bad messages: each must get an error reply
 *
 * The socket is $RDPM_SOCKET or the default. Exit 0 when the outcome is the
 * expected one, 1 otherwise, with the reason on stderr.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/un.h>
#include <unistd.h>

#include <devmem.h>
#include <devmem_rdpm.h>
#include "rdpm_proto.h"
#include "rdpm_wire.h"
#include "devtcp/pattern.h"

#define BUF_SIZE	(16u << 20)

static const char *sock_path;

static void die(const char *what)
{
	fprintf(stderr, "rdpm_client: %s: %s\n", what, devmem_last_error());
	exit(1);
}

static struct devmem_flow tcp4(unsigned int port)
{
	struct devmem_flow f = { .family = AF_INET, .dport = port };

	inet_pton(AF_INET, "10.99.0.2", f.dst);
	return f;
}

static struct devmem_flow tcp6(unsigned int port)
{
	struct devmem_flow f = { .family = AF_INET6, .dport = port };

	inet_pton(AF_INET6, "fd99::2", f.dst);
	return f;
}

static struct rdpm_client *setup(const char *ifname, struct devmem_mem **mem,
				 struct rdpm_buffer *b, size_t size)
{
	struct rdpm_client *c;

	if (rdpm_connect(&c, sock_path))
		die("connect");
	if (devmem_mem_udmabuf(mem, size, 0))
		die("udmabuf");
	if (rdpm_register_buffer(c, ifname, *mem, 0, b))
		die("register");
	return c;
}

/* A share of @size bytes of the user's shared buffer instead. */
static struct rdpm_client *setup_shared(const char *ifname, struct devmem_mem **mem,
					struct rdpm_buffer *b, size_t size)
{
	struct rdpm_client *c;

	if (rdpm_connect(&c, sock_path))
		die("connect");
	if (rdpm_join_shared(c, ifname, size, 0, mem, b))
		die("join");
	return c;
}

/* A TCP socket listening on @port (any address), or -1 with errno. */
static int listen_on(unsigned int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1)) {
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* Steers tcp4 @port to @b with a socket listening there, or exits; returns
 * the queue, sets *fid and *ls (the socket, to close after unsteering). */
static unsigned int steer(struct rdpm_client *c, const struct rdpm_buffer *b,
			  unsigned int port, uint32_t *fid, int *ls)
{
	struct devmem_flow flow = tcp4(port);
	unsigned int queue;

	*ls = listen_on(port);
	if (*ls < 0) {
		perror("listen");
		exit(1);
	}
	if (rdpm_steer_socket(c, b->handle, *ls, &flow, &queue, fid))
		die("steer");
	return queue;
}

/* rdpmd limits the window (past rmem_max for any uid); it refuses a share
 * larger than the buffer and a file that is not a TCP socket. */
static void limit_window(struct rdpm_client *c, uint32_t handle, int s, size_t size)
{
	int w, buf = 0, pipefd[2];
	socklen_t l = sizeof(buf);

	if (rdpm_limit_window(c, handle, s, 2 * size) != -EINVAL)
		die("window: a share larger than the buffer was not refused");
	fprintf(stderr, "refused as it should be: %s\n", devmem_last_error());
	if (pipe(pipefd) || rdpm_limit_window(c, handle, pipefd[0], size) != -ENOTSOCK)
		die("window: a pipe was not refused");
	fprintf(stderr, "refused as it should be: %s\n", devmem_last_error());
	close(pipefd[0]);
	close(pipefd[1]);
	w = rdpm_limit_window(c, handle, s, size);
	if (w < 0)
		die("window");
	getsockopt(s, SOL_SOCKET, SO_RCVBUF, &buf, &l);
	fprintf(stderr, "window limited to %d bytes, receive buffer %d bytes\n", w, buf);
}

/* @share: 0 for a buffer of our own, else a share of that many bytes. */
static int do_recv(const char *ifname, unsigned int port, uint64_t total, uint64_t seed, int v6,
		   size_t share)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct devmem_flow flow = v6 ? tcp6(port) : tcp4(port);
	uint64_t off = 0, bad = 0, foreign = 0, linear = 0;
	static uint8_t got[65536], want[65536];
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct devmem_rx *rx;
	size_t size = share ? share : BUF_SIZE;
	struct rdpm_client *c = share ? setup_shared(ifname, &mem, &b, size) :
					setup(ifname, &mem, &b, size);
	unsigned int queue;
	uint32_t fid;
	int ls, s, one = 1;

	ls = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if ((v6 ? bind(ls, (struct sockaddr *)&sa6, sizeof(sa6)) :
		  bind(ls, (struct sockaddr *)&sa, sizeof(sa))) || listen(ls, 1)) {
		perror("bind/listen");
		return 1;
	}
	/* The listener proves the port is ours; the flow narrows it to our
	 * address. */
	if (rdpm_steer_socket(c, b.handle, ls, &flow, &queue, &fid))
		die("steer");
	fprintf(stderr, "listening on port %u: queue %u, dmabuf %u, flow %u\n", port, queue,
		b.dmabuf_id, fid);
	s = accept(ls, NULL, NULL);
	if (s < 0 || devmem_rx_open(&rx, s, 0))
		die("accept/rx");
	limit_window(c, b.handle, s, size);
	while (off < total) {
		ssize_t n = devmem_rx_recv(rx, 0);
		struct devmem_frag f;

		if (n < 0)
			die("recv");
		if (n == 0)
			break;
		while (devmem_rx_next(rx, &f) == 1) {
			const uint8_t *data = f.linear;

			if (!f.dmabuf_id) {
				linear += f.len;
			} else {
				if (f.dmabuf_id != b.dmabuf_id)
					foreign += f.len;
				else if (f.len > sizeof(got) ||
					 devmem_mem_read(mem, f.offset, got, f.len))
					die("read back");
				data = got;
			}
			pattern_fill(want, f.len, seed, off);
			if (f.dmabuf_id == 0 || f.dmabuf_id == b.dmabuf_id)
				for (uint32_t i = 0; i < f.len; i++)
					bad += data[i] != want[i];
			off += f.len;
			if (devmem_rx_release(rx, &f))
				die("release");
		}
	}
	devmem_rx_flush(rx);
	devmem_rx_close(rx);
	close(s);
	printf("received %llu of %llu bytes (%llu linear), %llu mismatched, %llu in another "
	       "binding\n", (unsigned long long)off, (unsigned long long)total,
	       (unsigned long long)linear, (unsigned long long)bad, (unsigned long long)foreign);
	rdpm_close(c);
	devmem_mem_free(mem);
	return off == total && !bad && !foreign && linear < total ? 0 : 1;
}

static int do_hold(const char *ifname, unsigned int port) __attribute__((noreturn));
static int do_hold(const char *ifname, unsigned int port)
{
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c = setup(ifname, &mem, &b, BUF_SIZE);
	uint32_t fid;
	int ls;
	unsigned int queue = steer(c, &b, port, &fid, &ls);

	printf("ready handle %u flow %u queue %u dmabuf %u\n", b.handle, fid, queue, b.dmabuf_id);
	fflush(stdout);
	for (;;) {
		struct rdpm_event_info ev;
		int r = rdpm_next_event(c, &ev, -1);

		if (r < 0)
			die("event");
		if (r == 1) {
			printf("event %u handle %u %s\n", ev.event, ev.handle, ev.ifname);
			fflush(stdout);
		}
	}
}

static int do_join(const char *ifname, size_t share)
{
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c;

	if (rdpm_connect(&c, sock_path))
		die("connect");
	if (rdpm_join_shared(c, ifname, share, 0, &mem, &b)) {
		printf("refused: %s\n", devmem_last_error());
		return 3;
	}
	printf("joined handle %u dmabuf %u queues %u-%u size %zu\n", b.handle, b.dmabuf_id,
	       b.queues[0], b.queues[b.nqueues - 1], devmem_mem_size(mem));
	pause();
	return 0;
}

/* @what must fail with @err. */
static int expect(int ret, int err, const char *what)
{
	if (ret == err) {
		printf("ok: %s refused: %s\n", what, devmem_last_error());
		return 0;
	}
	printf("FAIL: %s: %d (%s), wanted %d\n", what, ret, devmem_last_error(), err);
	return 1;
}

static int do_steal(const char *ifname, unsigned int port, uint32_t handle, uint32_t flow_id)
{
	struct devmem_flow flow = tcp4(port);
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c = setup(ifname, &mem, &b, 4u << 20);
	unsigned int q;
	uint32_t fid;
	int fails = 0;

	fails += expect(rdpm_steer(c, b.handle, &flow, &q, &fid), -EPERM,
			"a flow another client steered, as a tuple without a socket");
	flow.dport = port + 1000;
	fails += expect(rdpm_steer(c, handle, &flow, &q, &fid), -ENOENT,
			"steering to another client's buffer");
	fails += expect(rdpm_unsteer(c, flow_id), -ENOENT, "unsteering another client's flow");
	fails += expect(rdpm_unregister(c, handle), -ENOENT,
			"unregistering another client's buffer");
	rdpm_close(c);
	devmem_mem_free(mem);
	return !!fails;
}

static int do_register(const char *ifname)
{
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c;

	if (rdpm_connect(&c, sock_path))
		die("connect");
	if (devmem_mem_udmabuf(&mem, 4u << 20, 0))
		die("udmabuf");
	if (rdpm_register_buffer(c, ifname, mem, 0, &b))
		die("register");
	printf("registered handle %u dmabuf %u\n", b.handle, b.dmabuf_id);
	rdpm_close(c);
	devmem_mem_free(mem);
	return 0;
}

static int do_lowport(const char *ifname, unsigned int port)
{
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c = setup(ifname, &mem, &b, 4u << 20);
	uint32_t fid;
	int ls;

	printf("steered port %u to queue %u\n", port, steer(c, &b, port, &fid, &ls));
	return 0;
}

static int do_cycles(const char *ifname, unsigned int n)
{
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c = setup(ifname, &mem, &b, 4u << 20);
	unsigned int used[RDPM_QUEUES_MAX] = { 0 };

	for (unsigned int i = 0; i < n; i++) {
		uint32_t fid;
		int ls;

		used[steer(c, &b, 20000 + i % 1000, &fid, &ls) % RDPM_QUEUES_MAX]++;
		if (rdpm_unsteer(c, fid))
			die("unsteer");
		close(ls);
	}
	printf("%u steer/unsteer cycles done\n", n);
	rdpm_unregister(c, b.handle);
	rdpm_close(c);
	devmem_mem_free(mem);
	return 0;
}

static int do_quota(const char *ifname)
{
	struct devmem_mem *mem, *big;
	struct rdpm_buffer b, b2;
	struct rdpm_client *c = setup(ifname, &mem, &b, 4u << 20);
	unsigned int q, i, spread[RDPM_QUEUES_MAX] = { 0 };
	uint32_t fid;
	int ret = 0, fails = 0;

	for (i = 0; i < 1000; i++) {
		struct devmem_flow flow = tcp4(30000 + i);
		int ls = listen_on(30000 + i);	/* kept open until exit */

		if (ls < 0)
			die("listen");
		ret = rdpm_steer_socket(c, b.handle, ls, &flow, &q, &fid);
		if (ret)
			break;
		spread[q % RDPM_QUEUES_MAX]++;
	}
	printf("%u flows steered before: %s\n", i, devmem_last_error());
	fails += expect(ret, -EDQUOT, "a flow beyond max_rules");
	/* Least-loaded: the flows spread evenly over the binding's queues. */
	for (unsigned int k = 0; k < b.nqueues; k++) {
		printf("queue %u: %u flows\n", b.queues[k], spread[b.queues[k] % RDPM_QUEUES_MAX]);
		if (spread[b.queues[k] % RDPM_QUEUES_MAX] * b.nqueues < i - b.nqueues)
			fails++;
	}
	if (devmem_mem_udmabuf(&big, 64u << 20, 0))
		die("udmabuf");
	fails += expect(rdpm_register_buffer(c, ifname, big, 1, &b2), -EDQUOT,
			"a buffer beyond max_bytes");
	fails += expect(rdpm_register_buffer(c, ifname, mem, 1, &b2), -EEXIST,
			"registering the same dma-buf twice");
	rdpm_close(c);
	devmem_mem_free(mem);
	devmem_mem_free(big);
	return !!fails;
}

/* Steers a listener with IP_FREEBIND bound to 10.99.0.77 (no one's) @port. */
static int steer_freebind(struct rdpm_client *c, uint32_t handle, unsigned int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct devmem_flow flow = tcp4(port);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, ret;
	unsigned int q;
	uint32_t fid;

	inet_pton(AF_INET, "10.99.0.77", &sa.sin_addr);
	if (s < 0 || setsockopt(s, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
		die("freebind listener");
	inet_pton(AF_INET, "10.99.0.77", flow.dst);
	ret = rdpm_steer_socket(c, handle, s, &flow, &q, &fid);
	close(s);
	return ret;
}

/*
 * Another user than @port's owner tries to steer @port into a buffer of
 * its own, every way it could: each must be refused, and its own port must
 * still be steerable (the refusals are not a broken daemon). Started as
 * root with $RDPM_UID: it makes a socket as root first, then becomes that
 * uid, holding a socket another user made.
 */
static int do_capture(const char *ifname, unsigned int port)
{
	const char *uid_env = getenv("RDPM_UID");
	uid_t uid = uid_env ? (uid_t)strtoul(uid_env, NULL, 0) : getuid();
	struct devmem_flow flow = tcp4(port), wild = { .family = AF_INET, .dport = port };
	int rootsock = listen_on(port + 7), ls, fails = 0;
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c;
	unsigned int q;
	uint32_t fid;

	if (rootsock < 0 || setgroups(0, NULL) || setresgid(uid, uid, uid) ||
	    setresuid(uid, uid, uid)) {
		perror("socket as root, then becoming RDPM_UID");
		return 1;
	}
	c = setup(ifname, &mem, &b, 4u << 20);
	inet_pton(AF_INET, "10.99.0.1", flow.src);
	fails += expect(rdpm_steer(c, b.handle, &flow, &q, &fid), -EPERM,
			"the victim's port from one peer, as a tuple without a socket");
	fails += expect(rdpm_steer(c, b.handle, &wild, &q, &fid), -EPERM,
			"the victim's port on any address, as a tuple without a socket");
	fails += expect(rdpm_steer_socket(c, b.handle, rootsock, NULL, &q, &fid), -EPERM,
			"a socket another user (root) made");
	ls = listen_on(port + 1);
	if (ls < 0)
		die("listen");
	fails += expect(rdpm_steer_socket(c, b.handle, ls, &wild, &q, &fid), -EACCES,
			"the victim's port named with a socket of ours on another port");
	/* The rule matches on the wire: its address must be one of the NIC's. */
	fails += expect(rdpm_steer_socket(c, b.handle, ls, NULL, &q, &fid), -EDESTADDRREQ,
			"our wildcard listener's port on every address");
	wild.dport = port + 1;
	inet_pton(AF_INET, "10.99.0.1", wild.dst);	/* the peer's, in ns1 */
	fails += expect(rdpm_steer_socket(c, b.handle, ls, &wild, &q, &fid), -EADDRNOTAVAIL,
			"our port on an address that is not the NIC's");
	fails += expect(steer_freebind(c, b.handle, port + 2), -EACCES,
			"a socket with IP_FREEBIND on an address the NIC lacks");
	flow = tcp4(port + 1);
	if (rdpm_steer_socket(c, b.handle, ls, &flow, &q, &fid)) {
		printf("FAIL: steering our own port %u: %s\n", port + 1, devmem_last_error());
		fails++;
	} else {
		printf("ok: our own port %u steered to queue %u\n", port + 1, q);
		if (rdpm_unsteer(c, fid))
			die("unsteer");
	}
	/* Connected still, so that a rule it got would show in ethtool -n. */
	printf("capture done: %d failed\n", fails);
	pause();
	return 1;
}

/* @how: NULL (tcp4 on any address), "mapped" (an IPv6 socket on
 * ::ffff:10.99.0.2, an IPv4 address) or "raw" (the tuple, no socket). */
static int do_own(const char *ifname, unsigned int port, const char *how)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct devmem_flow wild = { .family = AF_INET, .dport = port }, own = tcp4(port);
	bool raw = how && !strcmp(how, "raw"), ls6 = how && !strcmp(how, "mapped");
	struct devmem_mem *mem;
	struct rdpm_buffer b;
	struct rdpm_client *c = setup(ifname, &mem, &b, 4u << 20);
	unsigned int q;
	uint32_t fid;
	int ls = -1, ret;

	if (how && !strcmp(how, "mapped")) {
		inet_pton(AF_INET6, "::ffff:10.99.0.2", &sa6.sin6_addr);
		ls = socket(AF_INET6, SOCK_STREAM, 0);
		if (ls < 0 || bind(ls, (struct sockaddr *)&sa6, sizeof(sa6)) || listen(ls, 1)) {
			perror("mapped listen");
			return 1;
		}
	} else if (!raw) {
		ls = listen_on(port);
		if (ls < 0) {
			perror("listen");
			return 1;
		}
	}
	ret = raw ? rdpm_steer(c, b.handle, &wild, &q, &fid) :
		    rdpm_steer_socket(c, b.handle, ls, ls6 ? NULL : &own, &q, &fid);
	if (ret) {
		printf("refused: %s\n", devmem_last_error());
		return ret == -EADDRINUSE ? 4 : 1;
	}
	printf("steered port %u to queue %u: flow %u\n", port, q, fid);
	fflush(stdout);
	if (how && !strcmp(how, "close")) {
		/* rdpmd follows the socket: the rule must go with it. */
		close(ls);
		printf("closed\n");
		fflush(stdout);
	}
	pause();
	return 0;
}

/* ---------------------------------------------------------- bad input */

static int raw_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path ? sock_path :
		 RDPM_DEFAULT_SOCKET);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("connect");
		exit(1);
	}
	return s;
}

/* Sends @len bytes (with @fd attached if >= 0); returns the errno of the
 * error reply, 1 for a success reply, 0 when nothing came back. */
static int raw(int s, const void *msg, size_t len, int fd, char *text, size_t cap)
{
	struct iovec iov = { (void *)msg, len };
	char buf[RDPM_MAX_MSG];
	struct rdpm_hdr h;
	struct rdpm_error e;
	struct timeval tv = { 5, 0 };
	ssize_t n;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (rdpm_send_fds(s, &iov, 1, &fd, fd >= 0, 0) < 0)
		return 0;
	n = recv(s, buf, sizeof(buf), 0);
	if (n < (ssize_t)sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	if (h.type != RDPM_ERROR) {
		snprintf(text, cap, "reply type 0x%x", h.type);
		return 1;
	}
	memcpy(&e, buf + sizeof(h), sizeof(e));
	buf[n - 1] = 0;
	snprintf(text, cap, "%.400s", buf + sizeof(h) + sizeof(e));
	return -e.err;
}

struct hm {
	struct rdpm_hdr h;
	char body[RDPM_MAX_MSG + 64];
};

static size_t mk(struct hm *m, uint16_t type, size_t blen)
{
	memset(m, 0, sizeof(*m));
	m->h = (struct rdpm_hdr){ RDPM_MAGIC, RDPM_VERSION, type, sizeof(m->h) + blen, 77 };
	return sizeof(m->h) + blen;
}

static int do_malformed(void)
{
	int s = raw_connect(), fails = 0, r, memfd;
	struct rdpm_hello hello = { 1, 1, 0 };
	struct rdpm_steer st = { 0 };
	struct rdpm_register reg;
	struct hm m;
	char text[512];
	size_t len;

#define EXPECT(what, err, call) do {						\
	r = (call);								\
	if (r == (err)) {							\
		printf("ok: %s -> %s: %s\n", what, err == 1 ? "success" :	\
		       strerror(err), text);					\
	} else {								\
		printf("FAIL: %s -> %d (%s), wanted %s\n", what, r, text, strerror(err)); \
		fails++;							\
	}									\
} while (0)
	text[0] = 0;
	len = mk(&m, RDPM_STEER, sizeof(st));
	st.handle = 1; st.family = AF_INET; st.dport = 5000;
	memcpy(m.body, &st, sizeof(st));
	EXPECT("STEER before HELLO (out of order)", EPROTO, raw(s, &m, len, -1, text, sizeof(text)));
	EXPECT("3 bytes (truncated header)", EPROTO, raw(s, &m, 3, -1, text, sizeof(text)));
	len = mk(&m, RDPM_HELLO, sizeof(hello));
	m.h.magic = 0xdeadbeef;
	EXPECT("bad magic", EPROTO, raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, RDPM_HELLO, sizeof(hello));
	m.h.length += 4;
	EXPECT("length field beyond the packet", EPROTO, raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, RDPM_HELLO, RDPM_MAX_MSG + 16);
	EXPECT("oversized message", EMSGSIZE, raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, 99, 0);
	EXPECT("unknown type", EOPNOTSUPP, raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, RDPM_HELLO, sizeof(hello));
	hello.min_version = 7; hello.max_version = 9;
	memcpy(m.body, &hello, sizeof(hello));
	EXPECT("HELLO for versions 7-9 only", EPROTONOSUPPORT,
	       raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, RDPM_HELLO, sizeof(hello) - 2);
	EXPECT("HELLO with a short body", EBADMSG, raw(s, &m, len, -1, text, sizeof(text)));
	hello.min_version = 1; hello.max_version = 1;
	len = mk(&m, RDPM_HELLO, sizeof(hello));
	memcpy(m.body, &hello, sizeof(hello));
	EXPECT("a valid HELLO", 1, raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, RDPM_STEER, sizeof(st));
	m.h.version = 2;
	EXPECT("unknown version after HELLO", EPROTONOSUPPORT,
	       raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, RDPM_STEER, sizeof(st));
	memcpy(m.body, &st, sizeof(st));
	EXPECT("STEER before REGISTER (no such buffer)", ENOENT,
	       raw(s, &m, len, -1, text, sizeof(text)));
	st.family = 99;
	memcpy(m.body, &st, sizeof(st));
	EXPECT("STEER with family 99", EAFNOSUPPORT, raw(s, &m, len, -1, text, sizeof(text)));
	memset(&reg, 0, sizeof(reg));
	strcpy(reg.ifname, "dtb");
	len = mk(&m, RDPM_REGISTER, sizeof(reg));
	memcpy(m.body, &reg, sizeof(reg));
	EXPECT("REGISTER without an fd", EINVAL, raw(s, &m, len, -1, text, sizeof(text)));
	memfd = memfd_create("not-a-dmabuf", 0);
	if (ftruncate(memfd, 1 << 20))
		perror("ftruncate");
	EXPECT("REGISTER with a memfd (not a dma-buf)", EBADF,
	       raw(s, &m, len, memfd, text, sizeof(text)));
	memset(reg.ifname, 'x', sizeof(reg.ifname));
	memcpy(m.body, &reg, sizeof(reg));
	EXPECT("REGISTER with an unterminated name", EINVAL,
	       raw(s, &m, len, memfd, text, sizeof(text)));
	len = mk(&m, RDPM_UNSTEER, 4);
	m.body[0] = 1;
	EXPECT("UNSTEER with an fd attached", EINVAL, raw(s, &m, len, memfd, text, sizeof(text)));
	EXPECT("UNSTEER of an unknown flow", ENOENT, raw(s, &m, len, -1, text, sizeof(text)));
	len = mk(&m, RDPM_DRAIN, sizeof(struct rdpm_drain));
	strcpy(m.body, "dtb");
	if (getuid())
		EXPECT("DRAIN as a non-admin", EPERM, raw(s, &m, len, -1, text, sizeof(text)));
	close(memfd);
	/* The daemon still serves this connection and others. */
	len = mk(&m, RDPM_STATUS, sizeof(struct rdpm_status));
	EXPECT("STATUS afterwards", 1, raw(s, &m, len, -1, text, sizeof(text)));
	close(s);
	s = raw_connect();
	len = mk(&m, RDPM_HELLO, sizeof(hello));
	memcpy(m.body, &hello, sizeof(hello));
	EXPECT("a new client's HELLO afterwards", 1, raw(s, &m, len, -1, text, sizeof(text)));
	close(s);
	return !!fails;
}

int main(int argc, char **argv)
{
	sock_path = getenv("RDPM_SOCKET");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && (!strcmp(argv[1], "recv") || !strcmp(argv[1], "recv6")))
		return do_recv(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
			       strtoull(argv[5], NULL, 0), !strcmp(argv[1], "recv6"), 0);
	if (argc == 7 && !strcmp(argv[1], "shared"))
		return do_recv(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 0),
			       strtoull(argv[5], NULL, 0), 0, strtoull(argv[6], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "join"))
		return do_join(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "hold"))
		return do_hold(argv[2], atoi(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "steal"))
		return do_steal(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0),
				strtoul(argv[5], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "capture"))
		return do_capture(argv[2], atoi(argv[3]));
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "own"))
		return do_own(argv[2], atoi(argv[3]), argc == 5 ? argv[4] : NULL);
	if (argc == 3 && !strcmp(argv[1], "register"))
		return do_register(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "lowport"))
		return do_lowport(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "cycles"))
		return do_cycles(argv[2], atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "quota"))
		return do_quota(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "malformed"))
		return do_malformed();
	fprintf(stderr, "usage: see the comment at the top of rdpm_client.c\n");
	return 2;
}
