// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every collective x type x op x size x world size 1..8 on loopback, against
 * a reference computed locally (exact for integers, bounded error for
 * floats). The default run samples the matrix; DEVCOLL_FULL=1 runs it all.
 * Worlds alternate the algorithm choice (auto, ring, rd, tree, hd) through
 * DEVCOLL_ALGO, and that of broadcast and reduce (auto, chain, tree) through
 * DEVCOLL_ROOTED_ALGO; then broadcast and reduce alone with the chain forced,
 * and chosen automatically, on 2 to 8 ranks; then gather and scatter alone
 * with the tree forced, linear forced (chain) and chosen, on 1 to 8 ranks.
 */
#include "common.h"

static bool full;
static int algo_idx;

static const size_t counts[] = { 0, 1, 2, 7, 13, 1031, 4099, 65537 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))

struct ctx {
	int fails, cases;
	char *a, *b, *d;
};

#define FAIL(c, ...) do { \
	if ((c)->fails++ < 5) { \
		fprintf(stderr, "  rank %d/%d: ", devcoll_comm_rank(comm), devcoll_comm_size(comm)); \
		fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static const char *gotmsg(int ret)
{
	return ret ? devcoll_last_error() : "";
}

static bool sample(unsigned int key, unsigned int every)
{
	return full || key % every == 0;
}

/* the reduction family: allreduce (out of and in place), reduce, reduce_scatter */
static void reductions(devcoll_comm *comm, struct ctx *x, enum devcoll_dtype t, enum devcoll_op op,
		       size_t n)
{
	int r = devcoll_comm_rank(comm), W = devcoll_comm_size(comm), ret;
	size_t es = devcoll_dtype_size(t);

	/* allreduce out of place */
	fill(t, x->a, n, r, op, 0);
	memset(x->b, 0xa5, n * es + 16);
	ret = devcoll_allreduce(comm, x->a, x->b, n, t, op);
	x->cases++;
	if (ret)
		FAIL(x, "allreduce %s %s n=%zu: %s", devcoll_dtype_name(t), devcoll_op_name(op), n, gotmsg(ret));
	for (size_t i = 0; !ret && i < n; i++)
		if (check_one(t, op, W, x->b, i, i)) {
			FAIL(x, "allreduce %s %s n=%zu: wrong at %zu", devcoll_dtype_name(t),
			     devcoll_op_name(op), n, i);
			break;
		}
	if ((unsigned char)x->b[n * es] != 0xa5)
		FAIL(x, "allreduce wrote past the end");
	/* in place */
	fill(t, x->a, n, r, op, 0);
	ret = devcoll_allreduce(comm, x->a, x->a, n, t, op);
	x->cases++;
	if (ret)
		FAIL(x, "allreduce in place: %s", gotmsg(ret));
	else if (n && memcmp(x->a, x->b, n * es))
		FAIL(x, "allreduce in place %s %s n=%zu differs from out of place",
		     devcoll_dtype_name(t), devcoll_op_name(op), n);
	/* reduce to a root */
	int root = (int)(n % (size_t)W);

	fill(t, x->a, n, r, op, 0);
	memset(x->b, 0xa5, n * es + 16);
	ret = devcoll_reduce(comm, x->a, x->b, n, t, op, root);
	x->cases++;
	if (ret)
		FAIL(x, "reduce: %s", gotmsg(ret));
	for (size_t i = 0; !ret && r == root && i < n; i++)
		if (check_one(t, op, W, x->b, i, i)) {
			FAIL(x, "reduce %s %s n=%zu root %d: wrong at %zu", devcoll_dtype_name(t),
			     devcoll_op_name(op), n, root, i);
			break;
		}
	/* reduce_scatter: n elements per rank; element i of block k is input k*n+i */
	fill(t, x->a, n * (size_t)W, r, op, 0);
	ret = devcoll_reduce_scatter(comm, x->a, x->b, n, t, op);
	x->cases++;
	if (ret)
		FAIL(x, "reduce_scatter: %s", gotmsg(ret));
	for (size_t i = 0; !ret && i < n; i++)
		if (check_one(t, op, W, x->b, i, (size_t)r * n + i)) {
			FAIL(x, "reduce_scatter %s %s n=%zu: wrong at %zu", devcoll_dtype_name(t),
			     devcoll_op_name(op), n, i);
			break;
		}
}

static uint8_t pat(int r, size_t i)
{
	return (uint8_t)(r * 37 + i * 11 + 1);
}

static void fillp(char *b, size_t len, int r, size_t base)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (char)pat(r, base + i);
}

