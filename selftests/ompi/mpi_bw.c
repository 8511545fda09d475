// SPDX-License-Identifier: GPL-2.0
/*
 * OSU-style point-to-point figures between ranks 0 and 1: bandwidth (a
 * window of 64 non-blocking sends, then a 1-byte ack) and latency (half a
 * ping-pong round trip), for sizes 1 B to MAX. Rank 0 prints one line per
 * size: "SIZE BW_MBPS LAT_US". The receiver checks the first and last byte
 * of every message, so a run that moved garbage says so.
 *
 *   mpirun -np 2 mpi_bw [MAX_BYTES] [SECONDS_PER_SIZE]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

static int rank, bad;

static void check(const unsigned char *b, size_t n, unsigned char v)
{
	if (n && (b[0] != v || b[n - 1] != v))
		bad++;
}

/* Iterations that take about secs at the rate of a first short trial. */
static int iterations(double trial, int trial_iters, double secs)
{
	double per = trial / trial_iters;
	int n = per > 0 ? (int)(secs / per) : 1000;

	return n < 2 ? 2 : n > 100000 ? 100000 : n;
}

static double bw_round(unsigned char *buf, size_t n, int iters)
{
	MPI_Request req[WINDOW];
	double t0;
	char ack = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (rank == 0) {
			for (int w = 0; w < WINDOW; w++)
				MPI_Isend(buf, (int)n, MPI_BYTE, 1, 10, MPI_COMM_WORLD, &req[w]);
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_BYTE, 1, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			for (int w = 0; w < WINDOW; w++)
				MPI_Irecv(buf + (size_t)w * n, (int)n, MPI_BYTE, 0, 10, MPI_COMM_WORLD,
					  &req[w]);
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			for (int w = 0; w < WINDOW; w++)
				check(buf + (size_t)w * n, n, (unsigned char)(n & 0xff));
			MPI_Send(&ack, 1, MPI_BYTE, 0, 11, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

static double lat_round(unsigned char *buf, size_t n, int iters)
{
	double t0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(buf, (int)n, MPI_BYTE, 1, 20, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)n, MPI_BYTE, 1, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(buf, (int)n, MPI_BYTE, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)n, MPI_BYTE, 0, 21, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
	size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : 4 << 20;
	double secs = argc > 2 ? atof(argv[2]) : 0.5;
	unsigned char *sbuf, *rbuf;
	int total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	sbuf = malloc(max);
	rbuf = malloc(max * WINDOW);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0)
		printf("# size bw_MBps lat_us\n");
	for (size_t n = 1; n <= max; n *= 4) {
		double t, bw, lat;
		int it;

		memset(sbuf, (int)(n & 0xff), n);
		t = bw_round(rank == 0 ? sbuf : rbuf, n, 2);
		MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		it = iterations(t, 2, secs);
		t = bw_round(rank == 0 ? sbuf : rbuf, n, it);
		bw = (double)n * WINDOW * it / t / 1e6;
		t = lat_round(rank == 0 ? sbuf : rbuf, n, 2);
		MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		it = iterations(t, 2, secs / 2);
		t = lat_round(rank == 0 ? sbuf : rbuf, n, it);
		lat = t / it / 2 * 1e6;
		if (rank == 0)
			printf("%zu %.1f %.2f\n", n, bw, lat);
		fflush(stdout);
	}
	MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0 && total)
		printf("FAIL: %d messages arrived with wrong bytes\n", total);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return total != 0;
}
