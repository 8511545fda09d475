// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Bootstrap from the environment: rank 0 listens on DEVCOLL_ADDR and
 * collects every rank's endpoint (a listener of its own), then hands the
 * table and a fresh communicator id to all; the endpoint helpers are shared
 * with pmix.c and split. Each registration answers a challenge with the HMAC
 * of the job's secret (secret.c, wire.c), and the table comes back with
 * rank 0's: a process without the secret neither joins nor misleads a rank.
 * Rank 0 serves all connections at once (greet.c): strangers are dropped.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "greet.h"

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

void dc_sa_set_port(struct sockaddr_storage *sa, uint16_t port)
{
	if (sa->ss_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = port;
	else
		((struct sockaddr_in *)sa)->sin_port = port;
}

size_t dc_sa_ip(const struct sockaddr_storage *sa, uint8_t ip[16])
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->ss_family == AF_INET) {
		memcpy(ip, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 4;
	}
	if (sa->ss_family != AF_INET6)
		return 0;
	if (!memcmp(s6->sin6_addr.s6_addr, v4mapped, sizeof(v4mapped))) {
		memcpy(ip, s6->sin6_addr.s6_addr + 12, 4);
		return 4;
	}
	memcpy(ip, s6->sin6_addr.s6_addr, 16);
	return 16;
}

bool dc_sa_is_any(const struct sockaddr_storage *sa)
{
	static const uint8_t zero[16];
	uint8_t ip[16];
	size_t n = dc_sa_ip(sa, ip);

	return n && !memcmp(ip, zero, n);
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

	dc_sa_set_port(&sa, 0);
	ret = dc_listen(&sa, dc_sa_len(&sa), lfd);
	if (ret)
		return ret;
	ep->sa = sa;
	ep->len = dc_sa_len(&sa);
	return 0;
}

/* What rank 0 keeps of the registrations: by rank. */
struct roll {
	devcoll_comm *c;
	int *fds;
	uint8_t (*cnonce)[DC_NONCE_LEN];
	char why[96];
};

/* dc_greet's check of a registration: a job member's, for a rank not yet in. */
static uint32_t judge(void *arg, const uint8_t *nonce, const void *msg, const char **why)
{
	struct roll *rl = arg;
	struct dc_reg r;
	int ret = dc_reg_check(msg, sizeof(r), rl->c->key, nonce, rl->c->size, &r, why);

	if (ret)
		return ret == -EACCES ? DC_REFUSED_SECRET : DC_REFUSED_MISMATCH;
	if (rl->fds[r.rank]) {
		snprintf(rl->why, sizeof(rl->why), "a second registration as rank %u (refused: the "
			 "first stands)", r.rank);
		*why = rl->why;
		return DC_REFUSED_TAKEN;
	}
	return DC_KEPT;
}

/* ... and what rank 0 keeps of one that passed it. */
static void enrol(void *arg, const void *msg, int fd)
{
	struct roll *rl = arg;
	struct dc_reg r;

	memcpy(&r, msg, sizeof(r));
	rl->fds[r.rank] = fd;
	memcpy(rl->cnonce[r.rank], r.cnonce, DC_NONCE_LEN);
	rl->c->eps[r.rank].sa = r.sa;
	rl->c->eps[r.rank].len = dc_sa_len(&r.sa);
}

/* Rank 0: the communicator's id and every endpoint to rank @r, with the
 * MAC over the nonce @r registered with, so it knows rank 0 has the key. */
static int send_table(devcoll_comm *c, int fd, const uint8_t *cnonce, int64_t deadline)
{
	struct dc_table_hdr t = { AUTH_MAGIC, (uint32_t)c->size, c->id };
	struct sockaddr_storage *eps = calloc((size_t)c->size, sizeof(*eps));
	uint8_t mac[DEVTCP_SHA256_LEN];
	int ret;

	if (!eps)
		return dc_fail(-ENOMEM, "out of memory");
	for (int j = 0; j < c->size; j++)
		eps[j] = c->eps[j].sa;
	dc_table_mac(c->key, cnonce, &t, eps, mac);
	ret = dc_io_all(fd, &t, sizeof(t), true, deadline);
	if (!ret)
		ret = dc_io_all(fd, eps, (size_t)c->size * sizeof(*eps), true, deadline);
	if (!ret)
		ret = dc_io_all(fd, mac, sizeof(mac), true, deadline);
	free(eps);
	return ret;
}

/* Rank 0: serves the rendezvous on @store (bound to @bind_addr if set). */
static int serve(devcoll_comm *c, const char *addr, const struct sockaddr_storage *store,
		 socklen_t slen, const char *bind_addr, int *lfd, int64_t deadline)
{
	struct sockaddr_storage sa = *store;
	struct roll rl = { .c = c };
	struct dc_greeter g = { .kind = DC_CH_REG, .msg_len = sizeof(struct dc_reg),
				.check = judge, .keep = enrol, .arg = &rl, .want = c->size - 1,
				.deadline = deadline };
	int ret, got = 0;

	if (bind_addr) {
		socklen_t l;

		ret = dc_parse_addr(bind_addr, false, "DEVCOLL_BIND_ADDR", &sa, &l);
		if (ret)
			return ret;
		dc_sa_set_port(&sa, sa_port(store));
	}
	ret = dc_listen(&sa, dc_sa_len(&sa), lfd);
	if (ret)
		return dc_fail(ret, "rank 0: rendezvous on %s: %s", addr, devcoll_last_error());
	c->eps[0].sa = *store;	/* as the others reach it */
	c->eps[0].len = slen;
	rl.fds = calloc((size_t)c->size, sizeof(int));
	rl.cnonce = calloc((size_t)c->size, DC_NONCE_LEN);
	if (!rl.fds || !rl.cnonce) {
		free(rl.fds);
		free(rl.cnonce);
		return dc_fail(-ENOMEM, "out of memory");
	}
	g.lfd = *lfd;
	ret = dc_greet(&g);
	dc_greet_report(&g, 0, "the rendezvous");
	for (int i = 1; i < c->size; i++)
		got += rl.fds[i] != 0;
	if (ret == -ETIMEDOUT)
		ret = dc_fail(ret, "rank 0: %d of %d ranks registered before the timeout%s%s", got + 1,
			      c->size, g.strangers ? "; dropped strangers, the last: " : "",
			      g.strangers ? g.last_why : "");
	if (!ret)
		ret = dc_random(&c->id, sizeof(c->id));
	for (int i = 1; i < c->size; i++) {
		if (rl.fds[i] && !ret)
			ret = send_table(c, rl.fds[i], rl.cnonce[i], deadline);
		if (rl.fds[i])
			close(rl.fds[i]);
	}
	free(rl.fds);
	free(rl.cnonce);
	return ret;
}

