// SPDX-License-Identifier: GPL-2.0
/*
 * MPI_THREAD_MULTIPLE over whichever BTL the run selects: T threads per
 * rank, all at once, each
 *  - exchanging around a ring on a communicator of its own, sizes from 0 B
 *    to MAX (eager, rendezvous and pipelined messages in flight together),
 *  - sending to every other rank and receiving with MPI_ANY_SOURCE on
 *    MPI_COMM_WORLD, which all threads share (the tag names the thread,
 *    round and size, so a peer already at the next size cannot match),
 *  - and reducing on its own communicator.
 * Every byte is compared. Prints "ok: ..." on rank 0 or the first
 * mismatches; the exit status is non-zero on any failure, and when the
 * library does not provide MPI_THREAD_MULTIPLE.
 *
 *   mpirun -np N mpi_threads [THREADS [ROUNDS [MAX_BYTES]]]
 */
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, threads = 4, rounds = 3;
static size_t max = 4 << 20;
static int failures, checks;	/* atomic */

struct worker {
	pthread_t tid;
	int t;
	MPI_Comm comm;
	unsigned char *sbuf, *rbuf;
};

static unsigned char pattern(int src, int t, int tag, size_t i)
{
	return (unsigned char)(src * 131 + t * 71 + tag * 31 + i * 7 + (i >> 12));
}

static void fill(unsigned char *b, size_t n, int src, int t, int tag)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(src, t, tag, i);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) >= 10)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "rank %d: ", rank);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static void expect(const unsigned char *b, size_t n, int count, int src, int t, int tag,
		   const char *what)
{
	__atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);
	if ((size_t)count != n) {
		fail("thread %d: %s: %d bytes from %d, not %zu\n", t, what, count, src, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(src, t, tag, i)) {
			fail("thread %d: %s: %zu bytes from %d tag %d: byte %zu is %u, not %u\n", t,
			     what, n, src, tag, i, b[i], pattern(src, t, tag, i));
			return;
		}
}

static void ring(struct worker *w, size_t n, int tag)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size, count;
	MPI_Request r[2];
	MPI_Status st[2];

	fill(w->sbuf, n, rank, w->t, tag);
	memset(w->rbuf, 0xee, n);
	MPI_Irecv(w->rbuf, (int)n, MPI_BYTE, from, tag, w->comm, &r[0]);
	MPI_Isend(w->sbuf, (int)n, MPI_BYTE, to, tag, w->comm, &r[1]);
	MPI_Waitall(2, r, st);
	MPI_Get_count(&st[0], MPI_BYTE, &count);
	expect(w->rbuf, n, count, from, w->t, tag, "ring");
}

/* Every thread sends to every other rank on the shared MPI_COMM_WORLD and
 * takes its peers' messages with MPI_ANY_SOURCE; the tag tells threads
 * apart, the status the sender. */
static void any_source(struct worker *w, size_t n, int step)
{
	int tag = 1000 + step * 64 + w->t, peers = size - 1, i, count;
	MPI_Request *r = malloc(sizeof(*r) * 2 * peers);
	unsigned char *in = malloc((size_t)peers * n + 1);

	fill(w->sbuf, n, rank, w->t, tag);
	for (i = 0; i < peers; i++)
		MPI_Irecv(in + (size_t)i * n, (int)n, MPI_BYTE, MPI_ANY_SOURCE, tag,
			  MPI_COMM_WORLD, &r[i]);
	for (i = 0; i < peers; i++)
		MPI_Isend(w->sbuf, (int)n, MPI_BYTE, (rank + 1 + i) % size, tag, MPI_COMM_WORLD,
			  &r[peers + i]);
	for (i = 0; i < peers; i++) {
		MPI_Status st;
		int idx;

		MPI_Waitany(peers, r, &idx, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		expect(in + (size_t)idx * n, n, count, st.MPI_SOURCE, w->t, tag, "any-source");
	}
	MPI_Waitall(peers, r + peers, MPI_STATUSES_IGNORE);
	free(in);
	free(r);
}

static void reduce(struct worker *w, size_t n)
{
	size_t count = n / sizeof(int32_t);
	int32_t *in = (int32_t *)w->sbuf, *out = (int32_t *)w->rbuf;

	for (size_t i = 0; i < count; i++)
		in[i] = (int32_t)(rank * 1000 + w->t + i % 997);
	MPI_Allreduce(in, out, (int)count, MPI_INT32_T, MPI_SUM, w->comm);
	__atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < count; i++) {
		int32_t want = (int32_t)(1000 * size * (size - 1) / 2 + size * (w->t + (int32_t)(i % 997)));

		if (out[i] != want) {
			fail("thread %d: allreduce %zu: [%zu] %d, not %d\n", w->t, count, i, out[i], want);
			return;
		}
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;

	for (int r = 0; r < rounds; r++) {
		int step = r * 20;

		ring(w, 0, r);
		for (size_t n = 1; n <= max; n *= 4, step++) {
			ring(w, n, r);
			ring(w, n + 1 <= max ? n + 1 : n, r);
			if (n <= max / size)
				any_source(w, n, step);
			if (n >= 4)
				reduce(w, n);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker *w;
	int provided, total, i;

	if (argc > 1)
		threads = atoi(argv[1]);
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (argc > 3)
		max = strtoull(argv[3], NULL, 0);
	if (threads < 1 || threads > 64 || rounds < 1 || rounds > 20 || max > (1u << 30)) {
		fprintf(stderr, "mpi_threads: 1-64 threads, 1-20 rounds, at most 1 GiB\n");
		return 2;
	}
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (provided != MPI_THREAD_MULTIPLE) {
		if (rank == 0)
			printf("FAIL: MPI_THREAD_MULTIPLE requested, %d provided\n", provided);
		MPI_Finalize();
		return 1;
	}
	w = calloc(threads, sizeof(*w));
	for (i = 0; i < threads; i++) {
		w[i].t = i;
		w[i].sbuf = malloc(max + 2);
		w[i].rbuf = malloc(max + 2);
		if (!w[i].sbuf || !w[i].rbuf)
			MPI_Abort(MPI_COMM_WORLD, 2);
		MPI_Comm_dup(MPI_COMM_WORLD, &w[i].comm);
	}
	for (i = 0; i < threads; i++)
		if (pthread_create(&w[i].tid, NULL, work, &w[i]))
			MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: %d threads, %d rounds, %d checks on rank 0, %d failures in all, %d ranks, "
		       "up to %zu bytes\n", total ? "FAIL" : "ok", threads, rounds, checks, total,
		       size, max);
	for (i = 0; i < threads; i++) {
		MPI_Comm_free(&w[i].comm);
		free(w[i].sbuf);
		free(w[i].rbuf);
	}
	free(w);
	MPI_Finalize();
	return total != 0;
}
