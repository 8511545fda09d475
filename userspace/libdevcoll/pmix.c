// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Bootstrap under a PMIx launcher (mpirun, srun: PMIX_RANK is set): libpmix
 * is loaded at run time, each rank puts the endpoint it listens on (rank 0
 * also a fresh secret and communicator id), a fence publishes them, and
 * each rank gets all of them.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

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

/* The entry points used, resolved once. */
static struct {
	int (*init)(pmix_proc_t *, void *, size_t);
	int (*get)(const pmix_proc_t *, const char *, const void *, size_t, pmix_value_t **);
	int (*put)(int, const char *, pmix_value_t *);
	int (*commit)(void);
	int (*fence)(const pmix_proc_t *, size_t, const void *, size_t);
	int (*finalize)(const void *, size_t);
} px;

static int load(void)
{
	static const struct {
		const char *name;
		void **fn;
	} syms[] = {
		{ "PMIx_Init", (void **)&px.init },
		{ "PMIx_Get", (void **)&px.get },
		{ "PMIx_Put", (void **)&px.put },
		{ "PMIx_Commit", (void **)&px.commit },
		{ "PMIx_Fence", (void **)&px.fence },
		{ "PMIx_Finalize", (void **)&px.finalize },
	};
	void *h = dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);

	if (!h)
		h = dlopen("libpmix.so", RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return dc_fail(-ENOSYS, "started by a PMIx launcher, but libpmix cannot be loaded: %s",
			       dlerror());
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name)))
			return dc_fail(-ENOSYS, "libpmix lacks %s", syms[i].name);
	return 0;
}

void dc_pmix_finalize(void)
{
	if (px.finalize)
		px.finalize(NULL, 0);
}

/* Where to listen: @bind_addr, else the first IPv4 address of an interface
 * that is up and not loopback, else 127.0.0.1. */
static int pick_address(const char *bind_addr, struct sockaddr_storage *sa)
{
	char host[INET6_ADDRSTRLEN] = "127.0.0.1";
	struct ifaddrs *ifa, *i;
	socklen_t l;

	if (bind_addr)
		return dc_parse_addr(bind_addr, false, "DEVCOLL_BIND_ADDR", sa, &l);
	if (!getifaddrs(&ifa)) {
		for (i = ifa; i; i = i->ifa_next) {
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			    !(i->ifa_flags & IFF_LOOPBACK) && (i->ifa_flags & IFF_UP)) {
				inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
					  host, sizeof(host));
				break;
			}
		}
		freeifaddrs(ifa);
	}
	sa->ss_family = AF_INET;
	inet_pton(AF_INET, host, &((struct sockaddr_in *)sa)->sin_addr);
	return 0;
}

/* Rank 0's draw: the job's secret and the world's id, in hex. */
#define AUTH_BYTES (DC_KEY_LEN + 8)

static int put_auth(void)
{
	char hex[2 * AUTH_BYTES + 1];
	pmix_value_t val;
	int ret;

	if (dc_random_hex(hex, AUTH_BYTES))
		return -EIO;
	memset(&val, 0, sizeof(val));
	val.type = PMIX_STRING;
	val.data.string = hex;
	/* PMIx hands it to this job's processes only, never over our sockets */
	ret = px.put(PMIX_GLOBAL, "devcoll.auth", &val) ?
		dc_fail(-EIO, "PMIx_Put(devcoll.auth) failed") : 0;
	explicit_bzero(hex, sizeof(hex));
	return ret;
}

/* What rank 0 puts instead when it has no secret to give (then it fails,
 * after the fence, so that no rank waits at it forever). */
#define AUTH_FAILED "failed"

/* A value PMIx_Get returned, wiped (it may hold the secret) and freed as
 * PMIX_VALUE_RELEASE does: PMIx allocates both with malloc. */
static void value_free(pmix_value_t *v)
{
	if (v->type == PMIX_STRING && v->data.string) {
		explicit_bzero(v->data.string, strlen(v->data.string));
		free(v->data.string);
	}
	free(v);
}

