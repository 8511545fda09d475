// SPDX-License-Identifier: GPL-2.0
/*
 * One rank of the VM tests of libdevcoll (DEVCOLL_RANK/SIZE/ADDR from the
 * script; DEVCOLL_RX=devmem for the devmem receive path): collectives over
 * every type and op with sizes up to 16 MiB, each checked against the
 * reference, and a hash of every result printed, so the script can compare
 * the devmem run with the plain one; in-place allreduces; then an allreduce
 * on a dup'ed communicator. Exit 0 when all results are right.
 */
#include "common.h"

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

int main(void)
{
	static const size_t counts[] = { 1, 13, 1031, 65537, 1u << 20 };
	devcoll_comm *c;
	int ret = devcoll_comm_init(&c, NULL), fails = 0;

	if (ret) {
		fprintf(stderr, "devcoll_comm_init: %s\n", devcoll_last_error());
		return 1;
	}
	int r = devcoll_comm_rank(c), W = devcoll_comm_size(c);
	size_t maxb = (16u << 20) * (size_t)W + 4096;
	char *a = malloc(maxb), *b = malloc(maxb);

	for (int t = 0; t < DEVCOLL_NTYPES; t++)
		for (int op = 0; op < DEVCOLL_NOPS; op++)
			for (unsigned int ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
				size_t n = counts[ci], es = devcoll_dtype_size(t);

				if (ci == 4 && (op != DEVCOLL_SUM || (t != DEVCOLL_FP32 && t != DEVCOLL_INT8 &&
								      t != DEVCOLL_BF16)))
					continue;
				if (ci == 4 && t == DEVCOLL_FP32)
					n = 4u << 20;	/* 16 MiB */
				fill(t, a, n, r, op, 0);
				ret = devcoll_allreduce(c, a, b, n, t, op);
				size_t bad = 0;

				for (size_t i = 0; !ret && i < n; i++)
					bad += check_one(t, op, W, b, i, i);
				if (ret || bad) {
					fprintf(stderr, "allreduce %s %s %zu: %s (%zu wrong)\n",
						devcoll_dtype_name(t), devcoll_op_name(op), n,
						ret ? devcoll_last_error() : "", bad);
					fails++;
				}
				printf("allreduce %s %s %zu %016llx\n", devcoll_dtype_name(t),
				       devcoll_op_name(op), n, (unsigned long long)fnv(b, n * es));
				/* reduce_scatter of the same */
				fill(t, a, n * (size_t)W, r, op, 0);
				ret = devcoll_reduce_scatter(c, a, b, n, t, op);
				for (size_t i = 0; !ret && i < n; i++)
					bad += check_one(t, op, W, b, i, (size_t)r * n + i);
				if (ret || bad) {
					fprintf(stderr, "reduce_scatter %s %s %zu: %s\n", devcoll_dtype_name(t),
						devcoll_op_name(op), n, ret ? devcoll_last_error() : "wrong");
					fails++;
				}
				printf("reduce_scatter %s %s %zu %016llx\n", devcoll_dtype_name(t),
				       devcoll_op_name(op), n, (unsigned long long)fnv(b, n * es));
			}
	/* in place: the reduction's other operand is the result buffer itself */
	static const struct { enum devcoll_dtype t; enum devcoll_op op; size_t n; } ip[] = {
		{ DEVCOLL_FP32, DEVCOLL_SUM, 1u << 20 }, { DEVCOLL_BF16, DEVCOLL_SUM, 65537 },
		{ DEVCOLL_INT8, DEVCOLL_MAX, 1031 }, { DEVCOLL_FP64, DEVCOLL_AVG, 65537 },
	};
	for (unsigned int k = 0; k < sizeof(ip) / sizeof(ip[0]); k++) {
		size_t bad = 0;

		fill(ip[k].t, b, ip[k].n, r, ip[k].op, 0);
		ret = devcoll_allreduce(c, b, b, ip[k].n, ip[k].t, ip[k].op);
		for (size_t i = 0; !ret && i < ip[k].n; i++)
			bad += check_one(ip[k].t, ip[k].op, W, b, i, i);
		if (ret || bad) {
			fprintf(stderr, "in-place allreduce %s %s %zu: %s (%zu wrong)\n",
				devcoll_dtype_name(ip[k].t), devcoll_op_name(ip[k].op), ip[k].n,
				ret ? devcoll_last_error() : "", bad);
			fails++;
		}
		printf("in-place allreduce %s %s %zu %016llx\n", devcoll_dtype_name(ip[k].t),
		       devcoll_op_name(ip[k].op), ip[k].n,
		       (unsigned long long)fnv(b, ip[k].n * devcoll_dtype_size(ip[k].t)));
	}
	/* data movement: 4 MiB blocks */
	size_t n = 4u << 20;

	for (size_t i = 0; i < n * (size_t)W; i++)
		a[i] = (char)(r * 31 + i * 7);
	ret = devcoll_allgather(c, a, b, n, DEVCOLL_UINT8);
	for (int k = 0; !ret && k < W; k++)
		for (size_t i = 0; i < n; i++)
			if (b[(size_t)k * n + i] != (char)(k * 31 + i * 7)) {
				ret = -1;
				break;
			}
	fails += ret != 0;
	printf("allgather %016llx %s\n", (unsigned long long)fnv(b, n * (size_t)W), ret ? "FAIL" : "ok");
	ret = devcoll_alltoall(c, a, b, n, DEVCOLL_UINT8);
	for (int k = 0; !ret && k < W; k++)
		for (size_t i = 0; i < n; i++)
			if (b[(size_t)k * n + i] != (char)(k * 31 + ((size_t)r * n + i) * 7)) {
				ret = -1;
				break;
			}
	fails += ret != 0;
	printf("alltoall %016llx %s\n", (unsigned long long)fnv(b, n * (size_t)W), ret ? "FAIL" : "ok");
	if (r != 0)
		memset(a, 0, n);
	ret = devcoll_broadcast(c, a, n, DEVCOLL_UINT8, 0);
	for (size_t i = 0; !ret && i < n; i++)
		if (a[i] != (char)(i * 7)) {
			ret = -1;
			break;
		}
	fails += ret != 0;
	printf("broadcast %016llx %s\n", (unsigned long long)fnv(a, n), ret ? "FAIL" : "ok");
	/* a dup'ed communicator (with devmem: sharing the binding) */
	devcoll_comm *d2;

	ret = devcoll_comm_dup(c, &d2);
	if (ret) {
		fprintf(stderr, "dup: %s\n", devcoll_last_error());
		fails++;
	} else {
		size_t m = 1u << 20;

		fill(DEVCOLL_FP32, a, m, r, DEVCOLL_SUM, 0);
		ret = devcoll_allreduce(d2, a, b, m, DEVCOLL_FP32, DEVCOLL_SUM);
		for (size_t i = 0; !ret && i < m; i++)
			if (check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, b, i, i)) {
				ret = -1;
				break;
			}
		fails += ret != 0;
		printf("dup allreduce %016llx %s\n", (unsigned long long)fnv(b, m * 4), ret ? "FAIL" : "ok");
		devcoll_comm_destroy(d2);
	}
	ret = devcoll_barrier(c);
	fails += ret != 0;
	devcoll_comm_destroy(c);
	free(a);
	free(b);
	printf("%s: %d failures\n", fails ? "FAIL" : "ok", fails);
	return fails ? 1 : 0;
}
