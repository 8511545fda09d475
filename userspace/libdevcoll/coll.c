// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The collectives: ring (segmented, chunk-pipelined, reduction as chunks
 * land) for large messages, recursive doubling and binomial trees for small
 * ones, pairwise exchange for alltoall.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static char *scratch(devcoll_comm *c, size_t len)
{
	if (len > c->tmp_len) {
		char *p = realloc(c->tmp, len);

		if (!p)
			return NULL;
		c->tmp = p;
		c->tmp_len = len;
	}
	return c->tmp ? c->tmp : (char *)"";
}

static struct wire_hdr tmpl(devcoll_comm *c, int kind, const struct op *o)
{
	struct wire_hdr h = {
		.magic = WIRE_MAGIC, .seq = c->seq, .kind = (uint8_t)kind,
		.op = (uint8_t)(kind == K_ALLREDUCE || kind == K_REDUCE || kind == K_RSCATTER ? o->rop : 0),
		.dtype = (uint8_t)o->type, .count = o->count, .tag = (uint32_t)o->root,
	};
	return h;
}

#define MOD(a, n) ((((a) % (n)) + (n)) % (n))

static int sendrecv(devcoll_comm *c, struct wire_hdr *t, uint32_t step, int sp, const void *sb,
		    size_t sl, int rp, void *rb, size_t rl)
{
	t->step = step;
	return dc_sendrecv(c, t, sp, sb, sl, rp, rb, rl);
}

/* Ring over segments (offsets/lengths in bytes) of @buf. Reduce-scatter:
 * n-1 steps, step s sends segment (r + rs0 - s) and reduces the one before
 * it into @buf; allgather likewise without reduction. Chunk j of a step goes
 * out as soon as chunk j of the previous step's receive is in. */
static int ring(devcoll_comm *c, struct wire_hdr *t, uint32_t base, char *buf, const char *src,
		char *tmp, const size_t *off, const size_t *len, int rs0, bool do_rs, int ag0,
		bool do_ag, reduce_fn red, size_t es)
{
	int n = c->size, r = c->rank, ns = 0;
	struct step *st = calloc((size_t)(2 * n), sizeof(*st));
	struct xfer x = { .speer = MOD(r + 1, n), .rpeer = MOD(r - 1, n), .st = st,
			  .red = red, .esize = es, .tmpl = *t };
	int ret;

	if (!st)
		return dc_fail(-ENOMEM, "out of memory");
	for (int s = 0; do_rs && s < n - 1; s++, ns++) {
		int sseg = MOD(r + rs0 - s, n), rseg = MOD(r + rs0 - s - 1, n);

		/* out of place (@src): the first step sends this rank's data from
		 * @src, and each reduction starts from it */
		st[ns] = (struct step){ (src && s == 0 ? src : buf) + off[sseg], len[sseg],
					buf + off[rseg], len[rseg], tmp, ns > 0,
					src ? src + off[rseg] : NULL };
	}
	for (int s = 0; do_ag && s < n - 1; s++, ns++) {
		int sseg = MOD(r + ag0 - s, n), rseg = MOD(r + ag0 - s - 1, n);

		st[ns] = (struct step){ buf + off[sseg], len[sseg], buf + off[rseg], len[rseg],
					NULL, ns > 0, NULL };
	}
	x.nst = ns;
	x.tmpl.step = base;
	ret = dc_run(c, &x);
	free(st);
	return ret;
}

static void split_even(size_t count, int n, size_t es, size_t *off, size_t *len)
{
	size_t base = count / (size_t)n, rem = count % (size_t)n, o = 0;

	for (int i = 0; i < n; i++) {
		len[i] = (base + ((size_t)i < rem)) * es;
		off[i] = o;
		o += len[i];
	}
}

static int want_small(devcoll_comm *c, size_t bytes, size_t count)
{
	if (c->algo == DEVCOLL_ALGO_RING || c->algo == DEVCOLL_ALGO_HD)
		return 0;
	if (c->algo == DEVCOLL_ALGO_RD || c->algo == DEVCOLL_ALGO_TREE)
		return 1;
	return bytes <= c->small_max || count < (size_t)c->size;
}

