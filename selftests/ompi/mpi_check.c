// SPDX-License-Identifier: GPL-2.0
/*
 * MPI correctness over whichever BTL the run selects: point to point at
 * every size from 0 B to 64 MiB (powers of two and their neighbours), with
 * MPI_ANY_SOURCE and tags received out of order, then collectives; every
 * byte is compared. Prints "ok: N checks" or the first mismatches; the exit
 * status is non-zero on any failure.
 *
 *   mpirun -np N mpi_check [MAX_BYTES]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, failures, checks;

static unsigned char pattern(int src, int tag, size_t i)
{
	return (unsigned char)(src * 131 + tag * 31 + i * 7 + (i >> 12));
}

static void fill(unsigned char *b, size_t n, int src, int tag)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(src, tag, i);
}

static void expect(const unsigned char *b, size_t n, int src, int tag, const char *what)
{
	checks++;
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(src, tag, i)) {
			if (failures++ < 10)
				fprintf(stderr, "rank %d: %s: %zu bytes from %d tag %d: byte %zu is %u, not %u\n",
					rank, what, n, src, tag, i, b[i], pattern(src, tag, i));
			return;
		}
}

/* Ring: each rank sends to rank+1 and receives from rank-1, n bytes. */
static void ring(size_t n, unsigned char *sbuf, unsigned char *rbuf)
{
	int to = (rank + 1) % size, from = (rank + size - 1) % size, tag = (int)(n % 1000);
	MPI_Request r;
	MPI_Status st;
	int count;

	fill(sbuf, n, rank, tag);
	memset(rbuf, 0xee, n);
	MPI_Irecv(rbuf, (int)n, MPI_BYTE, from, tag, MPI_COMM_WORLD, &r);
	MPI_Send(sbuf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD);
	MPI_Wait(&r, &st);
	MPI_Get_count(&st, MPI_BYTE, &count);
	checks++;
	if ((size_t)count != n && failures++ < 10)
		fprintf(stderr, "rank %d: ring %zu: got %d bytes\n", rank, n, count);
	expect(rbuf, n, from, tag, "ring");
}

/* Rank 0 receives 8 messages per peer with MPI_ANY_SOURCE, tags posted in
 * the reverse of the order they are sent. */
static void any_source_reversed(size_t n, unsigned char *sbuf, unsigned char *rbuf)
{
	enum { K = 8 };

	if (rank == 0) {
		for (int p = 1; p < size; p++)
			for (int k = K - 1; k >= 0; k--) {
				MPI_Status st;

				MPI_Recv(rbuf, (int)n, MPI_BYTE, MPI_ANY_SOURCE, 100 + k, MPI_COMM_WORLD, &st);
				expect(rbuf, n, st.MPI_SOURCE, 100 + k, "any-source reversed tags");
			}
	} else {
		MPI_Request r[K];

		for (int k = 0; k < K; k++) {
			unsigned char *b = sbuf + (size_t)k * n;

			fill(b, n, rank, 100 + k);
			MPI_Isend(b, (int)n, MPI_BYTE, 0, 100 + k, MPI_COMM_WORLD, &r[k]);
		}
		MPI_Waitall(K, r, MPI_STATUSES_IGNORE);
	}
}

static void collectives(size_t n)
{
	size_t count = n / sizeof(int32_t);
	int32_t *in = malloc(count * sizeof(*in) + 4), *out = malloc(count * sizeof(*out) * size + 4);

	for (size_t i = 0; i < count; i++)
		in[i] = (int32_t)(rank * 1000 + i % 997);
	MPI_Allreduce(in, out, (int)count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
	checks++;
	for (size_t i = 0; i < count; i++) {
		int32_t want = (int32_t)(1000 * size * (size - 1) / 2 + size * (int32_t)(i % 997));

		if (out[i] != want) {
			if (failures++ < 10)
				fprintf(stderr, "rank %d: allreduce %zu: [%zu] %d, not %d\n", rank, count, i,
					out[i], want);
			break;
		}
	}
	MPI_Bcast(in, (int)count, MPI_INT32_T, size - 1, MPI_COMM_WORLD);
	checks++;
	for (size_t i = 0; i < count; i++)
		if (in[i] != (int32_t)((size - 1) * 1000 + i % 997)) {
			if (failures++ < 10)
				fprintf(stderr, "rank %d: bcast %zu: [%zu] wrong\n", rank, count, i);
			break;
		}
	for (size_t i = 0; i < count; i++)
		in[i] = (int32_t)(rank * 1000 + i % 997);
	MPI_Allgather(in, (int)count, MPI_INT32_T, out, (int)count, MPI_INT32_T, MPI_COMM_WORLD);
	checks++;
	for (int r = 0; r < size; r++)
		for (size_t i = 0; i < count; i++)
			if (out[r * count + i] != (int32_t)(r * 1000 + i % 997)) {
				if (failures++ < 10)
					fprintf(stderr, "rank %d: allgather %zu: rank %d [%zu] wrong\n", rank,
						count, r, i);
				r = size;
				break;
			}
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 64 << 20;
	unsigned char *sbuf, *rbuf;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	sbuf = malloc(max * 8 + 1);
	rbuf = malloc(max + 1);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	ring(0, sbuf, rbuf);
	for (size_t n = 1; n <= max; n *= 2) {
		ring(n, sbuf, rbuf);
		if (n > 1)
			ring(n - 1, sbuf, rbuf);
		if (n + 1 <= max)
			ring(n + 1, sbuf, rbuf);
		if (n <= max / 8 && n <= (4 << 20))
			any_source_reversed(n, sbuf, rbuf);
		if (n >= 4 && n <= (16 << 20))
			collectives(n);
	}
	MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: %d checks on rank 0, %d failures in all, %d ranks, up to %zu bytes\n",
		       total ? "FAIL" : "ok", checks, total, size, max);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return total != 0;
}
