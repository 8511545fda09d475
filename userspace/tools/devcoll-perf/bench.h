/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The measurement loop of devcoll-perf, shared by its three backends
 * (libdevcoll, Open MPI, Gloo): each supplies these calls. */
#ifndef DEVCOLL_BENCH_H
#define DEVCOLL_BENCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum bcoll {
	B_ALLREDUCE, B_ALLGATHER, B_REDUCE_SCATTER, B_ALLTOALL, B_BROADCAST, B_REDUCE, B_GATHER,
	B_SCATTER, B_SENDRECV, B_NCOLL
};
enum btype { BT_FLOAT, BT_DOUBLE, BT_INT32, BT_HALF, BT_BF16, BT_NTYPES };
/* half and bfloat16: 16-bit floats (IEEE binary16, bfloat16) */

struct backend {
	const char *name;
	int rank, size;
	/* 0 on success; -ENOTSUP when the backend lacks the collective. For
	 * allgather/reduce_scatter/alltoall/gather/scatter, @count is per rank;
	 * sendrecv sends @count to rank + 1 and receives from rank - 1.
	 * send == recv: in place. */
	int (*coll)(enum bcoll c, const void *send, void *recv, size_t count, enum btype t, int root);
	int (*barrier)(void);
	double (*max)(double v);	/* across ranks */
	long (*sum)(long v);
	/* Optional, for buffers elsewhere than the host ones (devcoll-perf
	 * --gpu): told the host buffers of @len bytes each once, then
	 * asked to copy them there before the checked run and back after. */
	int (*buffers)(char *send, char *recv, size_t len);
	int (*to_device)(void);
	int (*to_host)(void);
};

/* Parses the options, runs the sweep, prints on rank 0; returns the exit status. */
int bench_main(struct backend *be, int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