static bool okp(const char *b, size_t len, int r, size_t base)
{
	for (size_t i = 0; i < len; i++)
		if ((uint8_t)b[i] != pat(r, base + i))
			return false;
	return true;
}

/* the data movement family, checked byte by byte */
static void movement(devcoll_comm *comm, struct ctx *x, enum devcoll_dtype t, size_t n)
{
	int r = devcoll_comm_rank(comm), W = devcoll_comm_size(comm), ret;
	size_t es = devcoll_dtype_size(t), bl = n * es;
	int root = (int)((n + 1) % (size_t)W);

	/* broadcast */
	if (r == root)
		fillp(x->a, bl, root, 0);
	else
		memset(x->a, 0, bl);
	ret = devcoll_broadcast(comm, x->a, n, t, root);
	x->cases++;
	if (ret || !okp(x->a, bl, root, 0))
		FAIL(x, "broadcast %s n=%zu root %d: %s", devcoll_dtype_name(t), n, root,
		     ret ? gotmsg(ret) : "wrong data");
	/* allgather */
	fillp(x->a, bl, r, 0);
	ret = devcoll_allgather(comm, x->a, x->b, n, t);
	x->cases++;
	for (int k = 0; !ret && k < W; k++)
		if (!okp(x->b + (size_t)k * bl, bl, k, 0)) {
			ret = -1;
			break;
		}
	if (ret)
		FAIL(x, "allgather %s n=%zu: %s", devcoll_dtype_name(t), n, ret > -2 ? "wrong data" : gotmsg(ret));
	/* allgatherv: rank k gives n + k elements (k + 1 for 0), displaced by gaps */
	size_t cnt[8], dsp[8], o = 0;

	for (int k = 0; k < W; k++) {
		cnt[k] = n ? n + (size_t)k : (size_t)(k & 1);
		dsp[k] = o + 1;
		o += cnt[k] + 1;
	}
	fillp(x->a, cnt[r] * es, r, 7);
	ret = devcoll_allgatherv(comm, x->a, cnt[r], x->b, cnt, dsp, t);
	x->cases++;
	for (int k = 0; !ret && k < W; k++)
		if (!okp(x->b + dsp[k] * es, cnt[k] * es, k, 7)) {
			ret = -1;
			break;
		}
	if (ret)
		FAIL(x, "allgatherv %s n=%zu: %s", devcoll_dtype_name(t), n, ret > -2 ? "wrong data" : gotmsg(ret));
	/* alltoall: block k of rank r's send is pattern (r, k*bl) */
	fillp(x->a, bl * (size_t)W, r, 0);
	ret = devcoll_alltoall(comm, x->a, x->b, n, t);
	x->cases++;
	for (int k = 0; !ret && k < W; k++)
		if (!okp(x->b + (size_t)k * bl, bl, k, (size_t)r * bl)) {
			ret = -1;
			break;
		}
	if (ret)
		FAIL(x, "alltoall %s n=%zu: %s", devcoll_dtype_name(t), n, ret > -2 ? "wrong data" : gotmsg(ret));
	/* alltoallv: rank r sends (r + k) % 3 * n + k elements to rank k */
	size_t sc[8], sd[8], rc[8], rd[8], so = 0, ro = 0;

	for (int k = 0; k < W; k++) {
		sc[k] = (size_t)((r + k) % 3) * n + (size_t)k;
		rc[k] = (size_t)((k + r) % 3) * n + (size_t)r;
		sd[k] = so;
		rd[k] = ro + 2;
		so += sc[k];
		ro += rc[k] + 2;
	}
	for (int k = 0; k < W; k++)
		fillp(x->a + sd[k] * es, sc[k] * es, r, (size_t)k * 1000);
	ret = devcoll_alltoallv(comm, x->a, sc, sd, x->b, rc, rd, t);
	x->cases++;
	for (int k = 0; !ret && k < W; k++)
		if (!okp(x->b + rd[k] * es, rc[k] * es, k, (size_t)r * 1000)) {
			ret = -1;
			break;
		}
	if (ret)
		FAIL(x, "alltoallv %s n=%zu: %s", devcoll_dtype_name(t), n, ret > -2 ? "wrong data" : gotmsg(ret));
	/* gather and scatter */
	fillp(x->a, bl, r, 3);
	ret = devcoll_gather(comm, x->a, x->b, n, t, root);
	x->cases++;
	for (int k = 0; !ret && r == root && k < W; k++)
		if (!okp(x->b + (size_t)k * bl, bl, k, 3)) {
			ret = -1;
			break;
		}
	if (ret)
		FAIL(x, "gather %s n=%zu: %s", devcoll_dtype_name(t), n, ret > -2 ? "wrong data" : gotmsg(ret));
	if (r == root)
		for (int k = 0; k < W; k++)
			fillp(x->a + (size_t)k * bl, bl, k, 5);
	ret = devcoll_scatter(comm, x->a, x->b, n, t, root);
	x->cases++;
	if (ret || !okp(x->b, bl, r, 5))
		FAIL(x, "scatter %s n=%zu: %s", devcoll_dtype_name(t), n, ret ? gotmsg(ret) : "wrong data");
	/* send/recv around the ring */
	if (W > 1) {
		int to = (r + 1) % W, from = (r + W - 1) % W;

		fillp(x->a, bl, r, 9);
		if (r % 2 == 0) {
			ret = devcoll_send(comm, x->a, n, t, to, 42);
			if (!ret)
				ret = devcoll_recv(comm, x->b, n, t, from, 42);
		} else {
			ret = devcoll_recv(comm, x->b, n, t, from, 42);
			if (!ret)
				ret = devcoll_send(comm, x->a, n, t, to, 42);
		}
		x->cases++;
		if (ret || !okp(x->b, bl, from, 9))
			FAIL(x, "send/recv %s n=%zu: %s", devcoll_dtype_name(t), n, ret ? gotmsg(ret) : "wrong data");
	}
	ret = devcoll_barrier(comm);
	x->cases++;
	if (ret)
		FAIL(x, "barrier: %s", gotmsg(ret));
}

