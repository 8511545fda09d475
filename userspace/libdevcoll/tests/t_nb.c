// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Non-blocking operations: several in flight at once, overlapping with
 * computation; test() polls; blocking calls queue behind them in order;
 * the v-collectives copy their count arrays when posted; isend/irecv:
 * both ranks of a pair post irecv before isend (one at a time, in order,
 * that would wait forever), messages match in order, a receive on a dup'ed
 * communicator overlaps a collective of the world, bad arguments fail.
 */
#include "common.h"

static int nb(devcoll_comm *c, void *arg)
{
	int r = devcoll_comm_rank(c), W = devcoll_comm_size(c), fails = 0, st;
	size_t n = 2u << 20;
	float *a = malloc(n * 4), *b = malloc(n * 4);
	int32_t *g = malloc(1000 * 4 * (size_t)W), v[1000], bc[777], rs[5];
	int32_t *rsin = malloc(5 * 4 * (size_t)W);
	devcoll_req *q[5];
	long polls = 0;
	volatile double work = 0;

	(void)arg;
	for (size_t i = 0; i < n; i++)
		a[i] = (float)in_f(r, i, DEVCOLL_SUM);
	for (int i = 0; i < 1000; i++)
		v[i] = r * 1000 + i;
	for (int i = 0; i < 777; i++)
		bc[i] = r == 1 % W ? i * 3 : -1;
	for (int i = 0; i < 5 * W; i++)
		rsin[i] = i + r;
	if (devcoll_iallreduce(c, a, b, n, DEVCOLL_FP32, DEVCOLL_SUM, &q[0]) ||
	    devcoll_ibroadcast(c, bc, 777, DEVCOLL_INT32, 1 % W, &q[1]) ||
	    devcoll_iallgather(c, v, g, 1000, DEVCOLL_INT32, &q[2]) ||
	    devcoll_ireduce_scatter(c, rsin, rs, 5, DEVCOLL_INT32, DEVCOLL_MAX, &q[3]) ||
	    devcoll_ibarrier(c, &q[4])) {
		fprintf(stderr, "  rank %d: post: %s\n", r, devcoll_last_error());
		return 1;
	}
	/* compute while the first one runs */
	while (!devcoll_test(q[0], &st)) {
		for (int i = 0; i < 10000; i++)
			work += i * 0.5;
		polls++;
	}
	/* a blocking call queues behind the rest */
	int64_t one = 1;

	if (devcoll_allreduce(c, &one, &one, 1, DEVCOLL_INT64, DEVCOLL_SUM) || one != W) {
		fprintf(stderr, "  rank %d: blocking allreduce after non-blocking ones\n", r);
		fails++;
	}
	for (int i = 0; i < 5; i++)
		if ((st = devcoll_wait(q[i]))) {
			fprintf(stderr, "  rank %d: request %d: %s\n", r, i, devcoll_last_error());
			fails++;
		}
	for (size_t i = 0; i < n; i++)
		if (check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, b, i, i)) {
			fprintf(stderr, "  rank %d: iallreduce wrong at %zu\n", r, i);
			fails++;
			break;
		}
	for (int i = 0; i < 777; i++)
		if (bc[i] != i * 3) {
			fprintf(stderr, "  rank %d: ibroadcast wrong\n", r);
			fails++;
			break;
		}
	for (int k = 0; k < W; k++)
		for (int i = 0; i < 1000; i++)
			if (g[k * 1000 + i] != k * 1000 + i) {
				fprintf(stderr, "  rank %d: iallgather wrong\n", r);
				fails++;
				k = W;
				break;
			}
	for (int i = 0; i < 5; i++)
		if (rs[i] != r * 5 + i + W - 1) {
			fprintf(stderr, "  rank %d: ireduce_scatter wrong\n", r);
			fails++;
			break;
		}
	/* the v-collectives, gather and scatter: count arrays copied at post */
	{
		size_t *cnt = malloc(8 * sizeof(size_t)), *dsp = malloc(8 * sizeof(size_t));
		size_t *sc = malloc(8 * sizeof(size_t)), *sd = malloc(8 * sizeof(size_t));
		size_t *rc = malloc(8 * sizeof(size_t)), *rd = malloc(8 * sizeof(size_t)), o = 0;
		int32_t sv[40], gv[400], av[400], bv[400], gat[8 * 3], sca[3], scin[8 * 3];
		devcoll_req *w[4];

		for (int k = 0; k < W; k++) {
			cnt[k] = (size_t)k + 2;
			dsp[k] = o;
			o += cnt[k] + 1;
			sc[k] = (size_t)(r + k) % 3 + 1;
			rc[k] = (size_t)(k + r) % 3 + 1;
			sd[k] = (size_t)k * 4;
			rd[k] = (size_t)k * 5;
		}
		for (int i = 0; i < 40; i++)
			sv[i] = r * 100 + i;
		for (int i = 0; i < W * 4; i++)
			av[i] = r * 1000 + i;
		for (int i = 0; i < 3 * W; i++)
			scin[i] = i * 7;
		int32_t g3[3] = { r, r + 1, r + 2 };

		if (devcoll_iallgatherv(c, sv, cnt[r], gv, cnt, dsp, DEVCOLL_INT32, &w[0]) ||
		    devcoll_ialltoallv(c, av, sc, sd, bv, rc, rd, DEVCOLL_INT32, &w[1]) ||
		    devcoll_igather(c, g3, gat, 3, DEVCOLL_INT32, W - 1, &w[2]) ||
		    devcoll_iscatter(c, scin, sca, 3, DEVCOLL_INT32, 0, &w[3])) {
			fprintf(stderr, "  rank %d: post v: %s\n", r, devcoll_last_error());
			return 1;
		}
		size_t keep_cnt[8], keep_dsp[8], keep_rc[8], keep_rd[8];

		memcpy(keep_cnt, cnt, sizeof(keep_cnt));
		memcpy(keep_dsp, dsp, sizeof(keep_dsp));
		memcpy(keep_rc, rc, sizeof(keep_rc));
		memcpy(keep_rd, rd, sizeof(keep_rd));
		/* the arrays are the library's copies now */
		memset(cnt, 0xff, 8 * sizeof(size_t));
		memset(sc, 0xff, 8 * sizeof(size_t));
		free(cnt);
		free(dsp);
		free(sc);
		free(sd);
		free(rc);
		free(rd);
		for (int i = 0; i < 4; i++)
			if (devcoll_wait(w[i])) {
				fprintf(stderr, "  rank %d: v request %d: %s\n", r, i, devcoll_last_error());
				fails++;
			}
		for (int k = 0; k < W; k++) {
			for (size_t i = 0; i < keep_cnt[k]; i++)
				if (gv[keep_dsp[k] + i] != k * 100 + (int)i) {
					fprintf(stderr, "  rank %d: iallgatherv wrong\n", r);
					fails++;
					k = W;
					break;
				}
		}
		for (int k = 0; k < W; k++)
			for (size_t i = 0; i < keep_rc[k]; i++)
				if (bv[keep_rd[k] + i] != k * 1000 + r * 4 + (int)i) {
					fprintf(stderr, "  rank %d: ialltoallv wrong\n", r);
					fails++;
					k = W;
					break;
				}
		for (int k = 0; r == W - 1 && k < W; k++)
			for (int i = 0; i < 3; i++)
				if (gat[k * 3 + i] != k + i) {
					fprintf(stderr, "  rank %d: igather wrong\n", r);
					fails++;
					k = W;
					break;
				}
		for (int i = 0; i < 3; i++)
			if (sca[i] != (r * 3 + i) * 7) {
				fprintf(stderr, "  rank %d: iscatter wrong\n", r);
				fails++;
				break;
			}
	}
	if (r == 0)
		printf("  rank 0 computed through %ld polls while the allreduce ran\n", polls);
	free(a);
	free(b);
	free(g);
	free(rsin);
	return fails ? 1 : 0;
}

