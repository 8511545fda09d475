// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DEVCOLL_IF picks the address ranks listen on and give their peers: by
 * interface name or by subnet, IPv4 or IPv6, the first item that matches;
 * DEVCOLL_BIND_ADDR wins over it; names and subnets that match nothing up
 * (an interface that is down, one that does not exist) and malformed
 * subnets fail devcoll_comm_init() with a message listing what is up. In a
 * network namespace of its own (root) with two veth interfaces: dcif0 up
 * with 10.77.0.1/24 and fd77::1/64, dcif1 down with 10.78.0.1/24. Ranks 1
 * and 2 listen on the address picked; rank 0 on DEVCOLL_ADDR, where the
 * others reach it.
 */
#include <sched.h>
#include "common.h"
#include "internal.h"

/* Every rank but 0 must be reachable at @arg; an allreduce must work. */
static int check_eps(devcoll_comm *c, void *arg)
{
	const char *want = arg;
	int64_t v = 1;
	int bad = 0;

	for (int k = 1; k < devcoll_comm_size(c); k++) {
		char host[INET6_ADDRSTRLEN] = "?";
		const struct sockaddr_storage *sa = &c->eps[k].sa;
		const void *a = sa->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
							 : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;

		inet_ntop(sa->ss_family, a, host, sizeof(host));
		if (strcmp(host, want)) {
			fprintf(stderr, "  rank %d: rank %d listens on %s, not %s\n",
				devcoll_comm_rank(c), k, host, want);
			bad++;
		}
	}
	if (devcoll_allreduce(c, &v, &v, 1, DEVCOLL_INT64, DEVCOLL_SUM) ||
	    v != devcoll_comm_size(c)) {
		fprintf(stderr, "  rank %d: allreduce: %s\n", devcoll_comm_rank(c), devcoll_last_error());
		bad++;
	}
	return bad != 0;
}

static int picks(const char *ifs, const char *bind, const char *want)
{
	int st[3], bad;

	setenv("DEVCOLL_IF", ifs, 1);
	if (bind)
		setenv("DEVCOLL_BIND_ADDR", bind, 1);
	bad = run_world(3, NULL, check_eps, (void *)want, st, 20);
	unsetenv("DEVCOLL_BIND_ADDR");
	printf("%s: DEVCOLL_IF=%s%s%s: ranks 1 and 2 on %s\n", bad ? "FAIL" : "ok", ifs,
	       bind ? " with DEVCOLL_BIND_ADDR=" : "", bind ? bind : "", want);
	return bad != 0;
}

static int refused(const char *ifs, const char *want)
{
	struct devcoll_opts o = { .rank = 0, .size = 1 };
	devcoll_comm *c = NULL;
	int ret, bad;

	setenv("DEVCOLL_IF", ifs, 1);
	ret = devcoll_comm_init(&c, &o);
	/* a name or subnet that matches nothing: the message says what is up */
	bad = !ret || !strstr(devcoll_last_error(), want) ||
	      (strstr(want, "no address") && !strstr(devcoll_last_error(), "dcif0 10.77.0.1"));
	printf("%s: DEVCOLL_IF=%s refused: %s\n", bad ? "FAIL" : "ok", ifs,
	       ret ? devcoll_last_error() : "(it was accepted)");
	if (c)
		devcoll_comm_destroy(c);
	return bad;
}

int main(void)
{
	int fails = 0;

	if (geteuid()) {
		return check_skip("DEVCOLL_IF's test makes a network namespace and interfaces: "
				  "needs root");
	}
	if (unshare(CLONE_NEWNET)) {
		printf("FAIL: unshare(CLONE_NEWNET): %s\n", strerror(errno));
		return 1;
	}
	/* veth pairs: the kernels CI runs on may lack the dummy driver */
	if (system("ip link set lo up && ip link add dcif0 type veth peer name dcif0p && "
		   "ip addr add 10.77.0.1/24 dev dcif0 && ip addr add fd77::1/64 dev dcif0 nodad && "
		   "ip link set dcif0p up && ip link set dcif0 up && "
		   "ip link add dcif1 type veth peer name dcif1p && "
		   "ip addr add 10.78.0.1/24 dev dcif1")) {
		printf("FAIL: cannot set up the veth interfaces (iproute2)\n");
		return 1;
	}
	fails += picks("", NULL, "127.0.0.1");	/* unset: the way to rank 0 */
	fails += picks("dcif0", NULL, "10.77.0.1");
	fails += picks("10.77.0.0/16", NULL, "10.77.0.1");
	fails += picks("fd77::/64", NULL, "fd77::1");
	fails += picks("nosuch,dcif1,lo", NULL, "127.0.0.1");	/* the first that is up */
	fails += picks("dcif0", "127.0.0.1", "127.0.0.1");
	fails += refused("nosuch", "DEVCOLL_IF=nosuch: no address of an interface that is up");
	fails += refused("dcif1", "DEVCOLL_IF=dcif1: no address");
	fails += refused("10.99.0.0/16", "DEVCOLL_IF=10.99.0.0/16: no address");
	fails += refused("10.77.0.0/40", "bad subnet '10.77.0.0/40'");
	fails += refused("10.77.0/8", "bad subnet");
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