static int matrix(devcoll_comm *comm, void *arg)
{
	struct ctx x = { 0 };
	size_t maxn = counts[NCOUNTS - 1] * 8 * 8 + 4096;
	unsigned int key = (unsigned int)(uintptr_t)arg;

	x.a = malloc(maxn * 3);
	x.b = malloc(maxn * 3);
	for (unsigned int ci = 0; ci < NCOUNTS; ci++)
		for (int t = 0; t < DEVCOLL_NTYPES; t++) {
			for (int op = 0; op < DEVCOLL_NOPS; op++)
				if (sample(key + ci * 7 + (unsigned int)t * 5 + (unsigned int)op * 3, 9) ||
				    (ci < 5 && t == DEVCOLL_INT32) || (ci == 5 && op == DEVCOLL_SUM && t == DEVCOLL_FP32))
					reductions(comm, &x, (enum devcoll_dtype)t, (enum devcoll_op)op, counts[ci]);
			if (sample(key + ci + (unsigned int)t, 4))
				movement(comm, &x, (enum devcoll_dtype)t, counts[ci]);
		}
	/* split into even and odd ranks; dup */
	devcoll_comm *sub, *dup;
	int r = devcoll_comm_rank(comm), W = devcoll_comm_size(comm);
	int ret = devcoll_comm_split(comm, r % 2, -r, &sub);

	x.cases++;
	if (ret) {
		FAIL(&x, "split: %s", devcoll_last_error());
	} else {
		int sw = devcoll_comm_size(sub), sr = devcoll_comm_rank(sub);
		int64_t v = r, sum = 0;

		for (int k = r % 2; k < W; k += 2)
			sum += k;
		if (sw != (W + 1 - r % 2) / 2 || sr != sw - 1 - r / 2)
			FAIL(&x, "split: rank %d of %d in the %s group", sr, sw, r % 2 ? "odd" : "even");
		ret = devcoll_allreduce(sub, &v, &v, 1, DEVCOLL_INT64, DEVCOLL_SUM);
		if (ret || v != sum)
			FAIL(&x, "allreduce in the split: %s", ret ? gotmsg(ret) : "wrong sum");
		ret = devcoll_comm_dup(sub, &dup);
		if (ret) {
			FAIL(&x, "dup: %s", devcoll_last_error());
		} else {
			v = 1;
			ret = devcoll_allreduce(dup, &v, &v, 1, DEVCOLL_INT64, DEVCOLL_SUM);
			if (ret || v != sw)
				FAIL(&x, "allreduce in the dup: %s", ret ? gotmsg(ret) : "wrong sum");
			devcoll_comm_destroy(dup);
		}
		devcoll_comm_destroy(sub);
	}
	/* the parent still works */
	x.cases++;
	ret = devcoll_barrier(comm);
	if (ret)
		FAIL(&x, "barrier after split: %s", gotmsg(ret));
	free(x.a);
	free(x.b);
	if (devcoll_comm_rank(comm) == 0)
		printf("  %d cases per rank\n", x.cases);
	return x.fails ? 1 : 0;
}