static uint32_t pat(int from, uint32_t tag, size_t i)
{
	return (uint32_t)from * 0x9e3779b1u ^ tag * 0x85ebca6bu ^ (uint32_t)i;
}

static int bad_args(devcoll_comm *c)
{
	int r = devcoll_comm_rank(c), W = devcoll_comm_size(c), fails = 0;
	uint32_t x[4] = { 0 }, y[16];
	size_t cnt[8], dsp[8], two[8];
	devcoll_req *q = (devcoll_req *)&fails;

	for (int i = 0; i < 8; i++) {
		cnt[i] = 1;
		dsp[i] = (size_t)i;
		two[i] = 2;
	}

	struct { const char *what; int ret; } cases[] = {
		{ "isend to itself", devcoll_isend(c, x, 4, DEVCOLL_UINT32, r, 0, &q) },
		{ "irecv from itself", devcoll_irecv(c, x, 4, DEVCOLL_UINT32, r, 0, &q) },
		{ "isend to rank -1", devcoll_isend(c, x, 4, DEVCOLL_UINT32, -1, 0, &q) },
		{ "irecv from rank size", devcoll_irecv(c, x, 4, DEVCOLL_UINT32, W, 0, &q) },
		{ "isend of an unknown type", devcoll_isend(c, x, 4, DEVCOLL_NTYPES, (r + 1) % W, 0, &q) },
		{ "irecv without a request pointer", devcoll_irecv(c, x, 4, DEVCOLL_UINT32, (r + 1) % W, 0, NULL) },
		{ "isend without a communicator", devcoll_isend(NULL, x, 4, DEVCOLL_UINT32, 0, 0, &q) },
		{ "send to itself", devcoll_send(c, x, 4, DEVCOLL_UINT32, r, 0) },
		/* the v-collectives' own checks, blocking and not */
		{ "allgatherv with sendcount != counts[rank]",
		  devcoll_allgatherv(c, x, 3, y, cnt, dsp, DEVCOLL_UINT32) },
		{ "iallgatherv with sendcount != counts[rank]",
		  devcoll_iallgatherv(c, x, 3, y, cnt, dsp, DEVCOLL_UINT32, &q) },
		{ "allgatherv without counts", devcoll_allgatherv(c, x, 1, y, NULL, dsp, DEVCOLL_UINT32) },
		{ "iallgatherv without displacements",
		  devcoll_iallgatherv(c, x, 1, y, cnt, NULL, DEVCOLL_UINT32, &q) },
		{ "iallgatherv without a request pointer",
		  devcoll_iallgatherv(c, x, 1, y, cnt, dsp, DEVCOLL_UINT32, NULL) },
		{ "alltoallv sending itself 1 but expecting 2",
		  devcoll_alltoallv(c, x, cnt, dsp, y, two, dsp, DEVCOLL_UINT32) },
		{ "ialltoallv sending itself 1 but expecting 2",
		  devcoll_ialltoallv(c, x, cnt, dsp, y, two, dsp, DEVCOLL_UINT32, &q) },
		{ "ialltoallv without send counts",
		  devcoll_ialltoallv(c, x, NULL, dsp, y, cnt, dsp, DEVCOLL_UINT32, &q) },
		{ "allgatherv without a communicator",
		  devcoll_allgatherv(NULL, x, 1, y, cnt, dsp, DEVCOLL_UINT32) },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cases[i].ret != -EINVAL) {
			fprintf(stderr, "  rank %d: %s returned %d, not -EINVAL\n", r, cases[i].what,
				cases[i].ret);
			fails++;
		}
	if (q) {
		fprintf(stderr, "  rank %d: a failed post left a request\n", r);
		fails++;
	}
	if (devcoll_comm_error(c)) {
		fprintf(stderr, "  rank %d: bad arguments broke the communicator\n", r);
		fails++;
	}
	return fails;
}

