/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libdevcoll: collectives over TCP sockets (several connections per peer),
 * with an optional devmem receive path through libdevmem.
 *
 * Errors are negative errno values; devcoll_last_error() (per thread) says
 * what failed. Once an operation of a communicator has failed (a dead peer,
 * a mismatched collective, a timeout), the communicator is broken: it shuts
 * its connections down, so that every other rank fails too, and every later
 * operation returns the same error.
 */
#ifndef DEVCOLL_H
#define DEVCOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct devcoll_comm devcoll_comm;
typedef struct devcoll_req devcoll_req;

enum devcoll_dtype {
	DEVCOLL_INT8, DEVCOLL_INT16, DEVCOLL_INT32, DEVCOLL_INT64,
	DEVCOLL_UINT8, DEVCOLL_UINT16, DEVCOLL_UINT32, DEVCOLL_UINT64,
	DEVCOLL_FP16, DEVCOLL_BF16, DEVCOLL_FP32, DEVCOLL_FP64,
	DEVCOLL_NTYPES
};

enum devcoll_op { DEVCOLL_SUM, DEVCOLL_PROD, DEVCOLL_MIN, DEVCOLL_MAX, DEVCOLL_AVG, DEVCOLL_NOPS };

/* Algorithms of allreduce (DEVCOLL_ALGO=ring|rd|hd|tree|auto overrides the
 * choice): ring, recursive doubling, recursive halving-doubling, binomial
 * reduce + broadcast. */
enum devcoll_algo {
	DEVCOLL_ALGO_AUTO, DEVCOLL_ALGO_RING, DEVCOLL_ALGO_RD, DEVCOLL_ALGO_TREE, DEVCOLL_ALGO_HD,
};

/* Receive path of the data connections. */
#define DEVCOLL_RX_PLAIN	0	/* recv() into host memory */
#define DEVCOLL_RX_DEVMEM	1	/* devmem RX (libdevmem) into a bound dma-buf */

struct devcoll_opts {
	int rank;		/* < 0: from the environment or PMIx */
	int size;
	const char *addr;	/* rank 0's rendezvous "host:port" (NULL: DEVCOLL_ADDR) */
	unsigned int nconns;	/* connections per peer; 0: DEVCOLL_NCONNS or 2 */
	int timeout_ms;		/* no progress for this long fails; 0: DEVCOLL_TIMEOUT_MS or 60000 */
	size_t chunk;		/* bytes per scheduled chunk; 0: DEVCOLL_CHUNK or 256 KiB */
	unsigned int rx;	/* DEVCOLL_RX_* (0: DEVCOLL_RX=plain|devmem) */
	const char *bind_addr;	/* local address to listen on (NULL: DEVCOLL_BIND_ADDR or chosen) */
};

/*
 * A communicator of all ranks. @opts may be NULL: then, when the process
 * was started by a PMIx launcher (mpirun, srun; PMIX_RANK in the
 * environment), rank, size and endpoints come from PMIx; otherwise from
 * DEVCOLL_RANK, DEVCOLL_SIZE and DEVCOLL_ADDR.
 */
int devcoll_comm_init(devcoll_comm **out, const struct devcoll_opts *opts);
/* Ranks with the same @color form a communicator, ordered by (@key, rank);
 * DEVCOLL_UNDEFINED gets NULL. Collective over @comm. */
#define DEVCOLL_UNDEFINED (-1)
int devcoll_comm_split(devcoll_comm *comm, int color, int key, devcoll_comm **out);
int devcoll_comm_dup(devcoll_comm *comm, devcoll_comm **out);
void devcoll_comm_destroy(devcoll_comm *comm);
int devcoll_comm_rank(const devcoll_comm *comm);
int devcoll_comm_size(const devcoll_comm *comm);
/* The sticky error of a broken communicator, or 0. */
int devcoll_comm_error(const devcoll_comm *comm);

const char *devcoll_last_error(void);
size_t devcoll_dtype_size(enum devcoll_dtype type);
const char *devcoll_dtype_name(enum devcoll_dtype type);
const char *devcoll_op_name(enum devcoll_op op);

/* Blocking collectives. @count is in elements; send == recv is in place.
 * Any buffer may be CUDA device memory (staged through host memory; see
 * libdevcoll(3), DEVCOLL_CUDA). */
int devcoll_allreduce(devcoll_comm *c, const void *send, void *recv, size_t count,
		      enum devcoll_dtype type, enum devcoll_op op);
int devcoll_reduce(devcoll_comm *c, const void *send, void *recv, size_t count,
		   enum devcoll_dtype type, enum devcoll_op op, int root);