/* 64 MiB of fp32 (and int32 in full) through the ring; checked by sampling */
static int large(devcoll_comm *comm, void *arg)
{
	size_t n = (64u << 20) / 4;
	int r = devcoll_comm_rank(comm), W = devcoll_comm_size(comm), fails = 0;
	float *a = malloc(n * 4), *b = malloc(n * 4);
	double t0;
	int ret;

	(void)arg;
	for (size_t i = 0; i < n; i++)
		a[i] = (float)in_f(r, i, DEVCOLL_SUM);
	t0 = now_s();
	ret = devcoll_allreduce(comm, a, b, n, DEVCOLL_FP32, DEVCOLL_SUM);
	if (ret) {
		fprintf(stderr, "  rank %d: 64 MiB allreduce: %s\n", r, devcoll_last_error());
		fails++;
	}
	for (size_t i = 0; !ret && i < n; i++)
		if (check_one(DEVCOLL_FP32, DEVCOLL_SUM, W, b, i, i)) {
			fprintf(stderr, "  rank %d: 64 MiB allreduce wrong at %zu\n", r, i);
			fails++;
			break;
		}
	if (r == 0)
		printf("  64 MiB fp32 allreduce on %d ranks: %.2f s\n", W, now_s() - t0);
	free(a);
	free(b);
	return fails;
}

/* allreduce alone, every type, sum and max, a few counts: for each
 * algorithm on each world size */
static int algo_check(devcoll_comm *comm, void *arg)
{
	static const size_t cn[] = { 0, 1, 5, 17, 1031, 20000 };
	struct ctx x = { 0 };
	int r = devcoll_comm_rank(comm), W = devcoll_comm_size(comm);

	(void)arg;
	x.a = malloc(20000 * 8);
	x.b = malloc(20000 * 8);
	for (int t = 0; t < DEVCOLL_NTYPES; t++)
		for (unsigned int ci = 0; ci < sizeof(cn) / sizeof(cn[0]); ci++)
			for (int op = DEVCOLL_SUM; op <= DEVCOLL_AVG; op += 3) {
				size_t n = cn[ci];
				int ret;

				fill((enum devcoll_dtype)t, x.a, n, r, (enum devcoll_op)op, 0);
				ret = devcoll_allreduce(comm, x.a, ci & 1 ? x.a : x.b, n, (enum devcoll_dtype)t,
							(enum devcoll_op)op);
				for (size_t i = 0; !ret && i < n; i++)
					if (check_one((enum devcoll_dtype)t, (enum devcoll_op)op, W,
						      ci & 1 ? x.a : x.b, i, i)) {
						ret = -1;
						break;
					}
				if (ret)
					FAIL(&x, "allreduce %s %s n=%zu: %s", devcoll_dtype_name(t),
					     devcoll_op_name(op), n, ret == -1 ? "wrong" : devcoll_last_error());
			}
	free(x.a);
	free(x.b);
	return x.fails ? 1 : 0;
}

