// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Bootstrap from the environment: rank 0 listens on DEVCOLL_ADDR and
 * collects every rank's endpoint (a listener of its own), then hands the
 * table to all; the endpoint helpers are shared with pmix.c and split.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

int dc_parse_addr(const char *s, bool need_port, const char *what,
		  struct sockaddr_storage *sa, socklen_t *len)
{
	char host[256];
	const char *h = s, *port = "0", *colon = strrchr(s, ':');
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
	size_t hl;
	bool have_port = false;
	int r;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || (end[1] && end[1] != ':'))
			return dc_fail(-EINVAL, "%s \"%s\": want [address]:port", what, s);
		h = s + 1;
		hl = (size_t)(end - h);
		if (end[1]) {
			port = end + 2;
			have_port = true;
		}
	} else if (colon && (need_port || strchr(s, ':') == colon)) {
		hl = (size_t)(colon - s);	/* the last colon: "::1:80" too */
		port = colon + 1;
		have_port = true;
	} else {
		hl = strlen(s);		/* a bare host, or an IPv6 address */
	}
	if ((need_port && !have_port) || !hl || !*port)
		return dc_fail(-EINVAL, "%s \"%s\": want host:port", what, s);
	if (hl >= sizeof(host))
		return dc_fail(-EINVAL, "%s: host name too long", what);
	memcpy(host, h, hl);
	host[hl] = 0;
	r = getaddrinfo(host, port, &hints, &res);
	if (r)
		return dc_fail(-EINVAL, "%s \"%s\": %s", what, s, gai_strerror(r));
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