int devcoll_broadcast(devcoll_comm *c, void *buf, size_t count, enum devcoll_dtype type, int root);
/* @count elements from each rank, in rank order into @recv. */
int devcoll_allgather(devcoll_comm *c, const void *send, void *recv, size_t count,
		      enum devcoll_dtype type);
int devcoll_allgatherv(devcoll_comm *c, const void *send, size_t sendcount, void *recv,
		       const size_t *counts, const size_t *displs, enum devcoll_dtype type);
/* @send holds size * @recvcount elements; rank r gets block r reduced. */
int devcoll_reduce_scatter(devcoll_comm *c, const void *send, void *recv, size_t recvcount,
			   enum devcoll_dtype type, enum devcoll_op op);
int devcoll_alltoall(devcoll_comm *c, const void *send, void *recv, size_t count,
		     enum devcoll_dtype type);
int devcoll_alltoallv(devcoll_comm *c, const void *send, const size_t *sendcounts,
		      const size_t *sdispls, void *recv, const size_t *recvcounts,
		      const size_t *rdispls, enum devcoll_dtype type);
int devcoll_gather(devcoll_comm *c, const void *send, void *recv, size_t count,
		   enum devcoll_dtype type, int root);
int devcoll_scatter(devcoll_comm *c, const void *send, void *recv, size_t count,
		    enum devcoll_dtype type, int root);
int devcoll_barrier(devcoll_comm *c);
/* Point to point, ordered with the collectives between the two ranks. */
int devcoll_send(devcoll_comm *c, const void *buf, size_t count, enum devcoll_dtype type,
		 int peer, uint32_t tag);
int devcoll_recv(devcoll_comm *c, void *buf, size_t count, enum devcoll_dtype type,
		 int peer, uint32_t tag);

/*
 * Non-blocking forms: start the operation on the communicator's progress
 * thread and return a request. Operations of a communicator run in the
 * order they were started (blocking ones included). The buffers belong to
 * the library until the request completes; the count arrays are copied.
 * Exception: isend/irecv (and a blocking send/recv started while requests
 * are pending) run together with the send/recv operations next to them in
 * the queue, so that both ranks of a pair may post irecv before isend; a
 * collective started after them waits for them. Messages between two ranks
 * match in the order they were started, tags and sizes must agree.
 */
int devcoll_iallreduce(devcoll_comm *c, const void *send, void *recv, size_t count,
		       enum devcoll_dtype type, enum devcoll_op op, devcoll_req **req);
int devcoll_ireduce(devcoll_comm *c, const void *send, void *recv, size_t count,
		    enum devcoll_dtype type, enum devcoll_op op, int root, devcoll_req **req);
int devcoll_ibroadcast(devcoll_comm *c, void *buf, size_t count, enum devcoll_dtype type,
		       int root, devcoll_req **req);
int devcoll_iallgather(devcoll_comm *c, const void *send, void *recv, size_t count,
		       enum devcoll_dtype type, devcoll_req **req);
int devcoll_ireduce_scatter(devcoll_comm *c, const void *send, void *recv, size_t recvcount,
			    enum devcoll_dtype type, enum devcoll_op op, devcoll_req **req);
int devcoll_ialltoall(devcoll_comm *c, const void *send, void *recv, size_t count,
		      enum devcoll_dtype type, devcoll_req **req);
int devcoll_iallgatherv(devcoll_comm *c, const void *send, size_t sendcount, void *recv,
			const size_t *counts, const size_t *displs, enum devcoll_dtype type,
			devcoll_req **req);
int devcoll_ialltoallv(devcoll_comm *c, const void *send, const size_t *sendcounts,
		       const size_t *sdispls, void *recv, const size_t *recvcounts,
		       const size_t *rdispls, enum devcoll_dtype type, devcoll_req **req);
int devcoll_igather(devcoll_comm *c, const void *send, void *recv, size_t count,
		    enum devcoll_dtype type, int root, devcoll_req **req);
int devcoll_iscatter(devcoll_comm *c, const void *send, void *recv, size_t count,
		     enum devcoll_dtype type, int root, devcoll_req **req);
int devcoll_ibarrier(devcoll_comm *c, devcoll_req **req);
int devcoll_isend(devcoll_comm *c, const void *buf, size_t count, enum devcoll_dtype type,
		  int peer, uint32_t tag, devcoll_req **req);
int devcoll_irecv(devcoll_comm *c, void *buf, size_t count, enum devcoll_dtype type,
		  int peer, uint32_t tag, devcoll_req **req);
/* 1 when done (its result in *@status), 0 when not yet. */
int devcoll_test(devcoll_req *req, int *status);
/* Waits for the request, frees it and returns its result. */
int devcoll_wait(devcoll_req *req);

#ifdef __cplusplus
}
#endif
#endif