/* broadcast and reduce alone, every type, sum, max and avg, a few counts,
 * roots and in place: for the chain (forced, or chosen) on each world size */
static int rooted_check(devcoll_comm *comm, void *arg)
{
	static const size_t cn[] = { 0, 1, 5, 17, 1031, 20000, 70001 };
	static const int ops[] = { DEVCOLL_SUM, DEVCOLL_MAX, DEVCOLL_AVG };
	struct ctx x = { 0 };
	int r = devcoll_comm_rank(comm), W = devcoll_comm_size(comm);

	(void)arg;
	x.a = malloc(70001 * 8);
	x.b = malloc(70001 * 8 + 16);
	for (int t = 0; t < DEVCOLL_NTYPES; t++)
		for (unsigned int ci = 0; ci < sizeof(cn) / sizeof(cn[0]); ci++) {
			size_t n = cn[ci], es = devcoll_dtype_size((enum devcoll_dtype)t);
			int root = (int)((ci + (unsigned int)t) % (unsigned int)W), ret;

			for (unsigned int oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++) {
				enum devcoll_op op = (enum devcoll_op)ops[oi];
				/* odd counts: in place at the root */
				bool inplace = ci & 1 && r == root;
				char *out = inplace ? x.a : x.b;

				fill((enum devcoll_dtype)t, x.a, n, r, op, 0);
				memset(x.b, 0x5a, n * es + 16);
				ret = devcoll_reduce(comm, x.a, out, n, (enum devcoll_dtype)t, op, root);
				for (size_t i = 0; !ret && r == root && i < n; i++)
					if (check_one((enum devcoll_dtype)t, op, W, out, i, i)) {
						ret = -1;
						break;
					}
				if (!inplace && (unsigned char)x.b[n * es] != 0x5a)
					ret = -2;
				if (ret)
					FAIL(&x, "reduce %s %s n=%zu root %d: %s", devcoll_dtype_name(t),
					     devcoll_op_name(op), n, root, ret == -1 ? "wrong" :
					     ret == -2 ? "wrote past the end" : devcoll_last_error());
			}
			for (size_t i = 0; i < n * es; i++)
				x.a[i] = r == root ? (char)(i * 7 + ci) : (char)0xee;
			ret = devcoll_broadcast(comm, x.a, n, (enum devcoll_dtype)t, root);
			for (size_t i = 0; !ret && i < n * es; i++)
				if (x.a[i] != (char)(i * 7 + ci))
					ret = -1;
			if (ret)
				FAIL(&x, "broadcast %s n=%zu root %d: %s", devcoll_dtype_name(t), n, root,
				     ret == -1 ? "wrong" : devcoll_last_error());
		}
	free(x.a);
	free(x.b);
	return x.fails ? 1 : 0;
}

/* one gather and one scatter; @key varies the data, odd: in place at the
 * root; non-roots pass NULL for the buffer that does not matter to them on
 * odd counts, and every rank passes NULL for both on count 0; guard bytes
 * after the root's and the receivers' buffers */
