// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * nccl-tests-style sweep: for each size, warm-up iterations, then timed
 * out-of-place and in-place iterations; time is the slowest rank's mean;
 * algbw = size / time, busbw per nccl-tests (allreduce 2(n-1)/n,
 * allgather/reduce_scatter/alltoall/gather/scatter (n-1)/n,
 * broadcast/reduce/sendrecv 1); #wrong
 * counts wrong elements over all ranks after a checked run.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench.h"

static const char *const cnames[B_NCOLL] = {
	"allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "reduce", "gather",
	"scatter", "sendrecv",
};
static const char *const tnames[BT_NTYPES] = { "float", "double", "int32", "half", "bfloat16" };
static const size_t tsizes[BT_NTYPES] = { 4, 8, 4, 2, 2 };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'G': case 'g': v *= 1024; /* fall through */
	case 'M': case 'm': v *= 1024; /* fall through */
	case 'K': case 'k': v *= 1024; break;
	default: break;
	}
	return (size_t)v;
}

/*
 * The 16-bit floats hold the small integers of inval() (and -1, -99)
 * exactly: a float's bits cut down without rounding. Normal numbers and
 * zero only.
 */
static uint16_t to16(enum btype t, double v)
{
	float f = (float)v;
	uint32_t u;

	memcpy(&u, &f, 4);
	if (t == BT_BF16 || !(u & 0x7fffffff))	/* bf16, or zero in either */
		return (uint16_t)(u >> 16);
	return (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) | ((u >> 13) & 0x3ff));
}

static double from16(enum btype t, uint16_t h)
{
	uint32_t u;
	float f;

	if (t == BT_BF16 || !(h & 0x7fff))
		u = (uint32_t)h << 16;
	else if ((h & 0x7c00) == 0x7c00)
		u = ((uint32_t)(h & 0x8000) << 16) | 0x7fc00000;	/* inf or NaN: wrong anyway */
	else
		u = ((uint32_t)(h & 0x8000) << 16) | ((((h >> 10) & 0x1f) + 112u) << 23) |
		    ((uint32_t)(h & 0x3ff) << 13);
	memcpy(&f, &u, 4);
	return f;
}

static void put(enum btype t, void *b, size_t i, double v)
{
	if (t == BT_FLOAT)
		((float *)b)[i] = (float)v;
	else if (t == BT_DOUBLE)
		((double *)b)[i] = v;
	else if (t == BT_INT32)
		((int32_t *)b)[i] = (int32_t)v;
	else
		((uint16_t *)b)[i] = to16(t, v);
}

static double get(enum btype t, const void *b, size_t i)
{
	switch (t) {
	case BT_FLOAT: return ((const float *)b)[i];
	case BT_DOUBLE: return ((const double *)b)[i];
	case BT_INT32: return ((const int32_t *)b)[i];
	default: return from16(t, ((const uint16_t *)b)[i]);
	}
}

/* input of rank r, element i: small integers, exact in every type, and
 * their sums too: bfloat16 holds the integers up to 256 (as many as 20
 * ranks here) */
static double inval(enum btype t, int r, size_t i)
{
	if (t == BT_HALF || t == BT_BF16)
		return (double)((r % 16 + 16) % 16 + (int)(i % 7));
	return (double)((r + 1) * 3 + (int)(i % 17));
}

static long check(struct backend *be, enum bcoll c, enum btype t, const void *recv, size_t count,
		  int root)
{
	int n = be->size, r = be->rank;
	long wrong = 0;

	switch (c) {
	case B_ALLREDUCE:
	case B_REDUCE:
		if (c == B_REDUCE && r != root)
			return 0;
		for (size_t i = 0; i < count; i++) {
			double want = 0;

			for (int k = 0; k < n; k++)
				want += inval(t, k, i);
			wrong += get(t, recv, i) != want;
		}
		break;
	case B_REDUCE_SCATTER:
		for (size_t i = 0; i < count; i++) {
			double want = 0;

			for (int k = 0; k < n; k++)
				want += inval(t, k, (size_t)r * count + i);
			wrong += get(t, recv, i) != want;
		}
		break;
	case B_ALLGATHER:
		for (int k = 0; k < n; k++)
			for (size_t i = 0; i < count; i++)
				wrong += get(t, recv, (size_t)k * count + i) != inval(t, k, i);
		break;
	case B_ALLTOALL:	/* block k from rank k: its elements r*count.. */
		for (int k = 0; k < n; k++)
			for (size_t i = 0; i < count; i++)
				wrong += get(t, recv, (size_t)k * count + i) != inval(t, k, (size_t)r * count + i);
		break;
	case B_BROADCAST:
		for (size_t i = 0; i < count; i++)
			wrong += get(t, recv, i) != inval(t, root, i);
		break;
	case B_GATHER:
		for (int k = 0; r == root && k < n; k++)
			for (size_t i = 0; i < count; i++)
				wrong += get(t, recv, (size_t)k * count + i) != inval(t, k, i);
		break;
	case B_SCATTER:		/* block r of the root's */
		for (size_t i = 0; i < count; i++)
			wrong += get(t, recv, i) != inval(t, root, (size_t)r * count + i);
		break;
	case B_SENDRECV:
		for (size_t i = 0; i < count; i++)
			wrong += get(t, recv, i) != inval(t, (r + n - 1) % n, i);
		break;
	default:
		break;
	}
	return wrong;
}