static int check_msg(int r, const char *what, const uint32_t *b, size_t n, int from, uint32_t tag)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(from, tag, i)) {
			fprintf(stderr, "  rank %d: %s from rank %d (tag %u) wrong at %zu\n", r, what,
				from, tag, i);
			return 1;
		}
	return 0;
}

static int p2p(devcoll_comm *c, void *arg)
{
	int r = devcoll_comm_rank(c), W = devcoll_comm_size(c), fails = bad_args(c);
	int left = (r + W - 1) % W, right = (r + 1) % W, st;
	/* far beyond what the sockets buffer: blocking send before recv on
	 * both sides would not finish either */
	size_t n = (24u << 20) / 4;
	uint32_t *sl = malloc(n * 4), *sr = malloc(n * 4), *rl = malloc(n * 4), *rr = malloc(n * 4);
	devcoll_req *q[4];
	long polls = 0;

	(void)arg;
	if (W == 1)
		goto out;
	for (size_t i = 0; i < n; i++) {
		sr[i] = pat(r, 7, i);
		sl[i] = pat(r, 8, i);
	}
	memset(rl, 0, n * 4);
	memset(rr, 0, n * 4);
	/* receives first on every rank; with two ranks both go to the same
	 * peer and match in order (tag 7 first) */
	if (devcoll_irecv(c, rl, n, DEVCOLL_UINT32, left, 7, &q[0]) ||
	    devcoll_irecv(c, rr, n, DEVCOLL_UINT32, right, 8, &q[1]) ||
	    devcoll_isend(c, sr, n, DEVCOLL_UINT32, right, 7, &q[2]) ||
	    devcoll_isend(c, sl, n, DEVCOLL_UINT32, left, 8, &q[3])) {
		fprintf(stderr, "  rank %d: post: %s\n", r, devcoll_last_error());
		return 1;
	}
	while (!devcoll_test(q[0], &st))
		polls++;
	for (int i = 0; i < 4; i++)
		if (devcoll_wait(q[i])) {
			fprintf(stderr, "  rank %d: p2p request %d: %s\n", r, i, devcoll_last_error());
			fails++;
		}
	fails += check_msg(r, "irecv", rl, n, left, 7) + check_msg(r, "irecv", rr, n, right, 8);

	/* many messages of one pair, sizes 0 up, in order; then a blocking
	 * send behind a pending irecv joins it instead of waiting for it */
	enum { M = 24 };
	uint32_t *in[M], *out[M];
	devcoll_req *rq[M], *sq[M], *last;

	for (int m = 0; m < M; m++) {
		size_t len = (size_t)m * m * 997;

		in[m] = calloc(len + 1, 4);
		out[m] = malloc(len * 4 + 4);
		for (size_t i = 0; i < len; i++)
			out[m][i] = pat(r, 100 + (uint32_t)m, i);
		if (devcoll_irecv(c, in[m], len, DEVCOLL_UINT32, left, 100 + (uint32_t)m, &rq[m])) {
			fprintf(stderr, "  rank %d: irecv %d: %s\n", r, m, devcoll_last_error());
			return 1;
		}
	}
	for (int m = 0; m < M; m++)
		if (devcoll_isend(c, out[m], (size_t)m * m * 997, DEVCOLL_UINT32, right,
				  100 + (uint32_t)m, &sq[m])) {
			fprintf(stderr, "  rank %d: isend %d: %s\n", r, m, devcoll_last_error());
			return 1;
		}
	/* empty messages without buffers */
	devcoll_req *e[2];

	if (devcoll_irecv(c, NULL, 0, DEVCOLL_UINT32, left, 77, &e[0]) ||
	    devcoll_isend(c, NULL, 0, DEVCOLL_UINT32, right, 77, &e[1]) || devcoll_wait(e[0]) ||
	    devcoll_wait(e[1])) {
		fprintf(stderr, "  rank %d: empty isend/irecv: %s\n", r, devcoll_last_error());
		fails++;
	}
	uint32_t one = 0xabc0 + (uint32_t)r, got = 0;

	if (devcoll_irecv(c, &got, 1, DEVCOLL_UINT32, left, 9, &last) ||
	    devcoll_send(c, &one, 1, DEVCOLL_UINT32, right, 9) || devcoll_wait(last) ||
	    got != 0xabc0 + (uint32_t)left) {
		fprintf(stderr, "  rank %d: irecv + blocking send: %s (got %#x)\n", r,
			devcoll_last_error(), got);
		fails++;
	}
	for (int m = 0; m < M; m++) {
		if (devcoll_wait(rq[m]) || devcoll_wait(sq[m])) {
			fprintf(stderr, "  rank %d: message %d: %s\n", r, m, devcoll_last_error());
			fails++;
		}
		fails += check_msg(r, "ordered irecv", in[m], (size_t)m * m * 997, left, 100 + (uint32_t)m);
		free(in[m]);
		free(out[m]);
	}
	/* a collective queued behind send/recv runs after them */
	int64_t sum = r, ring_in = -1, mine = r;
	devcoll_req *ar, *rv, *sv;

	if (devcoll_irecv(c, &ring_in, 1, DEVCOLL_INT64, left, 11, &rv) ||
	    devcoll_isend(c, &mine, 1, DEVCOLL_INT64, right, 11, &sv) ||
	    devcoll_iallreduce(c, &sum, &sum, 1, DEVCOLL_INT64, DEVCOLL_SUM, &ar) ||
	    devcoll_wait(ar) || devcoll_wait(rv) || devcoll_wait(sv) ||
	    sum != (int64_t)W * (W - 1) / 2 || ring_in != left) {
		fprintf(stderr, "  rank %d: irecv, isend, iallreduce: %s\n", r, devcoll_last_error());
		fails++;
	}
	/* a receive that the peer matches only after a collective: on a
	 * dup'ed communicator it overlaps the world's collective (on the
	 * world it would queue behind itself) */
	devcoll_comm *d = NULL;
	int64_t x = -1, y = 100 + r, z = 1;
	devcoll_req *xq;

	if (devcoll_comm_dup(c, &d) || devcoll_irecv(d, &x, 1, DEVCOLL_INT64, left, 12, &xq) ||
	    devcoll_allreduce(c, &z, &z, 1, DEVCOLL_INT64, DEVCOLL_SUM) ||
	    devcoll_send(d, &y, 1, DEVCOLL_INT64, right, 12) || devcoll_wait(xq) ||
	    x != 100 + left || z != W) {
		fprintf(stderr, "  rank %d: irecv on a dup across a collective: %s\n", r,
			devcoll_last_error());
		fails++;
	}
	if (d)
		devcoll_comm_destroy(d);
	if (devcoll_barrier(c)) {
		fprintf(stderr, "  rank %d: barrier after send/recv: %s\n", r, devcoll_last_error());
		fails++;
	}
	if (r == 0)
		printf("  rank 0 polled %ld times while 24 MiB went each way\n", polls);
out:
	free(sl);
	free(sr);
	free(rl);
	free(rr);
	return fails ? 1 : 0;
}

int main(void)
{
	struct devcoll_opts o = { .timeout_ms = 30000 };
	int st[8], fails = 0;

	for (int n = 1; n <= 4; n++) {
		int bad = run_world(n, &o, nb, NULL, st, 120);

		printf("%s: non-blocking overlap, %d ranks\n", bad ? "FAIL" : "ok", n);
		fails += bad;
	}
	for (int n = 1; n <= 4; n++) {
		int bad = run_world(n, &o, p2p, NULL, st, 120);

		printf("%s: isend/irecv, %d ranks\n", bad ? "FAIL" : "ok", n);
		fails += bad;
	}
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