static void gs_case(devcoll_comm *comm, struct ctx *x, enum devcoll_dtype t, size_t n, int root,
		    unsigned int key)
{
	int r = devcoll_comm_rank(comm), W = devcoll_comm_size(comm), ret;
	size_t bl = n * devcoll_dtype_size(t), all = bl * (size_t)W;
	bool me = r == root, inplace = me && key & 1, nul = !me && n & 1;
	char *in = inplace ? x->b + (size_t)r * bl : x->a;
	char *out = inplace ? x->a + (size_t)r * bl : x->b;

	memset(x->b, 0x5a, all + 16);
	fillp(in, bl, r, key);
	ret = devcoll_gather(comm, n ? in : NULL, nul || !n ? NULL : x->b, n, t, root);
	for (int k = 0; !ret && me && k < W; k++)
		if (!okp(x->b + (size_t)k * bl, bl, k, key))
			ret = -1;
	if (!ret && me && (uint8_t)x->b[all] != 0x5a)
		ret = -2;
	if (ret)
		FAIL(x, "gather %s n=%zu root %d%s: %s", devcoll_dtype_name(t), n, root,
		     inplace ? " in place" : "", ret == -1 ? "wrong" :
		     ret == -2 ? "wrote past the end" : devcoll_last_error());
	for (int k = 0; me && k < W; k++)
		fillp(x->a + (size_t)k * bl, bl, k, key + 100);
	memset(x->b, 0x5a, bl + 16);
	ret = devcoll_scatter(comm, nul || !n ? NULL : x->a, n ? out : NULL, n, t, root);
	if (!ret && !okp(out, bl, r, key + 100))
		ret = -1;
	if (!ret && !inplace && (uint8_t)x->b[bl] != 0x5a)
		ret = -2;
	if (ret)
		FAIL(x, "scatter %s n=%zu root %d%s: %s", devcoll_dtype_name(t), n, root,
		     inplace ? " in place" : "", ret == -1 ? "wrong" :
		     ret == -2 ? "wrote past the end" : devcoll_last_error());
}

/* gather and scatter alone: three types, every root, counts 0, 1, primes
 * and those around the tree's limit (DEVCOLL_SMALL_MAX=8K: the root's
 * whole buffer up to an eighth of it, 1 KiB) */
static int gs_check(devcoll_comm *comm, void *arg)
{
	static const enum devcoll_dtype ts[] = { DEVCOLL_UINT8, DEVCOLL_INT32, DEVCOLL_FP64 };
	struct ctx x = { 0 };
	int W = devcoll_comm_size(comm);

	(void)arg;
	x.a = malloc(4099 * 8 * 8 + 16);
	x.b = malloc(4099 * 8 * 8 + 16);
	for (unsigned int ti = 0; ti < sizeof(ts) / sizeof(ts[0]); ti++) {
		size_t c0 = 1024 / ((size_t)W * devcoll_dtype_size(ts[ti]));
		const size_t cn[] = { 0, 1, 2, 3, 7, 13, 31, c0 - 1, c0, c0 + 1, 4099 };

		for (unsigned int ci = 0; ci < sizeof(cn) / sizeof(cn[0]); ci++)
			for (int root = 0; root < W; root++)
				gs_case(comm, &x, ts[ti], cn[ci], root, ci + (unsigned int)root);
	}
	free(x.a);
	free(x.b);
	return x.fails ? 1 : 0;
}

