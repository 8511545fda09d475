// SPDX-License-Identifier: GPL-2.0
/*
 * A job that strangers talk to: rank 0 says it is ready (with its pid and
 * jobid) and waits inside MPI, so that its BTL accepts connections, for
 * rank 1's first message; rank 1 sends it once the file GO exists (the
 * hostile peer is done) or after 60 s. Then the two exchange messages of
 * every protocol (eager, pipeline, put) both ways, every byte compared.
 * Prints "ok: N checks" on rank 0; exits non-zero on any failure.
 *
 * With "stall", the network is then meant to die under the job instead:
 * once connections are up both ways, rank 1 says "stalled" and sleeps
 * 60 s outside MPI while rank 0 waits inside MPI for a message that never
 * comes, until its BTL finds the peer gone.
 *
 *   mpirun -np 2 mpi_hostile GO [stall]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned char pattern(int src, size_t n, size_t i)
{
	return (unsigned char)(src * 131 + n * 7 + i * 13 + (i >> 10));
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1, 100, 4096, 65536, 300000, 4 << 20 };
	int rank, size, failures = 0, checks = 0, one = 1;
	unsigned char *buf;
	time_t start = time(NULL);

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2 || argc < 2 || (argc == 3 && strcmp(argv[2], "stall")) || argc > 3) {
		fprintf(stderr, "usage: mpirun -np 2 mpi_hostile GO [stall]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(4 << 20);
	if (rank == 0) {
		MPI_Request req;
		int done = 0;

		printf("ready: pid %d jobid %s\n", (int)getpid(),
		       getenv("OMPI_MCA_ess_base_jobid") ? getenv("OMPI_MCA_ess_base_jobid") : "?");
		fflush(stdout);
		MPI_Irecv(&one, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &req);
		while (!done) {
			MPI_Test(&req, &done, MPI_STATUS_IGNORE);
			usleep(1000);
		}
	} else {
		while (access(argv[1], F_OK) && time(NULL) - start < 60)
			usleep(10000);
		MPI_Send(&one, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
	}
	if (argc == 3) {
		if (rank == 0) {
			MPI_Send(&one, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(&one, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			printf("FAIL: rank 1 answered a message it never sent\n");
		} else {
			MPI_Recv(&one, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			printf("stalled: pid %d\n", (int)getpid());
			fflush(stdout);
			sleep(60);
		}
		MPI_Finalize();
		return 1;
	}
	for (int round = 0; round < 2; round++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t n = sizes[k];
			int src = round == 0 ? 0 : 1;

			if (rank == src) {
				for (size_t i = 0; i < n; i++)
					buf[i] = pattern(src, n, i);
				MPI_Send(buf, (int)n, MPI_BYTE, 1 - src, 1, MPI_COMM_WORLD);
			} else {
				memset(buf, 0, n);
				MPI_Recv(buf, (int)n, MPI_BYTE, src, 1, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				checks++;
				for (size_t i = 0; i < n; i++)
					if (buf[i] != pattern(src, n, i)) {
						fprintf(stderr, "rank %d: %zu bytes from %d: byte %zu "
							"wrong\n", rank, n, src, i);
						failures++;
						break;
					}
			}
		}
	MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: %d checks, %d failures\n", failures ? "FAIL" : "ok", checks, failures);
	free(buf);
	MPI_Finalize();
	return failures != 0;
}