/* Binomial-tree reduce of @acc (bytes) to @root, using @tmp; step = level. */
static int tree_reduce(devcoll_comm *c, struct wire_hdr *t, char *acc, char *tmp, size_t bytes,
		       int root, reduce_fn red, size_t es)
{
	int n = c->size, vr = MOD(c->rank - root, n), ret = 0;
	uint32_t lvl = 0;

	for (int mask = 1; mask < n; mask <<= 1, lvl++) {
		if (vr & mask)
			return sendrecv(c, t, 100 + lvl, MOD(vr - mask + root, n), acc, bytes, -1, NULL, 0);
		if ((vr | mask) < n) {
			ret = sendrecv(c, t, 100 + lvl, -1, NULL, 0, MOD((vr | mask) + root, n), tmp, bytes);
			if (ret)
				return ret;
			red(acc, acc, tmp, bytes / es);
		}
	}
	return 0;
}

static int tree_bcast(devcoll_comm *c, struct wire_hdr *t, char *buf, size_t bytes, int root)
{
	int n = c->size, vr = MOD(c->rank - root, n), mask = 1, ret;
	uint32_t lvl = 0;

	while (mask < n && !(vr & mask)) {
		mask <<= 1;
		lvl++;
	}
	if (vr) {	/* from the parent: clear the lowest set bit */
		ret = sendrecv(c, t, 200 + lvl, -1, NULL, 0, MOD(vr - mask + root, n), buf, bytes);
		if (ret)
			return ret;
	}
	for (mask >>= 1, lvl--; mask > 0; mask >>= 1, lvl--)
		if (vr + mask < n) {
			ret = sendrecv(c, t, 200 + lvl, MOD(vr + mask + root, n), buf, bytes, -1, NULL, 0);
			if (ret)
				return ret;
		}
	return 0;
}

/*
 * Broadcast and reduce of large messages: a chain from the root (broadcast)
 * or towards it (reduce), chunk-pipelined: a rank passes chunk j on as soon
 * as it has it (reduced, for reduce), so the whole takes about one message
 * time plus a chunk time per rank instead of log2(n) message times. The
 * message from chain position p to p + 1 is step p + 1, so rank p's
 * transfer starts at step p: its receive, then its dependent send.
 */
static bool want_chain(devcoll_comm *c, size_t bytes, bool reduce)
{
	if (c->rooted != ROOTED_AUTO)
		return c->rooted == ROOTED_CHAIN;
	/* two ranks: a single hop either way, but the chain reduces each
	 * chunk as it lands where the tree receives the whole message first
	 * (1 to 2 MiB reduces 1.5x faster); a broadcast goes whole */
	return bytes > c->small_max && (c->size == 2 ? reduce : bytes >= 2 * c->chunk);
}

static int chain_bcast(devcoll_comm *c, struct wire_hdr *t, char *buf, size_t bytes, int root)
{
	int n = c->size, p = MOD(c->rank - root, n);
	char *b = buf ? buf : (char *)"";
	struct step st[2] = {
		{ .rptr = p > 0 ? b : NULL, .rlen = p > 0 ? bytes : 0 },
		{ .sptr = p < n - 1 ? b : NULL, .slen = p < n - 1 ? bytes : 0, .dep = p > 0 },
	};
	struct xfer x = { .speer = p < n - 1 ? MOD(c->rank + 1, n) : -1,
			  .rpeer = p > 0 ? MOD(c->rank - 1, n) : -1, .st = st, .nst = 2, .tmpl = *t };

	x.tmpl.step = (uint32_t)p;
	return dc_run(c, &x);
}

/* The chain starts at the rank before the root (root - 1) and ends at it;
 * each rank reduces what comes in with its own data into @acc (starting
 * from @send out of place) and passes it on. */
static int chain_reduce(devcoll_comm *c, struct wire_hdr *t, const char *send, char *acc,
			size_t bytes, int root, reduce_fn red, size_t es)
{
	int n = c->size, p = n - 1 - MOD(c->rank - root, n);
	bool first = p == 0, last = c->rank == root;
	const char *own = send ? send : "";
	struct step st[2] = {
		{ .rptr = first ? NULL : acc, .rlen = first ? 0 : bytes, .tmp = first ? NULL : (char *)"",
		  .init = acc != send ? send : NULL },
		{ .sptr = last ? NULL : first ? own : acc, .slen = last ? 0 : bytes, .dep = !first },
	};
	struct xfer x = { .speer = last ? -1 : MOD(c->rank - 1, n),
			  .rpeer = first ? -1 : MOD(c->rank + 1, n), .st = st, .nst = 2,
			  .red = red, .esize = es, .tmpl = *t };

	x.tmpl.step = (uint32_t)p;
	return dc_run(c, &x);
}