socklen_t dc_sa_len(const struct sockaddr_storage *sa)
{
	return sa->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static void sa_set_port(struct sockaddr_storage *sa, uint16_t port)
{
	if (sa->ss_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = port;
	else
		((struct sockaddr_in *)sa)->sin_port = port;
}

static uint16_t sa_port(const struct sockaddr_storage *sa)
{
	return sa->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
					 : ((const struct sockaddr_in *)sa)->sin_port;
}

int dc_listen_like(const struct sockaddr_storage *local, struct endpoint *ep, int *lfd)
{
	struct sockaddr_storage sa = *local;
	int ret;

	sa_set_port(&sa, 0);
	ret = dc_listen(&sa, dc_sa_len(&sa), lfd);
	if (ret)
		return ret;
	ep->sa = sa;
	ep->len = dc_sa_len(&sa);
	return 0;
}

struct reg {
	uint32_t magic, rank, size, pad;
	struct sockaddr_storage sa;
};

/* Rank 0: accepts the others' registrations until all are in or the
 * deadline; their connections in @fds, by rank. */
static int collect(devcoll_comm *c, int lfd, int *fds, int64_t deadline)
{
	for (int got = 0; got < c->size - 1;) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int64_t left = deadline - dc_now_ms();
		struct reg r;
		int fd;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return dc_fail(-ETIMEDOUT, "rank 0: %d of %d ranks registered before the "
				       "timeout", got + 1, c->size);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (dc_io_all(fd, &r, sizeof(r), false, deadline) || r.magic != WIRE_MAGIC ||
		    (int)r.size != c->size || r.rank == 0 || (int)r.rank >= c->size ||
		    fds[r.rank]) {
			close(fd);
			continue;
		}
		fds[r.rank] = fd;
		c->eps[r.rank].sa = r.sa;
		c->eps[r.rank].len = dc_sa_len(&r.sa);
		got++;
	}
	return 0;
}

/* Rank 0: serves the rendezvous on @store (bound to @bind_addr if set). */
static int serve(devcoll_comm *c, const char *addr, const struct sockaddr_storage *store,
		 socklen_t slen, const char *bind_addr, int *lfd, int64_t deadline)
{
	struct sockaddr_storage sa = *store;
	int *fds, ret;

	if (bind_addr) {
		socklen_t l;

		ret = dc_parse_addr(bind_addr, false, "DEVCOLL_BIND_ADDR", &sa, &l);
		if (ret)
			return ret;
		sa_set_port(&sa, sa_port(store));
	}
	ret = dc_listen(&sa, dc_sa_len(&sa), lfd);
	if (ret)
		return dc_fail(ret, "rank 0: rendezvous on %s: %s", addr, devcoll_last_error());
	c->eps[0].sa = *store;	/* as the others reach it */
	c->eps[0].len = slen;
	fds = calloc((size_t)c->size, sizeof(int));
	if (!fds)
		return dc_fail(-ENOMEM, "out of memory");
	ret = collect(c, *lfd, fds, deadline);
	for (int i = 1; i < c->size; i++) {
		for (int j = 0; fds[i] && j < c->size && !ret; j++)
			ret = dc_io_all(fds[i], &c->eps[j].sa, sizeof(c->eps[j].sa), true, deadline);
		if (fds[i])
			close(fds[i]);
	}
	free(fds);
	return ret;
}

/* The other ranks: connects to rank 0, which may not be up yet. */
static int reach_rank0(devcoll_comm *c, const char *addr, const struct sockaddr_storage *store,
		       socklen_t slen, int64_t deadline, int *out)
{
	int fd, err;

	for (;;) {
		fd = socket(store->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return dc_fail(-errno, "socket: %s", strerror(errno));
		if (!connect(fd, (const struct sockaddr *)store, slen))
			break;
		err = -errno;
		close(fd);
		if (dc_now_ms() > deadline)
			return dc_fail(err, "rank %d: cannot reach rank 0 at %s: %s", c->rank, addr,
				       strerror(-err));
		usleep(20000);
	}
	*out = fd;
	return 0;
}

/* The other ranks: listen where rank 0's connection leaves from (or where
 * DEVCOLL_BIND_ADDR or DEVCOLL_IF say), register, read the table. */
static int join(devcoll_comm *c, const char *addr, const struct sockaddr_storage *store,
		socklen_t slen, const char *bind_addr, const char *if_addr, int *lfd,
		int64_t deadline)
{
	struct reg r = { WIRE_MAGIC, (uint32_t)c->rank, (uint32_t)c->size, 0, {0} };
	struct sockaddr_storage local;
	socklen_t ll = sizeof(local);
	int fd = -1, ret;

	ret = reach_rank0(c, addr, store, slen, deadline, &fd);
	if (ret)
		return ret;
	getsockname(fd, (struct sockaddr *)&local, &ll);
	if (bind_addr || if_addr)
		ret = dc_parse_addr(bind_addr ? bind_addr : if_addr, false,
				    bind_addr ? "DEVCOLL_BIND_ADDR" : "DEVCOLL_IF", &local, &ll);
	if (!ret)
		ret = dc_listen_like(&local, &c->eps[c->rank], lfd);
	if (!ret) {
		r.sa = c->eps[c->rank].sa;
		ret = dc_io_all(fd, &r, sizeof(r), true, deadline);
	}
	for (int j = 0; j < c->size && !ret; j++) {
		ret = dc_io_all(fd, &c->eps[j].sa, sizeof(c->eps[j].sa), false, deadline);
		c->eps[j].len = dc_sa_len(&c->eps[j].sa);
	}
	close(fd);
	return ret;
}

int dc_boot_env(devcoll_comm *c, const char *addr, const char *bind_addr, const char *if_addr,
		int *lfd)
{
	int64_t deadline = dc_now_ms() + c->timeout_ms;
	struct sockaddr_storage store;
	socklen_t slen;
	int ret;

	ret = dc_parse_addr(addr, true, "DEVCOLL_ADDR", &store, &slen);
	if (ret)
		return ret;
	if (c->rank == 0)
		return serve(c, addr, &store, slen, bind_addr, lfd, deadline);
	return join(c, addr, &store, slen, bind_addr, if_addr, lfd, deadline);
}
