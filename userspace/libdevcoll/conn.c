// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Connections: listening, blocking I/O with a deadline, and the mesh of
 * nconns TCP connections between every pair of ranks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "internal.h"
#include "greet.h"

int dc_listen(struct sockaddr_storage *sa, socklen_t len, int *out)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return dc_fail(-errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)sa, len) || listen(fd, 1024)) {
		int e = errno;

		close(fd);
		return dc_fail(-e, "listen: %s", strerror(e));
	}
	len = sizeof(*sa);
	getsockname(fd, (struct sockaddr *)sa, &len);
	*out = fd;
	return 0;
}

/* Blocking helpers for set-up, with a deadline. */
int dc_io_all(int fd, void *buf, size_t len, bool wr, int64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
			       : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return dc_fail(-ECONNRESET, "set-up: the peer closed the connection");
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return dc_fail(-errno, "set-up: %s", strerror(errno));
		struct pollfd p = { .fd = fd, .events = wr ? POLLOUT : POLLIN };
		int64_t left = deadline - dc_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			return dc_fail(-ETIMEDOUT, "set-up: timed out");
	}
	return 0;
}

/* dc_greet's check of a hello: a job member's, for this communicator, for
 * a connection not yet made. */
static uint32_t judge_hello(void *arg, const uint8_t *nonce, const void *msg, const char **why)
{
	devcoll_comm *c = arg;
	struct dc_hello_want want = { c->id, c->rank, c->size, c->nconns };
	struct dc_hello h;
	int ret = dc_hello_check(msg, sizeof(h), c->key, nonce, &want, &h, why);

	if (ret)
		return ret == -EACCES ? DC_REFUSED_SECRET : DC_REFUSED_MISMATCH;
	if (c->conns[h.from * c->nconns + h.idx].fd >= 0) {
		*why = "a second hello for a connection already made";
		return DC_REFUSED_TAKEN;
	}
	return DC_KEPT;
}

/* ... and the connection of one that passed it. */
static void take_hello(void *arg, const void *msg, int fd)
{
	devcoll_comm *c = arg;
	struct dc_hello h;

	memcpy(&h, msg, sizeof(h));
	c->conns[h.from * c->nconns + h.idx].fd = fd;
}

static void sign_hello(void *msg, const uint8_t key[DC_KEY_LEN], const uint8_t nonce[DC_NONCE_LEN])
{
	dc_hello_sign(msg, key, nonce);
}

/*
 * TCP_NODELAY; non-blocking; the congestion control: reno unless set.
 * Cubic's HyStart takes a train of ACKs a few microseconds apart, as between
 * ranks of one host or one rack, for a full queue and leaves slow start with
 * a window of a few dozen segments; over veth that made 512 KiB to 8 MiB
 * allreduces 3x slower. BBR, the default of some distributions, paces each
 * connection at its estimate of the path's rate, which halved loopback
 * throughput. See Documentation/devcoll.rst.
 */
static int tune(devcoll_comm *c, int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->tcp_cc[0] &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, c->tcp_cc, (socklen_t)strlen(c->tcp_cc)) &&
	    c->tcp_cc_set)
		return dc_fail(-errno, "DEVCOLL_TCP_CONGESTION=%s: %s (an unprivileged process "
			       "may use those of net.ipv4.tcp_allowed_congestion_control)",
			       c->tcp_cc, strerror(errno));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

/* Connects to the lower ranks and accepts the higher ones on @lfd. */
int dc_mesh(devcoll_comm *c, int lfd, const struct endpoint *eps)
{
	int64_t deadline = dc_now_ms() + c->timeout_ms;
	int need = (c->size - 1 - c->rank) * (int)c->nconns, ret;

	for (int j = 0; j < c->rank; j++) {
		for (unsigned int k = 0; k < c->nconns; k++) {
			struct dc_hello hl = { AUTH_MAGIC, (uint32_t)c->rank, k, (uint32_t)j, c->id, { 0 } };
			char who[32];
			struct dc_handshake h = { .to = &eps[j].sa, .from = &eps[c->rank].sa,
						  .kind = DC_CH_HELLO, .msg = &hl, .len = sizeof(hl),
						  .sign = sign_hello, .key = c->key,
						  .deadline = deadline, .rank = c->rank, .who = who,
						  .what = "connection" };

			snprintf(who, sizeof(who), "rank %d", j);
			ret = dc_handshake(&h, &c->conns[j * c->nconns + k].fd);
			if (ret)
				return ret;
		}
	}
	if (need > 0) {
		/* only the higher ranks connect: from where they listen */
		struct dc_greeter g = { .lfd = lfd, .kind = DC_CH_HELLO,
					.msg_len = sizeof(struct dc_hello), .check = judge_hello,
					.keep = take_hello, .arg = c, .allow = &eps[c->rank + 1],
					.nallow = c->size - 1 - c->rank, .want = need,
					.deadline = deadline };

		ret = dc_greet(&g);
		dc_greet_report(&g, c->rank, "the mesh's listener");
		if (ret == -ETIMEDOUT)
			return dc_fail(ret, "rank %d: timed out waiting for connections from higher "
				       "ranks%s%s", c->rank, g.strangers ? "; dropped strangers, the "
				       "last: " : "", g.strangers ? g.last_why : "");
		if (ret)
			return ret;
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0)
		return dc_fail(-errno, "epoll_create1: %s", strerror(errno));
	c->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wakefd < 0)
		return dc_fail(-errno, "eventfd: %s", strerror(errno));
	struct epoll_event wev = { .events = EPOLLIN | EPOLLET, .data.u32 = UINT32_MAX };

	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wakefd, &wev))
		return dc_fail(-errno, "epoll_ctl: %s", strerror(errno));
	for (int i = 0; i < c->size * (int)c->nconns; i++) {
		struct conn *cn = &c->conns[i];
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = (uint32_t)i };

		if (cn->fd < 0)
			continue;
		int ret = tune(c, cn->fd);

		if (ret)
			return ret;
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, cn->fd, &ev))
			return dc_fail(-errno, "epoll_ctl: %s", strerror(errno));
	}
	return 0;
}

/* Reads @len bytes of @k into @buf, waiting until @end (ms) at most: the
 * bytes read, fewer at the deadline, on an error or at the end of stream. */
size_t dc_conn_read_for(devcoll_comm *c, struct conn *k, char *buf, size_t len, int64_t end)
{
	size_t got = 0;

	while (got < len && dc_now_ms() < end) {
		ssize_t n = dc_conn_recv(c, k, buf + got, len - got);
		struct pollfd p = { .fd = k->fd, .events = POLLIN };

		if (n > 0)
			got += (size_t)n;
		else if (n == -EAGAIN)
			poll(&p, 1, 10);
		else
			break;
	}
	return got;
}