/*
 * Ranks beyond the largest power of two p fold in first: each even rank
 * below 2 * rem hands its vector to the odd rank after it and gets the
 * result back at the end (step 63). Sets *p, *rem and *nr (the rank's place
 * among the p). Returns 1 when this rank was folded out and is done, 0 to
 * go on, or an error.
 */
static int fold_in(devcoll_comm *c, struct wire_hdr *t, char *buf, char *tmp, size_t bytes,
		   reduce_fn red, size_t es, int *p, int *rem, int *nr)
{
	int n = c->size, r = c->rank, ret;

	for (*p = 1; *p * 2 <= n; *p *= 2)
		;
	*rem = n - *p;
	*nr = r - *rem;
	if (r >= 2 * *rem)
		return 0;
	if (!(r & 1)) {
		ret = sendrecv(c, t, 0, r + 1, buf, bytes, -1, NULL, 0);
		if (!ret)
			ret = sendrecv(c, t, 63, -1, NULL, 0, r + 1, buf, bytes);
		return ret ?: 1;
	}
	ret = sendrecv(c, t, 0, -1, NULL, 0, r - 1, tmp, bytes);
	if (!ret)
		red(buf, buf, tmp, bytes / es);
	*nr = r / 2;
	return ret;
}

/* Recursive doubling over the largest power of two, the others folded in. */
static int rd_allreduce(devcoll_comm *c, struct wire_hdr *t, char *buf, char *tmp, size_t bytes,
			reduce_fn red, size_t es)
{
	int r = c->rank, p, rem, nr, ret;
	uint32_t step = 1;

	ret = fold_in(c, t, buf, tmp, bytes, red, es, &p, &rem, &nr);
	if (ret)
		return ret < 0 ? ret : 0;
	for (int mask = 1; mask < p; mask <<= 1, step++) {
		int np = nr ^ mask, peer = np < rem ? np * 2 + 1 : np + rem;

		ret = sendrecv(c, t, step, peer, buf, bytes, peer, tmp, bytes);
		if (ret)
			return ret;
		red(buf, buf, tmp, bytes / es);
	}
	if (r < 2 * rem)
		return sendrecv(c, t, 63, r - 1, buf, bytes, -1, NULL, 0);
	return 0;
}

/* Recursive halving reduce-scatter, then recursive doubling allgather
 * (Rabenseifner), over p = the largest power of two <= n ranks; the others
 * fold in first like recursive doubling. Each rank ends the halving with
 * 1/p of the vector reduced, so it moves 2(p-1)/p of it in 2 log p steps. */
static int hd_allreduce(devcoll_comm *c, struct wire_hdr *t, char *buf, char *tmp, size_t count,
			size_t es, reduce_fn red)
{
	int r = c->rank, p, rem, nr, ret;
	size_t bytes = count * es, *off, *len;

	ret = fold_in(c, t, buf, tmp, bytes, red, es, &p, &rem, &nr);
	if (ret)
		return ret < 0 ? ret : 0;
	off = calloc((size_t)(2 * p + 2), sizeof(size_t));
	if (!off)
		return dc_fail(-ENOMEM, "out of memory");
	len = off + p + 1;
	split_even(count, p, es, off, len);
	off[p] = bytes;
	/* blocks [lo, hi) are this rank's; halve them */
	int lo = 0, hi = p, i = 0;

	ret = 0;
	for (int mask = p / 2; mask > 0 && !ret; mask >>= 1, i++) {
		int np = nr ^ mask, peer = np < rem ? np * 2 + 1 : np + rem, mid = (lo + hi) / 2;
		int klo = nr & mask ? mid : lo, khi = nr & mask ? hi : mid;
		int slo = nr & mask ? lo : mid, shi = nr & mask ? mid : hi;

		ret = sendrecv(c, t, 1 + (uint32_t)i, peer, buf + off[slo], off[shi] - off[slo], peer,
			       tmp, off[khi] - off[klo]);
		if (!ret)
			red(buf + off[klo], buf + off[klo], tmp, (off[khi] - off[klo]) / es);
		lo = klo;
		hi = khi;
	}
	/* and double them back */
	for (int mask = 1, j = 0; mask < p && !ret; mask <<= 1, j++) {
		int np = nr ^ mask, peer = np < rem ? np * 2 + 1 : np + rem, w = hi - lo;
		int plo = nr & mask ? lo - w : hi, phi = nr & mask ? lo : hi + w;

		ret = sendrecv(c, t, 20 + (uint32_t)j, peer, buf + off[lo], off[hi] - off[lo], peer,
			       buf + off[plo], off[phi] - off[plo]);
		lo = lo < plo ? lo : plo;
		hi = hi > phi ? hi : phi;
	}
	free(off);
	if (!ret && r < 2 * rem)
		ret = sendrecv(c, t, 63, r - 1, buf, bytes, -1, NULL, 0);
	return ret;
}

