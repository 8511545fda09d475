// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * IPv6: rank 0's rendezvous on [::1]:port (and on "::1:port", the last
 * colon separating the port), every peer endpoint and data connection IPv6
 * (checked on the communicator's internals), and collectives, send/recv
 * and split over them on 1 to 4 ranks; DEVCOLL_BIND_ADDR as a bare or
 * bracketed IPv6 address; malformed addresses fail with -EINVAL. Skips,
 * saying so, where the host has no IPv6 loopback.
 */
#include <netinet/in.h>
#include "common.h"
#include "internal.h"

/* 0 when every endpoint and connection of @c is IPv6 */
static int all_v6(devcoll_comm *c, const char *what)
{
	int bad = 0;

	for (int i = 0; i < c->size; i++)
		bad += c->size > 1 && c->eps[i].sa.ss_family != AF_INET6;
	for (int i = 0; i < c->size * (int)c->nconns; i++) {
		struct sockaddr_storage sa;
		socklen_t l = sizeof(sa);

		if (c->conns[i].fd < 0)
			continue;
		if (getpeername(c->conns[i].fd, (struct sockaddr *)&sa, &l) || sa.ss_family != AF_INET6)
			bad++;
	}
	if (bad)
		fprintf(stderr, "  rank %d: %s: %d endpoints or connections are not IPv6\n", c->rank,
			what, bad);
	return bad;
}

static int v6(devcoll_comm *c, void *arg)
{
	int r = devcoll_comm_rank(c), W = devcoll_comm_size(c), fails = all_v6(c, "world"), ret;
	size_t n = 300001;
	float *a = malloc(n * 4);
	int64_t v = r + 1, g[8];

	(void)arg;
	for (size_t i = 0; i < n; i++)
		a[i] = (float)in_f(r, i, DEVCOLL_SUM);
	ret = devcoll_allreduce(c, a, a, n, DEVCOLL_FP32, DEVCOLL_SUM);
	for (size_t i = 0; !ret && i < n; i++)
		if (check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, a, i, i)) {
			ret = -1;
			break;
		}
	if (ret) {
		fprintf(stderr, "  rank %d: allreduce over IPv6: %s\n", r, ret < 0 && ret != -1 ?
			devcoll_last_error() : "wrong");
		fails++;
	}
	ret = devcoll_allreduce(c, &v, &v, 1, DEVCOLL_INT64, DEVCOLL_SUM);
	fails += ret || v != (int64_t)W * (W + 1) / 2;
	v = r * 10;
	ret = devcoll_allgather(c, &v, g, 1, DEVCOLL_INT64);
	for (int k = 0; !ret && k < W; k++)
		fails += g[k] != k * 10;
	fails += !!ret;
	/* 1.2 MB: the pipelined chain on 3 and 4 ranks */
	for (size_t i = 0; i < n; i++)
		a[i] = r == W - 1 ? (float)i : -1.0f;
	ret = devcoll_broadcast(c, a, n, DEVCOLL_FP32, W - 1);
	for (size_t i = 0; !ret && i < n; i++)
		if (a[i] != (float)i) {
			ret = -1;
			break;
		}
	if (ret) {
		fprintf(stderr, "  rank %d: broadcast over IPv6 failed\n", r);
		fails++;
	}
	if (W > 1) {
		int64_t out = r, in = -1;
		devcoll_req *q[2];

		ret = devcoll_irecv(c, &in, 1, DEVCOLL_INT64, (r + W - 1) % W, 5, &q[0]) ||
		      devcoll_isend(c, &out, 1, DEVCOLL_INT64, (r + 1) % W, 5, &q[1]) ||
		      devcoll_wait(q[0]) || devcoll_wait(q[1]);
		if (ret || in != (r + W - 1) % W) {
			fprintf(stderr, "  rank %d: isend/irecv over IPv6 failed\n", r);
			fails++;
		}
	}
	devcoll_comm *sub;

	ret = devcoll_comm_split(c, r % 2, r, &sub);
	if (ret) {
		fprintf(stderr, "  rank %d: split over IPv6: %s\n", r, devcoll_last_error());
		fails++;
	} else {
		fails += all_v6(sub, "split");
		v = 1;
		ret = devcoll_allreduce(sub, &v, &v, 1, DEVCOLL_INT64, DEVCOLL_SUM);
		fails += ret || v != devcoll_comm_size(sub);
		devcoll_comm_destroy(sub);
	}
	free(a);
	return fails ? 1 : 0;
}

static int free_port6(void)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET6, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &l))
		port = ntohs(sa.sin6_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int main(void)
{
	struct devcoll_opts o = { .timeout_ms = 30000 };
	int st[8], fails = 0, port = free_port6();

	if (port < 0) {
		return check_skip("this host has no IPv6 loopback (::1): %s", strerror(errno));
	}
	for (int n = 1; n <= 4; n++) {
		char addr[64];

		/* brackets, and the bare form on 3 ranks */
		snprintf(addr, sizeof(addr), n == 3 ? "::1:%d" : "[::1]:%d", free_port6());
		int bad = run_world_at(addr, n, &o, v6, NULL, st, 120);

		printf("%s: %d ranks over IPv6, rendezvous on %s\n", bad ? "FAIL" : "ok", n, addr);
		fails += bad;
	}
	/* the listening address given without a port, bare and bracketed */
	static const char *const binds[] = { "::1", "[::1]" };

	for (int i = 0; i < 2; i++) {
		char addr[64];

		snprintf(addr, sizeof(addr), "[::1]:%d", free_port6());
		o.bind_addr = binds[i];
		int bad = run_world_at(addr, 2 + i, &o, v6, NULL, st, 120);

		printf("%s: %d ranks over IPv6, DEVCOLL_BIND_ADDR=%s\n", bad ? "FAIL" : "ok", 2 + i,
		       binds[i]);
		fails += bad;
	}
	o.bind_addr = NULL;
	static const char *const badaddr[] = { "[::1", "[::1]x80", "::1", "[::1]", "[]:80", ":80" };

	for (int i = 0; i < 6; i++) {
		struct devcoll_opts b = { .rank = 1, .size = 2, .addr = badaddr[i], .timeout_ms = 1000 };
		devcoll_comm *c = NULL;
		int ret = devcoll_comm_init(&c, &b);

		if (ret != -EINVAL || c) {
			printf("FAIL: DEVCOLL_ADDR=%s: %d (%s), not -EINVAL\n", badaddr[i], ret,
			       devcoll_last_error());
			fails++;
			devcoll_comm_destroy(c);
		}
	}
	printf("%s: malformed rendezvous addresses fail with -EINVAL\n", fails ? "FAIL" : "ok");
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