/* The address this host sends from to reach @to (a UDP socket's connect
 * sends nothing): where to listen when nothing says. */
static int route_source(const devcoll_comm *c, const struct sockaddr_storage *to, socklen_t len,
			struct sockaddr_storage *out)
{
	socklen_t ol = sizeof(*out);
	int fd = socket(to->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return dc_fail(-errno, "socket: %s", strerror(errno));
	if (connect(fd, (const struct sockaddr *)to, len) ||
	    getsockname(fd, (struct sockaddr *)out, &ol))
		ret = dc_fail(-errno, "rank %d: no route to rank 0: %s", c->rank, strerror(errno));
	close(fd);
	return ret;
}

static void sign_reg(void *msg, const uint8_t key[DC_KEY_LEN], const uint8_t nonce[DC_NONCE_LEN])
{
	dc_reg_sign(msg, key, nonce);
}

/* The other ranks: the table rank 0 answers with, checked with the key. */
static int read_table(devcoll_comm *c, int fd, const uint8_t *cnonce, const char *addr,
		      int64_t deadline)
{
	struct dc_table_hdr t;
	struct sockaddr_storage *eps = calloc((size_t)c->size, sizeof(*eps));
	uint8_t mac[DEVTCP_SHA256_LEN], want[DEVTCP_SHA256_LEN];
	int ret;

	if (!eps)
		return dc_fail(-ENOMEM, "out of memory");
	ret = dc_io_all(fd, &t, sizeof(t), false, deadline);
	if (ret == -ECONNRESET)
		ret = dc_fail(-ECONNRESET, "rank %d: rank 0 at %s took the registration but closed "
			      "the connection before the table (it failed: see its error)", c->rank,
			      addr);
	if (!ret && (t.magic != AUTH_MAGIC || t.size != (uint32_t)c->size))
		ret = dc_fail(-EPROTO, "rank %d: garbage from the rendezvous at %s", c->rank, addr);
	if (!ret)
		ret = dc_io_all(fd, eps, (size_t)c->size * sizeof(*eps), false, deadline);
	if (!ret)
		ret = dc_io_all(fd, mac, sizeof(mac), false, deadline);
	if (!ret) {
		dc_table_mac(c->key, cnonce, &t, eps, want);
		if (!devtcp_mac_equal(mac, want, sizeof(mac)))
			ret = dc_fail(-EACCES, "rank %d: the rendezvous at %s does not know the job's "
				      "secret", c->rank, addr);
	}
	for (int j = 0; j < c->size && !ret; j++) {
		c->eps[j].sa = eps[j];
		c->eps[j].len = dc_sa_len(&eps[j]);
	}
	if (!ret)
		c->id = t.id;
	free(eps);
	return ret;
}

/* The other ranks: listen where the route to rank 0 leaves from (or where
 * DEVCOLL_BIND_ADDR or DEVCOLL_IF say), register, read the table. */
static int join(devcoll_comm *c, const char *addr, const struct sockaddr_storage *store,
		socklen_t slen, const char *bind_addr, const char *if_addr, int *lfd,
		int64_t deadline)
{
	struct dc_reg r = { AUTH_MAGIC, (uint32_t)c->rank, (uint32_t)c->size, 0, { 0 }, { 0 }, { 0 } };
	char who[300];
	struct dc_handshake h = { .to = store, .kind = DC_CH_REG, .msg = &r, .len = sizeof(r),
				  .sign = sign_reg, .key = c->key, .deadline = deadline,
				  .rank = c->rank, .who = who, .what = "registration" };
	struct sockaddr_storage local;
	socklen_t ll = sizeof(local);
	int fd = -1, ret;

	snprintf(who, sizeof(who), "rank 0 at %s", addr);
	if (bind_addr || if_addr)
		ret = dc_parse_addr(bind_addr ? bind_addr : if_addr, false,
				    bind_addr ? "DEVCOLL_BIND_ADDR" : "DEVCOLL_IF", &local, &ll);
	else
		ret = route_source(c, store, slen, &local);
	if (!ret)
		ret = dc_listen_like(&local, &c->eps[c->rank], lfd);
	if (!ret)
		ret = dc_random(r.cnonce, sizeof(r.cnonce));
	r.sa = c->eps[c->rank].sa;
	if (!ret)
		ret = dc_handshake(&h, &fd);
	if (!ret) {
		ret = read_table(c, fd, r.cnonce, addr, deadline);
		close(fd);
	}
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
	if (!ret)
		ret = dc_secret_env(c->key);
	if (ret)
		return ret;
	if (c->rank == 0)
		return serve(c, addr, &store, slen, bind_addr, lfd, deadline);
	return join(c, addr, &store, slen, bind_addr, if_addr, lfd, deadline);
}
