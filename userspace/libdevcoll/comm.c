// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Communicators: made from the options and the environment, bootstrapped
 * (bootstrap.c: DEVCOLL_ADDR's rendezvous; pmix.c: a PMIx launcher), split
 * and dup'ed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

/* @v as a number with an optional K or M suffix; false when it is not one. */
static bool parse_number(const char *v, long *x)
{
	char *end;

	errno = 0;
	*x = strtol(v, &end, 0);
	if (*end == 'k' || *end == 'K')
		*x <<= 10;
	else if (*end == 'm' || *end == 'M')
		*x <<= 20;
	if (*end && strchr("kKmM", *end))
		end++;
	return !errno && end != v && !*end;
}

/* A number from the environment, with a K or M suffix; @dflt when unset
 * (env_numbers_ok() has refused malformed values). */
long dc_env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	long x;

	if (!v || !*v)
		return dflt;
	parse_number(v, &x);
	return x;
}

/*
 * The engine polls the sockets this long before sleeping: a wake-up from
 * epoll_wait costs tens of microseconds, more than a small message and a
 * tenth of a large one's chunk. The poll yields the CPU between rounds, so
 * ranks sharing a CPU still take turns.
 */
#define DEFAULT_SPIN_US 50

int dc_comm_alloc(devcoll_comm **out, int rank, int size, const devcoll_comm *like)
{
	devcoll_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return dc_fail(-ENOMEM, "out of memory");
	c->rank = rank;
	c->size = size;
	c->epfd = -1;
	c->wakefd = -1;
	if (like) {
		c->nconns = like->nconns;
		c->timeout_ms = like->timeout_ms;
		c->chunk = like->chunk;
		c->rxmode = like->rxmode;
		c->algo = like->algo;
		c->rooted = like->rooted;
		c->small_max = like->small_max;
		c->spin_us = like->spin_us;
		memcpy(c->tcp_cc, like->tcp_cc, sizeof(c->tcp_cc));
		c->tcp_cc_set = like->tcp_cc_set;
		memcpy(c->key, like->key, sizeof(c->key));
	}
	c->conns = calloc((size_t)size * c->nconns, sizeof(*c->conns));
	c->p2p_sseq = calloc((size_t)size, sizeof(uint32_t));
	c->p2p_rseq = calloc((size_t)size, sizeof(uint32_t));
	c->eps = calloc((size_t)size, sizeof(*c->eps));
	if (!c->conns || !c->p2p_sseq || !c->p2p_rseq || !c->eps) {
		dc_comm_free(c);
		return dc_fail(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < size * (int)c->nconns; i++) {
		c->conns[i].fd = -1;
		c->conns[i].peer = i / (int)c->nconns;
	}
	pthread_mutex_init(&c->mtx, NULL);
	pthread_cond_init(&c->cv, NULL);
	if (like && dc_cuda_like(c, like->cuda)) {
		dc_comm_free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void dc_comm_free(devcoll_comm *c)
{
	if (!c)
		return;
	if (c->thread_started) {
		pthread_mutex_lock(&c->mtx);
		c->stop = true;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mtx);
		pthread_join(c->thread, NULL);
	}
	dc_dm_free(c);
	dc_cuda_free(c);
	if (c->pmix)
		dc_pmix_finalize();	/* the world communicator made by PMIx */
	for (int i = 0; c->conns && i < c->size * (int)c->nconns; i++) {
		if (c->conns[i].fd >= 0)
			close(c->conns[i].fd);
		free(c->conns[i].stage);
	}
	if (c->epfd >= 0)
		close(c->epfd);
	if (c->wakefd >= 0)
		close(c->wakefd);
	pthread_mutex_destroy(&c->mtx);
	pthread_cond_destroy(&c->cv);
	free(c->conns);
	free(c->p2p_sseq);
	free(c->p2p_rseq);
	free(c->eps);
	free(c->tmp);
	explicit_bzero(c->key, sizeof(c->key));
	free(c);
}

/* A split's id: the same on every member, unpredictable without the key,
 * and another for every split (the parent's collectives count them) and
 * color, so that no connection of one is taken for another's. */
static uint64_t split_id(const devcoll_comm *p, int color)
{
	struct { uint64_t id; uint32_t seq; int32_t color; } in = { p->id, p->seq, color };
	uint8_t mac[DEVTCP_SHA256_LEN];
	struct devtcp_hmac_sha256 m;
	uint64_t id;

	devtcp_hmac_sha256_init(&m, p->key, sizeof(p->key));
	devtcp_hmac_sha256_update(&m, "devcoll split", sizeof("devcoll split"));
	devtcp_hmac_sha256_update(&m, &in, sizeof(in));
	devtcp_hmac_sha256_final(&m, mac);
	memcpy(&id, mac, sizeof(id));
	return id;
}

/* Every numeric setting that is set must be a number (K or M suffix). */
static int env_numbers_ok(void)
{
	static const char *const names[] = {
		"DEVCOLL_NCONNS", "DEVCOLL_TIMEOUT_MS", "DEVCOLL_CHUNK", "DEVCOLL_SMALL_MAX",
		"DEVCOLL_SPIN_US", "DEVCOLL_RANK", "DEVCOLL_SIZE", "DEVCOLL_DEVMEM_SIZE",
		"DEVCOLL_DEVMEM_QUEUE", "DEVCOLL_DEBUG",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);
		long x;

		if (v && *v && !parse_number(v, &x))
			return dc_fail(-EINVAL, "%s=%s: not a number (K and M suffixes allowed)",
				       names[i], v);
	}
	return 0;
}

static int comm_defaults(devcoll_comm *c, const struct devcoll_opts *o)
{
	const char *a = getenv("DEVCOLL_ALGO"), *rx = getenv("DEVCOLL_RX");
	const char *ra = getenv("DEVCOLL_ROOTED_ALGO");
	const char *cc = getenv("DEVCOLL_TCP_CONGESTION");

	if (env_numbers_ok())
		return -EINVAL;

	c->nconns = o && o->nconns ? o->nconns : (unsigned int)dc_env_long("DEVCOLL_NCONNS", 2);
	c->timeout_ms = o && o->timeout_ms ? o->timeout_ms : (int)dc_env_long("DEVCOLL_TIMEOUT_MS", 60000);
	c->chunk = o && o->chunk ? o->chunk : (size_t)dc_env_long("DEVCOLL_CHUNK", 256 << 10);
	c->small_max = (size_t)dc_env_long("DEVCOLL_SMALL_MAX", 64 << 10);
	c->spin_us = (int)dc_env_long("DEVCOLL_SPIN_US", DEFAULT_SPIN_US);
	c->rxmode = o && o->rx ? o->rx : (rx && !strcmp(rx, "devmem") ? DEVCOLL_RX_DEVMEM : 0);
	c->algo = DEVCOLL_ALGO_AUTO;
	if (a && !strcmp(a, "ring"))
		c->algo = DEVCOLL_ALGO_RING;
	else if (a && !strcmp(a, "rd"))
		c->algo = DEVCOLL_ALGO_RD;
	else if (a && !strcmp(a, "tree"))
		c->algo = DEVCOLL_ALGO_TREE;
	else if (a && !strcmp(a, "hd"))
		c->algo = DEVCOLL_ALGO_HD;
	else if (a && *a && strcmp(a, "auto"))
		return dc_fail(-EINVAL, "DEVCOLL_ALGO=%s: want ring, rd, hd, tree or auto", a);
	c->rooted = ROOTED_AUTO;
	if (ra && !strcmp(ra, "tree"))
		c->rooted = ROOTED_TREE;
	else if (ra && !strcmp(ra, "chain"))
		c->rooted = ROOTED_CHAIN;
	else if (ra && *ra && strcmp(ra, "auto"))
		return dc_fail(-EINVAL, "DEVCOLL_ROOTED_ALGO=%s: want chain, tree or auto", ra);
	c->tcp_cc_set = cc && *cc;
	if (!c->tcp_cc_set)
		cc = "reno";
	else if (!strcmp(cc, "system"))
		cc = "";
	if (strlen(cc) >= sizeof(c->tcp_cc))
		return dc_fail(-EINVAL, "DEVCOLL_TCP_CONGESTION=%s: no such algorithm", cc);
	snprintf(c->tcp_cc, sizeof(c->tcp_cc), "%s", cc);
	if (c->nconns < 1 || c->nconns > 64)
		return dc_fail(-EINVAL, "DEVCOLL_NCONNS: 1 to 64 connections per peer");
	if (c->timeout_ms <= 0)
		return dc_fail(-EINVAL, "DEVCOLL_TIMEOUT_MS: must be positive");
	c->chunk &= ~(size_t)63;
	if (c->chunk < 4096 || c->chunk > (1u << 30))
		return dc_fail(-EINVAL, "DEVCOLL_CHUNK: 4 KiB to 1 GiB");
	return dc_cuda_init(c);
}

static int finish(devcoll_comm *c, int lfd, const devcoll_comm *parent)
{
	int ret = dc_mesh(c, lfd, c->eps);

	close(lfd);
	if (!ret && c->rxmode == DEVCOLL_RX_DEVMEM)
		ret = dc_dm_setup(c, parent);
	return ret;
}

DEVCOLL_EXPORT int devcoll_comm_init(devcoll_comm **out, const struct devcoll_opts *opts)
{
	devcoll_comm proto = { 0 }, *c;
	const char *addr = opts && opts->addr ? opts->addr : getenv("DEVCOLL_ADDR");
	const char *bind_addr = opts && opts->bind_addr ? opts->bind_addr : getenv("DEVCOLL_BIND_ADDR");
	const char *ifs = getenv("DEVCOLL_IF"), *if_addr = NULL;
	char if_buf[INET6_ADDRSTRLEN];
	int ret, lfd = -1, rank, size;

	*out = NULL;
	ret = comm_defaults(&proto, opts);
	if (ret)
		return ret;
	/* an address given outright wins over the interfaces to pick from */
	if (!bind_addr && ifs && *ifs) {
		ret = dc_if_addr(ifs, if_buf, sizeof(if_buf));
		if (ret)
			return ret;
		if_addr = if_buf;
	}
	if ((!opts || opts->rank < 0) && getenv("PMIX_RANK") && !getenv("DEVCOLL_RANK")) {
		ret = dc_boot_pmix(&c, &proto, bind_addr ? bind_addr : if_addr, &lfd);
		if (ret)
			return ret;
	} else {
		rank = opts && opts->rank >= 0 ? opts->rank : (int)dc_env_long("DEVCOLL_RANK", -1);
		size = opts && opts->rank >= 0 ? opts->size : (int)dc_env_long("DEVCOLL_SIZE", -1);
		if (size < 1 || rank < 0 || rank >= size)
			return dc_fail(-EINVAL, "no communicator: set DEVCOLL_RANK, DEVCOLL_SIZE and "
				       "DEVCOLL_ADDR, or start under mpirun/srun (PMIx)");
		if (size > 1 && !addr)
			return dc_fail(-EINVAL, "DEVCOLL_ADDR (rank 0's host:port) is not set");
		ret = dc_comm_alloc(&c, rank, size, &proto);
		if (ret)
			return ret;
		if (size > 1) {
			ret = dc_boot_env(c, addr, bind_addr, if_addr, &lfd);
			if (ret) {
				if (lfd >= 0)
					close(lfd);
				dc_comm_free(c);
				return ret;
			}
		}
	}
	if (lfd >= 0) {
		ret = finish(c, lfd, NULL);
		if (ret) {
			dc_comm_free(c);
			return ret;
		}
	}
	*out = c;
	return 0;
}

/* Split: a fresh listener per rank; (color, key, endpoint) allgathered over
 * the parent; each group meshes on its own. */
struct split_ent {
	int32_t color, key, rank, pad;
	struct sockaddr_storage sa;
};

DEVCOLL_EXPORT int devcoll_comm_split(devcoll_comm *p, int color, int key, devcoll_comm **out)
{
	struct split_ent me = { color, key, p->rank, 0, {0} }, *all;
	struct endpoint ep;
	devcoll_comm *c = NULL;
	int lfd = -1, ret, n = 0, myrank = 0;

	*out = NULL;
	if (p->size > 1) {
		ret = dc_listen_like(&p->eps[p->rank].sa, &ep, &lfd);
		if (ret)
			return dc_comm_fail(p, ret, "split: %s", devcoll_last_error());
		me.sa = ep.sa;
	}
	all = calloc((size_t)p->size, sizeof(*all));
	if (!all) {
		if (lfd >= 0)
			close(lfd);
		return dc_fail(-ENOMEM, "out of memory");
	}
	ret = dc_allgather_raw(p, &me, all, sizeof(me), K_SPLIT);
	if (ret || color == DEVCOLL_UNDEFINED)
		goto out;
	/* members in (key, rank) order */
	int *mem = calloc((size_t)p->size, sizeof(int));

	if (!mem) {
		ret = dc_fail(-ENOMEM, "out of memory");
		goto out;
	}
	for (int r = 0; r < p->size; r++)
		if (all[r].color == color)
			mem[n++] = r;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && (all[mem[j]].key < all[mem[j - 1]].key ||
					  (all[mem[j]].key == all[mem[j - 1]].key && mem[j] < mem[j - 1])); j--) {
			int t = mem[j];

			mem[j] = mem[j - 1];
			mem[j - 1] = t;
		}
	for (int i = 0; i < n; i++)
		if (mem[i] == p->rank)
			myrank = i;
	ret = dc_comm_alloc(&c, myrank, n, p);
	if (!ret) {
		c->id = split_id(p, color);
		for (int i = 0; i < n; i++) {
			c->eps[i].sa = all[mem[i]].sa;
			c->eps[i].len = dc_sa_len(&all[mem[i]].sa);
		}
		if (n > 1) {
			ret = finish(c, lfd, p);
			lfd = -1;
		}
	}
	free(mem);
	if (ret) {
		dc_comm_free(c);
		c = NULL;
	}
out:
	if (lfd >= 0)
		close(lfd);
	free(all);
	*out = c;
	return ret;
}

DEVCOLL_EXPORT int devcoll_comm_dup(devcoll_comm *p, devcoll_comm **out)
{
	return devcoll_comm_split(p, 0, p->rank, out);
}

DEVCOLL_EXPORT void devcoll_comm_destroy(devcoll_comm *c)
{
	dc_comm_free(c);
}

DEVCOLL_EXPORT int devcoll_comm_rank(const devcoll_comm *c)
{
	return c->rank;
}

DEVCOLL_EXPORT int devcoll_comm_size(const devcoll_comm *c)
{
	return c->size;
}

DEVCOLL_EXPORT int devcoll_comm_error(const devcoll_comm *c)
{
	return c->err;
}
