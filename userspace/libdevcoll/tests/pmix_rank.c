// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One rank of a job started by mpirun/srun: the communicator comes from
 * PMIx (rank, size, endpoints exchanged with PMIx_Put/Commit/Fence).
 * Prints "ok rank R of N" when the collectives check out. With an IPv6
 * DEVCOLL_BIND_ADDR every rank's endpoint must be IPv6 too; with
 * WANT_EP_ADDR (an IPv4 address) every endpoint must be there.
 */
#include "common.h"
#include "internal.h"

int main(void)
{
	devcoll_comm *c;
	int ret = devcoll_comm_init(&c, NULL), r, W, fails = 0;

	if (ret) {
		fprintf(stderr, "devcoll_comm_init: %s\n", devcoll_last_error());
		return 1;
	}
	r = devcoll_comm_rank(c);
	W = devcoll_comm_size(c);
	if (!getenv("PMIX_RANK") || atoi(getenv("PMIX_RANK")) != r) {
		fprintf(stderr, "rank %d is not PMIx's\n", r);
		fails++;
	}
	const char *bind = getenv("DEVCOLL_BIND_ADDR");

	for (int k = 0; bind && strchr(bind, ':') && k < W; k++)
		if (c->eps[k].sa.ss_family != AF_INET6) {
			fprintf(stderr, "rank %d: rank %d's endpoint is not IPv6\n", r, k);
			fails++;
		}
	/* DEVCOLL_IF's test: every endpoint on the address it should pick */
	const char *want = getenv("WANT_EP_ADDR");

	for (int k = 0; want && k < W; k++) {
		char host[INET6_ADDRSTRLEN] = "?";
		const struct sockaddr_in *sa = (const struct sockaddr_in *)&c->eps[k].sa;

		inet_ntop(sa->sin_family, &sa->sin_addr, host, sizeof(host));
		if (strcmp(host, want)) {
			fprintf(stderr, "rank %d: rank %d's endpoint is %s, not %s\n", r, k, host, want);
			fails++;
		}
	}
	int64_t v = r + 1, all[64];
	size_t n = 100003;
	double *a = malloc(n * 8);

	ret = devcoll_allreduce(c, &v, &v, 1, DEVCOLL_INT64, DEVCOLL_SUM);
	if (ret || v != (int64_t)W * (W + 1) / 2)
		fails++;
	v = r;
	ret = devcoll_allgather(c, &v, all, 1, DEVCOLL_INT64);
	for (int k = 0; !ret && k < W; k++)
		fails += all[k] != k;
	for (size_t i = 0; i < n; i++)
		a[i] = in_f(r, i, DEVCOLL_MAX);
	ret = devcoll_allreduce(c, a, a, n, DEVCOLL_FP64, DEVCOLL_MAX);
	for (size_t i = 0; !ret && i < n; i++)
		if (check_one(DEVCOLL_FP64, DEVCOLL_MAX, W, a, i, i)) {
			fails++;
			break;
		}
	if (ret)
		fprintf(stderr, "rank %d: %s\n", r, devcoll_last_error());
	free(a);
	devcoll_barrier(c);
	devcoll_comm_destroy(c);
	if (fails || ret)
		return 1;
	printf("ok rank %d of %d\n", r, W);
	return 0;
}
