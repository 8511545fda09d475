// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Failures: a peer killed mid-collective (large ring and small recursive
 * doubling allreduces, tree gather and scatter), mismatched collectives
 * (count, op, type, kind, root; count in a tree gather and scatter), a peer
 * that never shows up (timeout). Every surviving rank must get an error
 * within the timeout: never a hang, never wrong data. Small collectives
 * (nothing mid-chunk when it fails) must also tell every rank why: the
 * killed rank is named, a mismatch reads as one with -EPROTO everywhere.
 */
#include <pthread.h>
#include "common.h"

#define TIMEOUT_MS 2000

struct kill_arg {
	size_t count;
	int victim;
	int kind;	/* 0: allreduce, 1: gather, 2: scatter (root 0) */
	bool named;	/* every survivor's error must name the victim */
};

/* The error names rank @v as the one that closed or reset its connections. */
static bool names(const char *msg, int v)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "rank %d closed", v);
	snprintf(b, sizeof(b), "rank %d: ", v);
	return strstr(msg, a) || strstr(msg, b);
}

static void *killer(void *arg)
{
	(void)arg;
	usleep(30000);
	raise(SIGKILL);
	return NULL;
}

/* Survivors: 0 when an operation failed within the timeout. */
static int kill_rank(devcoll_comm *c, void *arg)
{
	struct kill_arg *k = arg;
	int r = devcoll_comm_rank(c);
	size_t len = k->count * (k->kind ? 8 : 1);	/* the root's gather/scatter buffer */
	float *a = calloc(len, 4), *b = calloc(len, 4);
	pthread_t th;

	for (int it = 0; it < 100000; it++) {
		if (it == 3 && r == k->victim)
			pthread_create(&th, NULL, killer, NULL);
		double t0 = now_s();
		int ret = k->kind == 1 ? devcoll_gather(c, a, b, k->count, DEVCOLL_FP32, 0) :
			  k->kind == 2 ? devcoll_scatter(c, a, b, k->count, DEVCOLL_FP32, 0) :
			  devcoll_allreduce(c, a, b, k->count, DEVCOLL_FP32, DEVCOLL_SUM);
		double dt = now_s() - t0;

		if (ret) {
			free(a);
			free(b);
			if (ret != -ECONNRESET && ret != -ETIMEDOUT && ret != -EPROTO) {
				fprintf(stderr, "  rank %d: unexpected error %d: %s\n", r, ret, devcoll_last_error());
				return 3;
			}
			if (dt > TIMEOUT_MS / 1000.0 + 1.5) {
				fprintf(stderr, "  rank %d: the error took %.2f s\n", r, dt);
				return 2;
			}
			if (k->named && !names(devcoll_last_error(), k->victim)) {
				fprintf(stderr, "  rank %d: \"%s\" does not name rank %d\n", r,
					devcoll_last_error(), k->victim);
				return 5;
			}
			/* every later operation fails at once with the same error */
			if (devcoll_barrier(c) != ret) {
				fprintf(stderr, "  rank %d: the communicator is not broken after the error\n", r);
				return 4;
			}
			return 0;
		}
	}
	return 1;
}

struct mm_arg {
	int what;
};