static int do_allreduce(devcoll_comm *c, const struct op *o, int kind)
{
	size_t es = devcoll_dtype_size(o->type), bytes = o->count * es;
	reduce_fn red = dc_reduce_fn(o->type, o->rop);
	struct wire_hdr t = tmpl(c, kind, o);
	int n = c->size, ret;
	char *tmp;

	bool ring_path = n > 1 && c->algo != DEVCOLL_ALGO_HD && !want_small(c, bytes, o->count);
	/* the ring reads an out-of-place send buffer itself */
	const char *src = ring_path && o->recv != o->send ? o->send : NULL;

	if (o->recv != o->send && bytes && !src)
		memmove(o->recv, o->send, bytes);
	if (n == 1)
		return 0;
	if (c->algo == DEVCOLL_ALGO_HD) {
		tmp = scratch(c, bytes);
		if (!tmp)
			return dc_fail(-ENOMEM, "out of memory");
		ret = hd_allreduce(c, &t, o->recv, tmp, o->count, es, red);
	} else if (want_small(c, bytes, o->count) && c->algo != DEVCOLL_ALGO_TREE) {
		tmp = scratch(c, bytes);
		if (!tmp)
			return dc_fail(-ENOMEM, "out of memory");
		ret = rd_allreduce(c, &t, o->recv, tmp, bytes, red, es);
	} else if (want_small(c, bytes, o->count)) {
		tmp = scratch(c, bytes);
		if (!tmp)
			return dc_fail(-ENOMEM, "out of memory");
		ret = tree_reduce(c, &t, o->recv, tmp, bytes, 0, red, es);
		if (!ret) {
			if (o->rop == DEVCOLL_AVG && c->rank == 0)
				dc_avg_finish(o->recv, o->count, o->type, n);
			ret = tree_bcast(c, &t, o->recv, bytes, 0);
		}
		return ret;
	} else {
		size_t *off = calloc((size_t)(2 * n), sizeof(size_t)), *len = off + n;

		tmp = (char *)"";	/* reduce flag: chunks land in dc_run's slots */
		if (!off) {
			free(off);
			return dc_fail(-ENOMEM, "out of memory");
		}
		split_even(o->count, n, es, off, len);
		if (o->rop != DEVCOLL_AVG) {
			ret = ring(c, &t, 0, o->recv, src, tmp, off, len, 0, true, 1, true, red, es);
		} else {
			/* the division has to sit between the two phases */
			int own = MOD(c->rank + 1, n);

			ret = ring(c, &t, 0, o->recv, src, tmp, off, len, 0, true, 0, false, red, es);
			if (!ret)
				dc_avg_finish((char *)o->recv + off[own], len[own] / es, o->type, n);
			if (!ret)
				ret = ring(c, &t, (uint32_t)n, o->recv, NULL, tmp, off, len, 0, false, 1, true,
					   red, es);
		}
		free(off);
		return ret;
	}
	if (!ret && o->rop == DEVCOLL_AVG)
		dc_avg_finish(o->recv, o->count, o->type, n);
	return ret;
}

static int do_reduce(devcoll_comm *c, const struct op *o)
{
	size_t es = devcoll_dtype_size(o->type), bytes = o->count * es;
	struct wire_hdr t = tmpl(c, K_REDUCE, o);
	char *acc, *tmp;
	int ret;

	tmp = scratch(c, 2 * bytes);
	if (!tmp)
		return dc_fail(-ENOMEM, "out of memory");
	acc = c->rank == o->root ? (char *)o->recv : tmp + bytes;
	if (acc == NULL)
		acc = (char *)"";
	if (c->size > 1 && want_chain(c, bytes, true)) {
		/* the chain starts each chunk from @send itself */
		ret = chain_reduce(c, &t, o->send, acc, bytes, o->root, dc_reduce_fn(o->type, o->rop),
				   es);
		goto out;
	}
	if (acc != o->send && bytes)
		memmove(acc, o->send, bytes);
	ret = tree_reduce(c, &t, acc, tmp, bytes, o->root, dc_reduce_fn(o->type, o->rop), es);
out:
	if (!ret && c->rank == o->root && o->rop == DEVCOLL_AVG)
		dc_avg_finish(o->recv, o->count, o->type, c->size);
	return ret;
}

