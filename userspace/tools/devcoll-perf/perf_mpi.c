// SPDX-License-Identifier: LGPL-2.1-or-later
/* devcoll-perf's Open MPI backend (run by devcoll-perf --compare through
 * mpirun with the TCP BTL). */
#include <errno.h>
#include <mpi.h>
#include "bench.h"

/* MPI has no 16-bit float: they move as 16-bit integers, and reduce not */
static MPI_Datatype mt(enum btype t)
{
	return t == BT_FLOAT ? MPI_FLOAT : t == BT_DOUBLE ? MPI_DOUBLE : t == BT_INT32 ? MPI_INT
	       : MPI_UINT16_T;
}

static int coll(enum bcoll c, const void *s, void *r, size_t n, enum btype t, int root)
{
	int cnt = (int)n, me;
	const void *in = s == r ? MPI_IN_PLACE : s;

	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if ((t == BT_HALF || t == BT_BF16) &&
	    (c == B_ALLREDUCE || c == B_REDUCE || c == B_REDUCE_SCATTER))
		return -ENOTSUP;
	switch (c) {
	case B_ALLREDUCE: return MPI_Allreduce(in, r, cnt, mt(t), MPI_SUM, MPI_COMM_WORLD);
	case B_REDUCE:
		return MPI_Reduce(s == r && me == root ? MPI_IN_PLACE : s, r, cnt, mt(t), MPI_SUM, root,
				  MPI_COMM_WORLD);
	case B_ALLGATHER: return MPI_Allgather(s, cnt, mt(t), r, cnt, mt(t), MPI_COMM_WORLD);
	case B_REDUCE_SCATTER:
		return MPI_Reduce_scatter_block(s, r, cnt, mt(t), MPI_SUM, MPI_COMM_WORLD);
	case B_ALLTOALL: return MPI_Alltoall(s, cnt, mt(t), r, cnt, mt(t), MPI_COMM_WORLD);
	case B_BROADCAST:
		if (s != r && me == root)
			MPI_Sendrecv(s, cnt, mt(t), 0, 0, r, cnt, mt(t), 0, 0, MPI_COMM_SELF, MPI_STATUS_IGNORE);
		return MPI_Bcast(r, cnt, mt(t), root, MPI_COMM_WORLD);
	case B_GATHER: return MPI_Gather(s, cnt, mt(t), r, cnt, mt(t), root, MPI_COMM_WORLD);
	case B_SCATTER: return MPI_Scatter(s, cnt, mt(t), r, cnt, mt(t), root, MPI_COMM_WORLD);
	case B_SENDRECV: {
		int np;

		MPI_Comm_size(MPI_COMM_WORLD, &np);
		return MPI_Sendrecv(s, cnt, mt(t), (me + 1) % np, 0, r, cnt, mt(t), (me + np - 1) % np,
				    0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	default: return -ENOTSUP;
	}
}

static int barrier(void)
{
	return MPI_Barrier(MPI_COMM_WORLD);
}

static double dmax(double v)
{
	MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return v;
}

static long lsum(long v)
{
	MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	return v;
}

int main(int argc, char **argv)
{
	struct backend be = { .name = "ompi", .coll = coll, .barrier = barrier, .max = dmax, .sum = lsum };
	int ret;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &be.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &be.size);
	ret = bench_main(&be, argc, argv);
	MPI_Finalize();
	return ret;
}