static void usage(void)
{
	fprintf(stderr,
		"options: -b MINBYTES -e MAXBYTES -f FACTOR -o LIST (comma-separated: allreduce|allgather|reduce_scatter|"
		"alltoall|\n         broadcast|reduce|gather|scatter|sendrecv|all)\n"
		"         -d float|double|int32|half|bfloat16 -w WARMUP -n ITERS -t MS (time each size at least this\n"
		"         long) -c 0|1 (check) -m (machine output)\n");
}

/* -o: "all" or names separated by commas; 1 after an error message. */
static int parse_colls(const char *arg, int *colls, int *ncolls, bool say)
{
	char buf[256], *save = NULL;

	if (strlen(arg) >= sizeof(buf)) {
		if (say)
			fprintf(stderr, "devcoll-perf: -o %s: too long\n", arg);
		return 1;
	}
	strcpy(buf, arg);
	for (char *name = strtok_r(buf, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		int found = -1;

		for (int c = 0; c < B_NCOLL; c++)
			if (!strcmp(name, "all") || !strcmp(name, cnames[c])) {
				found = c;
				if (*ncolls < B_NCOLL)
					colls[(*ncolls)++] = c;
			}
		if (found < 0) {
			if (say) {
				fprintf(stderr, "devcoll-perf: unknown collective '%s'\n", name);
				usage();
			}
			return 1;
		}
	}
	return 0;
}

/* Seconds per call, the slowest rank's mean over @iters calls. */
static double timed(struct backend *be, enum bcoll c, char *sb, char *rb, size_t count,
		    enum btype t, int root, int iters, int *ret)
{
	double t0;

	be->barrier();
	t0 = now();
	for (int it = 0; it < iters && !*ret; it++)
		*ret = be->coll(c, sb, rb, count, t, root);
	return be->max((now() - t0) / iters);
}

int bench_main(struct backend *be, int argc, char **argv)
{
	size_t minb = 8, maxb = 64u << 20;
	double factor = 2;
	int warm = 5, iters = 20, min_ms = 0, checkit = 1, machine = 0, opt, colls[B_NCOLL], ncolls = 0;
	enum btype t = BT_FLOAT;
	int root = 0;

	optind = 1;
	while ((opt = getopt(argc, argv, "b:e:f:o:d:w:n:t:c:mh")) != -1) {
		switch (opt) {
		case 'b': minb = parse_size(optarg); break;
		case 'e': maxb = parse_size(optarg); break;
		case 'f': factor = atof(optarg); break;
		case 'o':
			if (parse_colls(optarg, colls, &ncolls, be->rank == 0))
				return 2;
			break;
		case 'd':
			t = BT_NTYPES;
			for (int k = 0; k < BT_NTYPES; k++)
				if (!strcmp(optarg, tnames[k]))
					t = (enum btype)k;
			if (t == BT_NTYPES) {
				if (be->rank == 0) {
					fprintf(stderr, "devcoll-perf: unknown type '%s'\n", optarg);
					usage();
				}
				return 2;
			}
			break;
		case 'w': warm = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 't': min_ms = atoi(optarg); break;
		case 'c': checkit = atoi(optarg); break;
		case 'm': machine = 1; break;
		default: if (be->rank == 0) usage(); return 2;
		}
	}
	if (!ncolls)
		colls[ncolls++] = B_ALLREDUCE;
	if (factor < 1.01)
		factor = 2;
	int n = be->size, r = be->rank;
	size_t es = tsizes[t], maxcount = maxb / es + 1;
	size_t buflen = maxcount * es * (size_t)n + 64;
	char *send = calloc(1, buflen), *recv = calloc(1, buflen);
	long total_wrong = 0;

	if (!send || !recv) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	if (be->buffers && be->buffers(send, recv, buflen))
		return 1;
	for (int ci = 0; ci < ncolls; ci++) {
		enum bcoll c = (enum bcoll)colls[ci];
		double bw_factor = c == B_ALLREDUCE ? 2.0 * (n - 1) / n :
				   c == B_BROADCAST || c == B_REDUCE || c == B_SENDRECV ? 1 :
				   (double)(n - 1) / n;

		if (r == 0 && !machine) {
			printf("# devcoll-perf: %s, backend %s, %d ranks\n", cnames[c], be->name, n);
			printf("#%11s %12s %8s %6s %6s %10s %8s %8s %6s %10s %8s %8s %6s\n", "size", "count",
			       "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
			       "busbw", "#wrong");
			printf("#%11s %12s %8s %6s %6s %10s %8s %8s %6s %10s %8s %8s %6s\n", "(B)",
			       "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
			       "(GB/s)", "");
		}
		for (size_t bytes = minb; bytes <= maxb;
		     bytes = (size_t)((double)bytes * factor) > bytes ? (size_t)((double)bytes * factor) : bytes + 1) {
			/* size: as nccl-tests, the whole buffer (all ranks' blocks for the
			 * gather/scatter kinds); count: per-rank block there */
			bool blocks = c == B_ALLGATHER || c == B_REDUCE_SCATTER || c == B_ALLTOALL ||
				      c == B_GATHER || c == B_SCATTER;
			size_t count = bytes / es / (blocks ? (size_t)n : 1);
			size_t size = count * es * (blocks ? (size_t)n : 1);
			double tm[2] = { 0, 0 };
			long wrong[2] = { 0, 0 };
			bool unsupported = false;

			if (!count)
				continue;
			for (int inplace = 0; inplace < 2; inplace++) {
				size_t in_elems = c == B_REDUCE_SCATTER || c == B_ALLTOALL || c == B_SCATTER ?
						  count * (size_t)n : count;
				char *sb = send, *rb = recv;
				int ret = 0;

				if (inplace && c != B_ALLREDUCE && c != B_BROADCAST && c != B_REDUCE) {
					tm[1] = -1;	/* in place only where it is the same buffer */
					continue;
				}
				if (inplace)
					rb = sb;
				for (int w = 0; w < warm && !ret; w++)
					ret = be->coll(c, sb, rb, count, t, root);
				if (ret == -ENOTSUP) {
					unsupported = true;
					break;
				}
				tm[inplace] = timed(be, c, sb, rb, count, t, root, iters, &ret);
				/* too short to trust (one preemption would show):
				 * again with as many iterations as fill -t */
				if (!ret && tm[inplace] * iters * 1e3 < min_ms) {
					double want = min_ms / (tm[inplace] * 1e3 + 1e-6);
					int more = want > 100000 ? 100000 : (int)want;

					if (more > iters)
						tm[inplace] = timed(be, c, sb, rb, count, t, root, more, &ret);
				}
				/* the checked run */
				if (checkit && !ret) {
					for (size_t i = 0; i < in_elems; i++)
						put(t, sb, i, inval(t, c == B_BROADCAST ? (r == root ? r : -99) : r, i));
					if (c == B_BROADCAST && r != root)
						for (size_t i = 0; i < count; i++)
							put(t, sb, i, -1);
					/* what the timed runs left there must not pass */
					if (rb != sb)
						memset(rb, 0, count * es * (size_t)n);
					if (be->to_device)
						ret = be->to_device();
					if (!ret)
						ret = be->coll(c, sb, rb, count, t, root);
					if (!ret && be->to_host)
						ret = be->to_host();
					wrong[inplace] = be->sum(ret ? (long)count : check(be, c, t, rb, count, root));
				}
				if (ret) {
					fprintf(stderr, "rank %d: %s failed (%d)\n", r, cnames[c], ret);
					return 1;
				}
				total_wrong += wrong[inplace];
			}
			if (unsupported) {
				if (r == 0 && machine)
					printf("R %s %zu unsupported\n", cnames[c], size);
				continue;
			}
			if (r == 0) {
				double us0 = tm[0] * 1e6, alg0 = (double)size / tm[0] / 1e9;

				if (machine) {
					printf("R %s %zu %zu %.3f %.4f %.4f %ld\n", cnames[c], size, count, us0,
					       alg0, alg0 * bw_factor, wrong[0]);
				} else {
					printf(" %11zu %12zu %8s %6s %6d %10.1f %8.3f %8.3f %6ld", size, count,
					       tnames[t], c == B_ALLREDUCE || c == B_REDUCE || c == B_REDUCE_SCATTER ?
					       "sum" : "none", c == B_BROADCAST || c == B_REDUCE || c == B_GATHER ||
					       c == B_SCATTER ? root : -1,
					       us0, alg0, alg0 * bw_factor, wrong[0]);
					if (tm[1] > 0) {
						double alg1 = (double)size / tm[1] / 1e9;

						printf(" %10.1f %8.3f %8.3f %6ld\n", tm[1] * 1e6, alg1,
						       alg1 * bw_factor, wrong[1]);
					} else {
						printf(" %10s %8s %8s %6s\n", "-", "-", "-", "-");
					}
				}
				fflush(stdout);
			}
			if (bytes == maxb)
				break;
		}
	}
	if (r == 0 && !machine)
		printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
	free(send);
	free(recv);
	return total_wrong ? 3 : 0;
}