static int do_allgatherv(devcoll_comm *c, const struct op *o, int kind, const size_t *counts,
			 const size_t *displs)
{
	size_t es = devcoll_dtype_size(o->type);
	struct wire_hdr t = tmpl(c, kind, o);
	int n = c->size, r = c->rank, ret;
	size_t *off = calloc((size_t)(2 * n), sizeof(size_t)), *len = off + n;

	if (!off)
		return dc_fail(-ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		off[i] = displs[i] * es;
		len[i] = counts[i] * es;
	}
	if (o->send && (const char *)o->send != (char *)o->recv + off[r] && len[r])
		memmove((char *)o->recv + off[r], o->send, len[r]);
	ret = n > 1 ? ring(c, &t, 0, o->recv, NULL, NULL, off, len, 0, false, 0, true, NULL, es) : 0;
	free(off);
	return ret;
}

/*
 * The counts and displacements of a collective with @count elements per
 * rank, for its v-variant: counts in [0, n), displacements in [n, 2n).
 */
static size_t *uniform_counts(int n, size_t count)
{
	size_t *v = calloc((size_t)(2 * n), sizeof(size_t));

	if (!v) {
		dc_fail(-ENOMEM, "out of memory");
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		v[i] = count;
		v[n + i] = (size_t)i * count;
	}
	return v;
}

static int do_allgather(devcoll_comm *c, const struct op *o)
{
	int n = c->size;
	size_t *v = uniform_counts(n, o->count);
	int ret;

	if (!v)
		return -ENOMEM;
	ret = do_allgatherv(c, o, K_ALLGATHER, v, v + n);
	free(v);
	return ret;
}