static int mismatch(devcoll_comm *c, void *arg)
{
	int what = ((struct mm_arg *)arg)->what, r = devcoll_comm_rank(c), ret, ret2;
	int64_t a[64] = { 0 }, b[64 * 8];
	size_t n = 11;
	enum devcoll_dtype t = DEVCOLL_INT64;
	enum devcoll_op op = DEVCOLL_SUM;
	double t0 = now_s();

	switch (what) {
	case 0: /* count */
		ret = devcoll_allreduce(c, a, b, r == 1 ? 10 : n, t, op);
		break;
	case 1: /* op */
		ret = devcoll_allreduce(c, a, b, n, t, r == 1 ? DEVCOLL_MAX : op);
		break;
	case 2: /* type of the same size */
		ret = devcoll_allreduce(c, a, b, n, r == 1 ? DEVCOLL_FP64 : t, op);
		break;
	case 3: /* kind */
		ret = r == 1 ? devcoll_allgather(c, a, b, n, t) : devcoll_allreduce(c, a, b, n, t, op);
		break;
	case 4: /* root */
		ret = devcoll_reduce(c, a, b, n, t, op, r == 1 ? 1 : 0);
		break;
	case 5: /* count in a tree gather: rank 3 sends to rank 2 */
		ret = devcoll_gather(c, a, b, r == 3 ? 10 : n, t, 0);
		break;
	case 6: /* and in a tree scatter: rank 2 sends to rank 3 */
		ret = devcoll_scatter(c, a, b, r == 3 ? 10 : n, t, 0);
		break;
	default: /* large: count differs in the ring */
		ret = 0;
		break;
	}
	/* a rank that only sent may complete; then its next operation fails */
	ret2 = devcoll_barrier(c);
	if (!ret && !ret2) {
		fprintf(stderr, "  rank %d: mismatch %d not detected\n", r, what);
		return 1;
	}
	if (now_s() - t0 > TIMEOUT_MS / 1000.0 + 1.5) {
		fprintf(stderr, "  rank %d: mismatch %d took %.2f s\n", r, what, now_s() - t0);
		return 2;
	}
	return ret == -EPROTO || ret2 == -EPROTO ? 10 : 0;	/* 10: this rank saw the mismatch */
}

static int mismatch_large(devcoll_comm *c, void *arg)
{
	int r = devcoll_comm_rank(c), ret;
	size_t n = (4u << 20) + (r == 2 ? 4096 : 0);
	float *a = calloc(n, 4), *b = calloc(n, 4);
	double t0 = now_s();

	(void)arg;
	ret = devcoll_allreduce(c, a, b, n, DEVCOLL_FP32, DEVCOLL_SUM);
	if (!ret)
		ret = devcoll_barrier(c);
	free(a);
	free(b);
	if (!ret)
		return 1;
	if (now_s() - t0 > TIMEOUT_MS / 1000.0 + 1.5)
		return 2;
	return ret == -EPROTO ? 10 : 0;
}

/* Rank 4 of 6 runs an 8-byte allreduce with another count: every rank fails
 * with -EPROTO and a message about the mismatch, the ranks that did not see
 * it from the rank that did. */
static int mismatch_why(devcoll_comm *c, void *arg)
{
	int r = devcoll_comm_rank(c), ret = 0;
	int64_t a[16] = { 0 }, b[16];

	(void)arg;
	for (int it = 0; it < 4 && !ret; it++)
		ret = devcoll_allreduce(c, a, b, it == 3 && r == 4 ? 10 : 11, DEVCOLL_INT64,
					DEVCOLL_SUM);
	if (!ret)
		ret = devcoll_barrier(c);
	if (ret != -EPROTO || !strstr(devcoll_last_error(), "mismatched")) {
		fprintf(stderr, "  rank %d: %d \"%s\"\n", r, ret, devcoll_last_error());
		return 1;
	}
	return 0;
}

static int late(devcoll_comm *c, void *arg)
{
	int r = devcoll_comm_rank(c), ret;
	int64_t v = 1;
	double t0;

	(void)arg;
	if (r == 1)
		usleep(3 * TIMEOUT_MS * 1000);
	t0 = now_s();
	ret = devcoll_allreduce(c, &v, &v, 1, DEVCOLL_INT64, DEVCOLL_SUM);
	double dt = now_s() - t0;

	if (r == 0 && (ret != -ETIMEDOUT || dt < TIMEOUT_MS / 1000.0 * 0.9 ||
		       dt > TIMEOUT_MS / 1000.0 + 1.5)) {
		fprintf(stderr, "  rank 0: got %d after %.2f s, want -ETIMEDOUT after %.1f s\n", ret,
			dt, TIMEOUT_MS / 1000.0);
		return 1;
	}
	/* the late rank may still find rank 0's (correct) contribution in its
	 * socket and complete; its next operation fails */
	if (r == 1 && !ret && !devcoll_barrier(c)) {
		fprintf(stderr, "  rank 1: the late rank's operations succeed\n");
		return 1;
	}
	if (r == 0 && !strstr(devcoll_last_error(), "no progress"))
		fprintf(stderr, "  note: %s\n", devcoll_last_error());
	return 0;
}