/* The job's key and the world's id, as rank 0 put them. */
static int get_auth(devcoll_comm *c, const pmix_proc_t *me)
{
	pmix_proc_t p0 = *me;
	uint8_t raw[AUTH_BYTES];
	pmix_value_t *v;

	p0.rank = 0;
	if (px.get(&p0, "devcoll.auth", NULL, 0, &v))
		return dc_fail(-EIO, "PMIx_Get(devcoll.auth) of rank 0 failed");
	if (v->type != PMIX_STRING || strlen(v->data.string) != 2 * AUTH_BYTES) {
		bool failed = v->type == PMIX_STRING && !strcmp(v->data.string, AUTH_FAILED);

		value_free(v);
		return dc_fail(-EIO, failed ? "rank 0 could not put the job's secret into PMIx (see "
			       "its error)" : "devcoll.auth of rank 0 is not a secret");
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		unsigned int b;

		if (sscanf(v->data.string + 2 * i, "%2x", &b) != 1) {
			value_free(v);
			explicit_bzero(raw, sizeof(raw));
			return dc_fail(-EIO, "devcoll.auth of rank 0 is not hex");
		}
		raw[i] = (uint8_t)b;
	}
	value_free(v);
	dc_key_of(raw, DC_KEY_LEN, c->key);
	memcpy(&c->id, raw + DC_KEY_LEN, sizeof(c->id));
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* Puts this rank's endpoint (numeric, IPv6 in brackets) and, on rank 0,
 * the job's secret; fences, and gets every rank's endpoint and the secret. */
static int exchange(devcoll_comm *c, const pmix_proc_t *me)
{
	char host[INET6_ADDRSTRLEN + 8], port[8], ep[INET6_ADDRSTRLEN + 40];
	pmix_proc_t wild = *me;
	pmix_value_t *v, val;
	char why[256] = "";
	int auth_err = 0;

	wild.rank = PMIX_RANK_WILDCARD;
	if (getnameinfo((struct sockaddr *)&c->eps[c->rank].sa, c->eps[c->rank].len, host,
			sizeof(host), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV))
		return dc_fail(-EINVAL, "cannot print the listening address");
	snprintf(ep, sizeof(ep), c->eps[c->rank].sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
		 host, port);
	memset(&val, 0, sizeof(val));
	val.type = PMIX_STRING;
	val.data.string = ep;
	/* rank 0 fails after the fence, the others at the marker it put */
	if (c->rank == 0 && (auth_err = put_auth())) {
		pmix_value_t mark = { .type = PMIX_STRING, .data.string = AUTH_FAILED };

		snprintf(why, sizeof(why), "%s", devcoll_last_error());
		px.put(PMIX_GLOBAL, "devcoll.auth", &mark);
	}
	if (px.put(PMIX_GLOBAL, "devcoll.ep", &val) || px.commit() || px.fence(&wild, 1, NULL, 0))
		return dc_fail(-EIO, "PMIx_Put/Commit/Fence of the endpoints failed");
	if (auth_err)
		return dc_fail(auth_err, "%s", why);
	if (get_auth(c, me))
		return -EIO;
	for (int r = 0; r < c->size; r++) {
		pmix_proc_t p = *me;
		socklen_t l;
		int ret;

		p.rank = (uint32_t)r;
		if (px.get(&p, "devcoll.ep", NULL, 0, &v) || v->type != PMIX_STRING)
			return dc_fail(-EIO, "PMIx_Get(devcoll.ep) of rank %d failed", r);
		ret = dc_parse_addr(v->data.string, true, "devcoll.ep", &c->eps[r].sa, &l);
		value_free(v);
		if (ret)
			return ret;
		c->eps[r].len = l;
	}
	return 0;
}

int dc_boot_pmix(devcoll_comm **out, const devcoll_comm *like, const char *bind_addr, int *lfd)
{
	struct sockaddr_storage sa = { .ss_family = AF_INET };
	pmix_proc_t me, wild;
	devcoll_comm *c;
	pmix_value_t *v;
	int ret;

	ret = load();
	if (ret)
		return ret;
	ret = px.init(&me, NULL, 0);
	if (ret)
		return dc_fail(-EIO, "PMIx_Init failed (%d)", ret);
	wild = me;
	wild.rank = PMIX_RANK_WILDCARD;
	ret = px.get(&wild, "pmix.job.size", NULL, 0, &v);
	if (ret || v->type != PMIX_UINT32)
		return dc_fail(-EIO, "PMIx_Get(pmix.job.size) failed (%d)", ret);
	ret = dc_comm_alloc(&c, (int)me.rank, (int)v->data.uint32, like);
	if (ret)
		return ret;
	ret = pick_address(bind_addr, &sa);
	if (!ret)
		ret = dc_listen_like(&sa, &c->eps[c->rank], lfd);
	if (!ret)
		ret = exchange(c, &me);
	if (ret) {
		dc_comm_free(c);
		return ret;
	}
	c->pmix = true;
	*out = c;
	return 0;
}
