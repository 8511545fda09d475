// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Communicators: bootstrap from the environment (rank 0 serves a
 * rendezvous store on DEVCOLL_ADDR) or from PMIx (libpmix loaded at run time
 * when the launcher set PMIX_RANK), split and dup.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

static int (*pmix_finalize)(const void *, size_t);

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
	if (c->pmix && pmix_finalize)
		pmix_finalize(NULL, 0);	/* the world communicator made by PMIx */
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
	free(c);
}

/*
 * "host:port", "[v6 address]:port", or with @need_port false also a bare
 * "host", "[v6 address]" or "v6 address" (port 0). @what names the setting
 * in errors.
 */
static int parse_addr(const char *s, bool need_port, const char *what,
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

static socklen_t sa_len(const struct sockaddr_storage *sa)
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

/* A listener on @local's address (port 0); its reachable address in @ep. */
static int listen_like(const struct sockaddr_storage *local, struct endpoint *ep, int *lfd)
{
	struct sockaddr_storage sa = *local;
	int ret;

	sa_set_port(&sa, 0);
	ret = dc_listen(&sa, sa_len(&sa), lfd);
	if (ret)
		return ret;
	ep->sa = sa;
	ep->len = sa_len(&sa);
	return 0;
}

struct reg {
	uint32_t magic, rank, size, pad;
	struct sockaddr_storage sa;
};

/* Environment bootstrap: rank 0 collects every rank's endpoint and hands
 * out the table. */
/* @if_addr: DEVCOLL_IF's pick, for the ranks but 0 (which listens where
 * DEVCOLL_ADDR says: the others reach it there) */
static int boot_env(devcoll_comm *c, const char *addr, const char *bind_addr,
		    const char *if_addr, int *lfd)
{
	struct sockaddr_storage store;
	socklen_t slen;
	int64_t deadline = dc_now_ms() + c->timeout_ms;
	int ret;

	ret = parse_addr(addr, true, "DEVCOLL_ADDR", &store, &slen);
	if (ret)
		return ret;
	if (c->rank == 0) {
		struct sockaddr_storage sa = store;
		int *fds = calloc((size_t)c->size, sizeof(int)), got = 0;

		if (!fds)
			return dc_fail(-ENOMEM, "out of memory");
		if (bind_addr) {
			socklen_t l;

			ret = parse_addr(bind_addr, false, "DEVCOLL_BIND_ADDR", &sa, &l);
			if (ret) {
				free(fds);
				return ret;
			}
			sa_set_port(&sa, sa_port(&store));
		}
		ret = dc_listen(&sa, sa_len(&sa), lfd);
		if (ret) {
			free(fds);
			return dc_fail(ret, "rank 0: rendezvous on %s: %s", addr, devcoll_last_error());
		}
		c->eps[0].sa = store;	/* as the others reach it */
		c->eps[0].len = slen;
		while (got < c->size - 1) {
			struct pollfd p = { .fd = *lfd, .events = POLLIN };
			int64_t left = deadline - dc_now_ms();
			struct reg r;
			int fd;

			if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
				ret = dc_fail(-ETIMEDOUT, "rank 0: %d of %d ranks registered before the "
					      "timeout", got + 1, c->size);
				break;
			}
			fd = accept4(*lfd, NULL, NULL, SOCK_CLOEXEC);
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
			c->eps[r.rank].len = sa_len(&r.sa);
			got++;
		}
		for (int i = 1; i < c->size; i++) {
			if (!fds[i])
				continue;
			if (!ret)
				for (int j = 0; j < c->size && !ret; j++)
					ret = dc_io_all(fds[i], &c->eps[j].sa, sizeof(c->eps[j].sa), true,
							deadline);
			close(fds[i]);
		}
		free(fds);
		return ret;
	}
	/* the others: register with rank 0 (which may not be up yet) */
	int fd;

	for (;;) {
		fd = socket(store.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return dc_fail(-errno, "socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&store, slen))
			break;
		ret = -errno;
		close(fd);
		if (dc_now_ms() > deadline)
			return dc_fail(ret, "rank %d: cannot reach rank 0 at %s: %s", c->rank, addr,
				       strerror(-ret));
		usleep(20000);
	}
	struct sockaddr_storage local;
	socklen_t ll = sizeof(local);
	struct reg r = { WIRE_MAGIC, (uint32_t)c->rank, (uint32_t)c->size, 0, {0} };

	getsockname(fd, (struct sockaddr *)&local, &ll);
	if (bind_addr || if_addr) {
		socklen_t l;

		ret = parse_addr(bind_addr ? bind_addr : if_addr, false,
				 bind_addr ? "DEVCOLL_BIND_ADDR" : "DEVCOLL_IF", &local, &l);
		if (ret) {
			close(fd);
			return ret;
		}
	}
	ret = listen_like(&local, &c->eps[c->rank], lfd);
	if (!ret) {
		r.sa = c->eps[c->rank].sa;
		ret = dc_io_all(fd, &r, sizeof(r), true, deadline);
	}
	for (int j = 0; j < c->size && !ret; j++) {
		ret = dc_io_all(fd, &c->eps[j].sa, sizeof(c->eps[j].sa), false, deadline);
		c->eps[j].len = sa_len(&c->eps[j].sa);
	}
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------ PMIx */

#ifdef HAVE_PMIX_H
#include <pmix.h>
#else
/* The few PMIx types used, as PMIx 4 lays them out (pmix_common.h). */
#define PMIX_MAX_NSLEN 255
#define PMIX_MAX_KEYLEN 511
typedef struct {
	char nspace[PMIX_MAX_NSLEN + 1];
	uint32_t rank;
} pmix_proc_t;
typedef struct {
	uint16_t type;
	union {
		uint32_t uint32;
		char *string;
		uint64_t pad[4];
	} data;
} pmix_value_t;
#define PMIX_STRING 3
#define PMIX_UINT32 14
#define PMIX_RANK_WILDCARD UINT32_MAX - 1
#define PMIX_GLOBAL 3
#endif


static int boot_pmix(devcoll_comm **out, const devcoll_comm *like, const char *bind_addr, int *lfd)
{
	void *h = dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
	int (*init)(pmix_proc_t *, void *, size_t);
	int (*get)(const pmix_proc_t *, const char *, const void *, size_t, pmix_value_t **);
	int (*put)(int, const char *, pmix_value_t *);
	int (*commit)(void);
	int (*fence)(const pmix_proc_t *, size_t, const void *, size_t);
	pmix_proc_t me, wild;
	pmix_value_t *v, val;
	devcoll_comm *c;
	char ep[INET6_ADDRSTRLEN + 40];
	int ret, size;

	if (!h)
		h = dlopen("libpmix.so", RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return dc_fail(-ENOSYS, "started by a PMIx launcher, but libpmix cannot be loaded: %s",
			       dlerror());
	init = (int (*)(pmix_proc_t *, void *, size_t))dlsym(h, "PMIx_Init");
	get = (int (*)(const pmix_proc_t *, const char *, const void *, size_t, pmix_value_t **))
		dlsym(h, "PMIx_Get");
	put = (int (*)(int, const char *, pmix_value_t *))dlsym(h, "PMIx_Put");
	commit = (int (*)(void))dlsym(h, "PMIx_Commit");
	fence = (int (*)(const pmix_proc_t *, size_t, const void *, size_t))dlsym(h, "PMIx_Fence");
	pmix_finalize = (int (*)(const void *, size_t))dlsym(h, "PMIx_Finalize");
	if (!init || !get || !put || !commit || !fence)
		return dc_fail(-ENOSYS, "libpmix lacks PMIx_Init/Get/Put/Commit/Fence");
	ret = init(&me, NULL, 0);
	if (ret)
		return dc_fail(-EIO, "PMIx_Init failed (%d)", ret);
	wild = me;
	wild.rank = PMIX_RANK_WILDCARD;
	ret = get(&wild, "pmix.job.size", NULL, 0, &v);
	if (ret || v->type != PMIX_UINT32)
		return dc_fail(-EIO, "PMIx_Get(pmix.job.size) failed (%d)", ret);
	size = (int)v->data.uint32;
	ret = dc_comm_alloc(&c, (int)me.rank, size, like);
	if (ret)
		return ret;
	/* listen on the chosen address, or any; advertise a reachable one */
	struct sockaddr_storage sa = { .ss_family = AF_INET };
	char host[INET6_ADDRSTRLEN + 8] = "127.0.0.1", port[8];

	if (bind_addr) {
		socklen_t l;

		ret = parse_addr(bind_addr, false, "DEVCOLL_BIND_ADDR", &sa, &l);
		if (ret)
			goto fail;
	} else {
		struct ifaddrs *ifa, *i;

		if (!getifaddrs(&ifa)) {
			for (i = ifa; i; i = i->ifa_next)
				if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
				    !(i->ifa_flags & IFF_LOOPBACK) && (i->ifa_flags & IFF_UP)) {
					inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
						  host, sizeof(host));
					break;
				}
			freeifaddrs(ifa);
		}
		inet_pton(AF_INET, host, &((struct sockaddr_in *)&sa)->sin_addr);
	}
	ret = listen_like(&sa, &c->eps[c->rank], lfd);
	if (ret)
		goto fail;
	/* advertised numerically; IPv6 in brackets */
	if (getnameinfo((struct sockaddr *)&c->eps[c->rank].sa, c->eps[c->rank].len, host,
			sizeof(host), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV)) {
		ret = dc_fail(-EINVAL, "cannot print the listening address");
		goto fail;
	}
	snprintf(ep, sizeof(ep), c->eps[c->rank].sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
		 host, port);
	memset(&val, 0, sizeof(val));
	val.type = PMIX_STRING;
	val.data.string = ep;
	if (put(PMIX_GLOBAL, "devcoll.ep", &val) || commit() || fence(&wild, 1, NULL, 0)) {
		ret = dc_fail(-EIO, "PMIx_Put/Commit/Fence of the endpoints failed");
		goto fail;
	}
	for (int r = 0; r < size; r++) {
		pmix_proc_t p = me;
		socklen_t l;

		p.rank = (uint32_t)r;
		if (get(&p, "devcoll.ep", NULL, 0, &v) || v->type != PMIX_STRING) {
			ret = dc_fail(-EIO, "PMIx_Get(devcoll.ep) of rank %d failed", r);
			goto fail;
		}
		ret = parse_addr(v->data.string, true, "devcoll.ep", &c->eps[r].sa, &l);
		if (ret)
			goto fail;
		c->eps[r].len = l;
	}
	c->pmix = true;
	*out = c;
	return 0;
fail:
	dc_comm_free(c);
	return ret;
}

static uint64_t fresh_id(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
		ret = boot_pmix(&c, &proto, bind_addr ? bind_addr : if_addr, &lfd);
		if (ret)
			return ret;
		c->id = 0x9e3779b97f4a7c15ull;	/* the same on every rank */
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
		c->id = 0x9e3779b97f4a7c15ull;
		if (size > 1) {
			ret = boot_env(c, addr, bind_addr, if_addr, &lfd);
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
		ret = listen_like(&p->eps[p->rank].sa, &ep, &lfd);
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
		c->id = p->id * 31 + p->seq * 7 + (uint64_t)(uint32_t)color;
		for (int i = 0; i < n; i++) {
			c->eps[i].sa = all[mem[i]].sa;
			c->eps[i].len = sa_len(&all[mem[i]].sa);
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
	(void)fresh_id;
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