int main(void)
{
	struct devcoll_opts o = { .timeout_ms = TIMEOUT_MS };
	int st[8], fails = 0;

	/* killed mid-collective */
	/* rank 2 of 6 is inner in the gather and scatter trees (rank 3 below) */
	struct kill_arg ka[] = { { 4u << 20, 2, 0, false }, { 2, 3, 0, true }, { 100000, 0, 0, false },
				 { 2, 2, 1, true }, { 2, 2, 2, true } };
	int kn[] = { 4, 5, 3, 6, 6 };
	static const char *const kname[] = { "allreduce", "gather", "scatter" };

	for (int i = 0; i < 5; i++) {
		double t0 = now_s();
		int bad = 0;

		run_world(kn[i], &o, kill_rank, &ka[i], st, 60);
		for (int r = 0; r < kn[i]; r++)
			if (r == ka[i].victim ? st[r] != 200 + SIGKILL : st[r] != 0) {
				fprintf(stderr, "  rank %d: status %d\n", r, st[r]);
				bad++;
			}
		printf("%s: rank %d of %d killed during %zu-element %ss: every survivor "
		       "failed%s (%.1f s)\n", bad ? "FAIL" : "ok", ka[i].victim, kn[i], ka[i].count,
		       kname[ka[i].kind], ka[i].named ? ", naming it" : "", now_s() - t0);
		fails += bad;
	}
	/* mismatches */
	static const char *const what[] = { "count", "op", "type", "collective", "root",
					    "gather count", "scatter count" };

	for (int w = 0; w < 7; w++) {
		struct mm_arg m = { w };
		int n = w < 5 ? 2 + w % 3 : 5, bad = 0, seen = 0;

		run_world(n, &o, mismatch, &m, st, 60);
		for (int r = 0; r < n; r++) {
			seen += st[r] == 10;
			bad += st[r] != 0 && st[r] != 10;
		}
		/* a different root can leave no message to compare: then the
		 * timeout catches it */
		bad += !seen && w != 4;
		printf("%s: mismatched %s on %d ranks: %s, every rank failed\n",
		       bad ? "FAIL" : "ok", what[w], n, seen ? "detected" : "timed out");
		fails += bad != 0;
	}
	{
		int bad = 0, seen = 0;

		run_world(4, &o, mismatch_large, NULL, st, 60);
		for (int r = 0; r < 4; r++) {
			seen += st[r] == 10;
			bad += st[r] != 0 && st[r] != 10;
		}
		bad += !seen;
		printf("%s: mismatched count in a 16 MiB ring allreduce on 4 ranks\n", bad ? "FAIL" : "ok");
		fails += bad != 0;
	}
	{
		int bad = 0;

		run_world(6, &o, mismatch_why, NULL, st, 60);
		for (int r = 0; r < 6; r++)
			bad += st[r] != 0;
		printf("%s: mismatched count on 6 ranks: every rank fails with -EPROTO, saying so\n",
		       bad ? "FAIL" : "ok");
		fails += bad != 0;
	}
	/* a rank that does not come in time */
	run_world(2, &o, late, NULL, st, 60);
	printf("%s: a late rank: -ETIMEDOUT after the timeout, then the late rank fails too\n",
	       st[0] || st[1] ? "FAIL" : "ok");
	fails += st[0] || st[1];
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