static int do_reduce_scatter(devcoll_comm *c, const struct op *o)
{
	size_t es = devcoll_dtype_size(o->type), blk = o->count * es, all = blk * (size_t)c->size;
	struct wire_hdr t = tmpl(c, K_RSCATTER, o);
	int n = c->size, r = c->rank, ret = 0;
	size_t *off = calloc((size_t)(2 * n), sizeof(size_t)), *len = off + n;
	char *work = scratch(c, all);

	if (!off || !work) {
		free(off);
		return dc_fail(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		off[i] = (size_t)i * blk;
		len[i] = blk;
	}
	if (all && n == 1)
		memcpy(work, o->send, all);
	if (n > 1)
		ret = ring(c, &t, 0, work, o->send, (char *)"", off, len, -1, true, 0, false,
			   dc_reduce_fn(o->type, o->rop), es);
	if (!ret && blk) {
		memmove(o->recv, work + off[r], blk);
		if (o->rop == DEVCOLL_AVG)
			dc_avg_finish(o->recv, o->count, o->type, n);
	}
	free(off);
	return ret;
}

static int do_alltoallv(devcoll_comm *c, const struct op *o, int kind, const size_t *sc,
			const size_t *sd, const size_t *rc, const size_t *rd)
{
	size_t es = devcoll_dtype_size(o->type);
	struct wire_hdr t = tmpl(c, kind, o);
	int n = c->size, r = c->rank, ret = 0;

	if (sc[r])
		memmove((char *)o->recv + rd[r] * es, (const char *)o->send + sd[r] * es, sc[r] * es);
	for (int k = 1; k < n && !ret; k++) {
		int to = MOD(r + k, n), from = MOD(r - k, n);

		ret = sendrecv(c, &t, 0, to, (const char *)o->send + sd[to] * es, sc[to] * es, from,
			       (char *)o->recv + rd[from] * es, rc[from] * es);
	}
	return ret;
}

static int do_alltoall(devcoll_comm *c, const struct op *o)
{
	int n = c->size;
	size_t *v = uniform_counts(n, o->count);
	int ret;

	if (!v)
		return -ENOMEM;
	ret = do_alltoallv(c, o, K_ALLTOALL, v, v + n, v, v + n);
	free(v);
	return ret;
}

/*
 * Gather and scatter of small blocks: binomial trees over virtual ranks
 * vr = (rank - root) mod n, so that the root handles log2(n) messages
 * instead of n - 1. Rank vr's subtree is vr .. vr + lowbit(vr) - 1 (clipped
 * to n): it collects the subtree's blocks in virtual order and sends them
 * to its parent as one message (scatter: the reverse). The root turns
 * virtual order into rank order and back. Up to 3 ranks the tree is the
 * linear exchange; for larger blocks the forwarding only adds copies (on 8
 * ranks of one host linear was 1.5x to 2x faster from 4 KiB blocks on, the
 * scatter tree faster up to about 1 KiB), hence an eighth of
 * DEVCOLL_SMALL_MAX for the root's whole buffer. The
 * link from level l's child is step 300 + l (the other trees: 100, 200).
 */
static bool want_gs_tree(devcoll_comm *c, size_t all)
{
	if (c->rooted != ROOTED_AUTO)
		return c->rooted == ROOTED_TREE;
	return c->size > 3 && all <= c->small_max / 8;
}

static int tree_gather_scatter(devcoll_comm *c, struct wire_hdr *t, const struct op *o,
			       size_t blk, bool gather)
{
	int n = c->size, root = o->root, vr = MOD(c->rank - root, n), top = 1, ret = 0;
	size_t sz, head = (size_t)(n - root) * blk;	/* at the root: ranks root .. n - 1 */
	uint32_t lvl = 0;
	char *buf;

	/* top: vr's lowest set bit (the link to its parent, at level lvl);
	 * the root's is the power of two >= n */
	for (; top < n && !(vr & top); top <<= 1)
		lvl++;
	sz = (size_t)(vr + top < n ? top : n - vr);
	/* a leaf sends or receives its own block in place */
	buf = sz > 1 ? scratch(c, sz * blk) : gather ? (char *)o->send : o->recv;
	if (sz > 1 && !buf)
		return dc_fail(-ENOMEM, "out of memory");
	if (gather) {
		if (sz > 1 && blk)
			memcpy(buf, o->send, blk);
		/* the child at vr + m (level l) sends its subtree's blocks */
		for (int m = 1, l = 0; m < top && vr + m < n && !ret; m <<= 1, l++) {
			int k = vr + m, kn = m < n - k ? m : n - k;

			ret = sendrecv(c, t, 300 + (uint32_t)l, -1, NULL, 0, MOD(k + root, n),
				       buf + (size_t)m * blk, (size_t)kn * blk);
		}
		if (!ret && vr)
			ret = sendrecv(c, t, 300 + lvl, MOD(vr - top + root, n), buf, sz * blk, -1,
				       NULL, 0);
		if (!ret && !vr && blk) {
			memcpy((char *)o->recv + (size_t)root * blk, buf, head);
			memcpy(o->recv, buf + head, (size_t)root * blk);
		}
		return ret;
	}
	if (!vr && blk) {
		memcpy(buf, (const char *)o->send + (size_t)root * blk, head);
		memcpy(buf + head, o->send, (size_t)root * blk);
	}
	if (vr)
		ret = sendrecv(c, t, 300 + lvl, -1, NULL, 0, MOD(vr - top + root, n), buf,
			       sz * blk);
	/* the largest subtree first, as in tree_bcast */
	for (int m = top >> 1, l = (int)lvl - 1; m > 0 && !ret; m >>= 1, l--) {
		int k = vr + m, kn = m < n - k ? m : n - k;

		if (k < n)
			ret = sendrecv(c, t, 300 + (uint32_t)l, MOD(k + root, n),
				       buf + (size_t)m * blk, (size_t)kn * blk, -1, NULL, 0);
	}
	if (!ret && sz > 1 && blk)
		memcpy(o->recv, buf, blk);
	return ret;
}

static int do_gather_scatter(devcoll_comm *c, const struct op *o, bool gather)
{
	size_t es = devcoll_dtype_size(o->type), blk = o->count * es;
	struct wire_hdr t = tmpl(c, gather ? K_GATHER : K_SCATTER, o);
	int n = c->size, r = c->rank, ret = 0;

	if (n > 1 && want_gs_tree(c, blk * (size_t)n))
		return tree_gather_scatter(c, &t, o, blk, gather);
	/* linear: the root exchanges a block with each rank in turn */
	if (r != o->root) {
		if (gather)
			return sendrecv(c, &t, 0, o->root, o->send, blk, -1, NULL, 0);
		return sendrecv(c, &t, 0, -1, NULL, 0, o->root, o->recv, blk);
	}
	if (blk) {
		if (gather && o->send != (char *)o->recv + (size_t)r * blk)
			memmove((char *)o->recv + (size_t)r * blk, o->send, blk);
		if (!gather && o->recv != (const char *)o->send + (size_t)r * blk)
			memmove(o->recv, (const char *)o->send + (size_t)r * blk, blk);
	}
	for (int i = 1; i < n && !ret; i++) {
		int p = MOD(r + i, n);

		if (gather)
			ret = sendrecv(c, &t, 0, -1, NULL, 0, p, (char *)o->recv + (size_t)p * blk, blk);
		else
			ret = sendrecv(c, &t, 0, p, (const char *)o->send + (size_t)p * blk, blk, -1,
				       NULL, 0);
	}
	return ret;
}

static int do_barrier(devcoll_comm *c, const struct op *o)
{
	struct wire_hdr t = tmpl(c, K_BARRIER, o);
	int n = c->size, r = c->rank, ret = 0;
	uint32_t step = 0;

	for (int k = 1; k < n && !ret; k <<= 1, step++)
		ret = sendrecv(c, &t, step, MOD(r + k, n), NULL, 0, MOD(r - k, n), NULL, 0);
	return ret;
}

static int do_p2p(devcoll_comm *c, const struct op *o, bool send)
{
	size_t bytes = o->count * devcoll_dtype_size(o->type);
	struct wire_hdr t = {
		.magic = WIRE_MAGIC, .kind = K_SEND, .dtype = (uint8_t)o->type, .count = o->count,
		.tag = o->tag,
	};

	if (send) {
		t.seq = c->p2p_sseq[o->root]++;
		return dc_sendrecv(c, &t, o->root, o->send, bytes, -1, NULL, 0);
	}
	t.seq = c->p2p_rseq[o->root]++;
	return dc_sendrecv(c, &t, -1, NULL, 0, o->root, o->recv, bytes);
}

int dc_exec_op(devcoll_comm *c, struct op *o)
{
	int ret;

	if (c->err)
		return dc_fail(c->err, "%s", c->errmsg);
	/* an rdpmd event that came between operations fails the next one
	 * (a poll of its socket, only where rdpmd made the binding) */
	if (c->dm && (ret = dc_dm_check(c)))
		return ret;
	if (o->kind != K_SEND && o->kind != K_RECV)
		c->seq++;
	switch (o->kind) {
	case K_ALLREDUCE: ret = do_allreduce(c, o, K_ALLREDUCE); break;
	case K_REDUCE: ret = do_reduce(c, o); break;
	case K_BCAST: {
		struct wire_hdr t = tmpl(c, K_BCAST, o);

		size_t bytes = o->count * devcoll_dtype_size(o->type);

		if (c->size == 1)
			ret = 0;
		else if (want_chain(c, bytes, false))
			ret = chain_bcast(c, &t, o->recv, bytes, o->root);
		else
			ret = tree_bcast(c, &t, o->recv, bytes, o->root);
		break;
	}
	case K_ALLGATHER: ret = do_allgather(c, o); break;
	case K_ALLGATHERV: ret = do_allgatherv(c, o, K_ALLGATHERV, o->counts, o->displs); break;
	case K_RSCATTER: ret = do_reduce_scatter(c, o); break;
	case K_ALLTOALL: ret = do_alltoall(c, o); break;
	case K_ALLTOALLV:
		ret = do_alltoallv(c, o, K_ALLTOALLV, o->scounts, o->sdispls, o->counts, o->displs);
		break;
	case K_GATHER: ret = do_gather_scatter(c, o, true); break;
	case K_SCATTER: ret = do_gather_scatter(c, o, false); break;
	case K_BARRIER: ret = do_barrier(c, o); break;
	case K_SEND: ret = do_p2p(c, o, true); break;
	case K_RECV: ret = do_p2p(c, o, false); break;
	default: ret = dc_fail(-EINVAL, "unknown operation"); break;
	}
	if (ret && !c->err && ret != -EINVAL && ret != -ENOMEM)
		dc_comm_fail(c, ret, "%s", devcoll_last_error());
	return ret;
}