int main(void)
{
	static const char *const algos[] = { "auto", "ring", "rd", "tree", "hd" };
	/* per world size 1..8; auto picks the chain on 8 ranks for the 8-byte
	 * types at the largest count, and on 6 (4 KiB chunks) from 64 KiB */
	static const char *const rooted[] = { "auto", "chain", "chain", "tree", "chain", "auto",
					      "tree", "auto" };
	struct devcoll_opts o = { .timeout_ms = 30000 };
	int worlds[] = { 1, 2, 3, 4, 5, 6, 7, 8 }, st[8], fails = 0;

	full = getenv("DEVCOLL_FULL") && atoi(getenv("DEVCOLL_FULL"));
	/* default: each world with the next algorithm; full: every algorithm */
	for (unsigned int wi = 0; wi < (full ? 5 : 1) * sizeof(worlds) / sizeof(worlds[0]); wi++) {
		unsigned int w = wi % (sizeof(worlds) / sizeof(worlds[0]));
		int n = worlds[w];
		const char *algo = algos[algo_idx++ % 5];
		double t0 = now_s();

		if (full)
			algo = algos[wi / (sizeof(worlds) / sizeof(worlds[0]))];

		setenv("DEVCOLL_ALGO", algo, 1);
		setenv("DEVCOLL_ROOTED_ALGO", rooted[w], 1);
		/* 3 connections per peer on odd worlds, 1 with small chunks on 6 */
		o.nconns = n % 2 ? 3 : n == 6 ? 1 : 2;
		o.chunk = n == 6 ? 4096 : 0;
		int bad = run_world(n, &o, matrix, (void *)(uintptr_t)w, st, 300);

		printf("%s: matrix, %d ranks, DEVCOLL_ALGO=%s, DEVCOLL_ROOTED_ALGO=%s, %u conns/peer "
		       "(%.1f s)\n", bad ? "FAIL" : "ok", n, algo, rooted[w], o.nconns, now_s() - t0);
		fails += bad;
	}
	/* every allreduce algorithm on every world size */
	{
		double t0 = now_s();
		int bad = 0;

		for (int a = 1; a < 5; a++)
			for (int n = 2; n <= 8; n++) {
				setenv("DEVCOLL_ALGO", algos[a], 1);
				o.nconns = (unsigned int)(n % 3) + 1;
				if (run_world(n, &o, algo_check, NULL, st, 120)) {
					printf("FAIL: allreduce with DEVCOLL_ALGO=%s on %d ranks\n", algos[a], n);
					bad++;
				}
			}
		printf("%s: allreduce with ring, rd, tree and hd on 2 to 8 ranks (%.1f s)\n",
		       bad ? "FAIL" : "ok", now_s() - t0);
		fails += bad;
	}
	unsetenv("DEVCOLL_ALGO");
	/* broadcast and reduce: the chain forced, then chosen by size (4 KiB
	 * chunks and DEVCOLL_SMALL_MAX=8192: the chain from 8 KiB on 3 or more
	 * ranks, the tree below) */
	for (int mode = 0; mode < 2; mode++) {
		double t0 = now_s();
		int bad = 0;

		setenv("DEVCOLL_ROOTED_ALGO", mode ? "auto" : "chain", 1);
		if (mode)
			setenv("DEVCOLL_SMALL_MAX", "8K", 1);	/* the K suffix too */
		o.chunk = 4096;
		for (int n = 2; n <= 8; n++) {
			o.nconns = (unsigned int)(n % 3) + 1;
			if (run_world(n, &o, rooted_check, NULL, st, 120)) {
				printf("FAIL: broadcast and reduce with DEVCOLL_ROOTED_ALGO=%s on %d ranks\n",
				       mode ? "auto" : "chain", n);
				bad++;
			}
		}
		printf("%s: broadcast and reduce with DEVCOLL_ROOTED_ALGO=%s on 2 to 8 ranks (%.1f s)\n",
		       bad ? "FAIL" : "ok", mode ? "auto" : "chain", now_s() - t0);
		fails += bad;
	}
	/* gather and scatter: the tree forced, linear forced, and chosen by
	 * size (still DEVCOLL_SMALL_MAX=8K and 4 KiB chunks) */
	for (int mode = 0; mode < 3; mode++) {
		static const char *const gs[] = { "tree", "chain", "auto" };
		double t0 = now_s();
		int bad = 0;

		setenv("DEVCOLL_ROOTED_ALGO", gs[mode], 1);
		for (int n = 1; n <= 8; n++) {
			o.nconns = (unsigned int)(n % 3) + 1;
			if (run_world(n, &o, gs_check, NULL, st, 120)) {
				printf("FAIL: gather/scatter, DEVCOLL_ROOTED_ALGO=%s, %d ranks\n",
				       gs[mode], n);
				bad++;
			}
		}
		printf("%s: gather and scatter with DEVCOLL_ROOTED_ALGO=%s on 1 to 8 ranks "
		       "(%.1f s)\n", bad ? "FAIL" : "ok", gs[mode], now_s() - t0);
		fails += bad;
	}
	unsetenv("DEVCOLL_ROOTED_ALGO");
	unsetenv("DEVCOLL_SMALL_MAX");
	o.nconns = 0;
	o.chunk = 0;
	for (int n = 2; n <= (full ? 8 : 3); n++) {
		double t0 = now_s();
		int bad = run_world(n, &o, large, NULL, st, 300);

		printf("%s: 64 MiB allreduce, %d ranks (%.1f s)\n", bad ? "FAIL" : "ok", n, now_s() - t0);
		fails += bad;
	}
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
