// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The public collective and point-to-point calls: each describes its
 * operation (struct op) and runs it blocking or queues it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define OP(...) (struct op){ __VA_ARGS__ }

DEVCOLL_EXPORT int devcoll_allreduce(devcoll_comm *c, const void *s, void *r, size_t n,
				     enum devcoll_dtype t, enum devcoll_op op)
{
	return dc_blocking(c, &OP(.kind = K_ALLREDUCE, .send = s, .recv = r, .count = n, .type = t, .rop = op));
}

DEVCOLL_EXPORT int devcoll_iallreduce(devcoll_comm *c, const void *s, void *r, size_t n,
				      enum devcoll_dtype t, enum devcoll_op op, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_ALLREDUCE, .send = s, .recv = r, .count = n, .type = t, .rop = op), q);
}

DEVCOLL_EXPORT int devcoll_reduce(devcoll_comm *c, const void *s, void *r, size_t n,
				  enum devcoll_dtype t, enum devcoll_op op, int root)
{
	return dc_blocking(c, &OP(.kind = K_REDUCE, .send = s, .recv = r, .count = n, .type = t, .rop = op,
			       .root = root));
}

DEVCOLL_EXPORT int devcoll_ireduce(devcoll_comm *c, const void *s, void *r, size_t n,
				   enum devcoll_dtype t, enum devcoll_op op, int root, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_REDUCE, .send = s, .recv = r, .count = n, .type = t, .rop = op,
			   .root = root), q);
}

DEVCOLL_EXPORT int devcoll_broadcast(devcoll_comm *c, void *b, size_t n, enum devcoll_dtype t, int root)
{
	return dc_blocking(c, &OP(.kind = K_BCAST, .send = b, .recv = b, .count = n, .type = t, .root = root));
}

DEVCOLL_EXPORT int devcoll_ibroadcast(devcoll_comm *c, void *b, size_t n, enum devcoll_dtype t,
				      int root, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_BCAST, .send = b, .recv = b, .count = n, .type = t, .root = root), q);
}

DEVCOLL_EXPORT int devcoll_allgather(devcoll_comm *c, const void *s, void *r, size_t n,
				     enum devcoll_dtype t)
{
	return dc_blocking(c, &OP(.kind = K_ALLGATHER, .send = s, .recv = r, .count = n, .type = t));
}

DEVCOLL_EXPORT int devcoll_iallgather(devcoll_comm *c, const void *s, void *r, size_t n,
				      enum devcoll_dtype t, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_ALLGATHER, .send = s, .recv = r, .count = n, .type = t), q);
}

/*
 * The v-collectives' own arguments, on top of check(): the count and
 * displacement arrays are there and this rank's block agrees with itself.
 * Allgatherv's header count is the total, the same on every rank;
 * alltoallv's differs per rank, so its sizes are checked per message.
 */
static int check_v(devcoll_comm *c, struct op *o, size_t sendcount)
{
	const char *name = o->kind == K_ALLGATHERV ? "allgatherv" : "alltoallv";

	if (!c)
		return dc_fail(-EINVAL, "no communicator");
	if (!o->counts || !o->displs || (o->kind == K_ALLTOALLV && (!o->scounts || !o->sdispls)))
		return dc_fail(-EINVAL, "%s: no counts or displacements", name);
	if (o->kind == K_ALLTOALLV) {
		if (o->scounts[c->rank] != o->counts[c->rank])
			return dc_fail(-EINVAL, "alltoallv: rank %d sends itself %zu elements but "
				       "expects %zu", c->rank, o->scounts[c->rank], o->counts[c->rank]);
		o->count = 0;
		return 0;
	}
	if (sendcount != o->counts[c->rank])
		return dc_fail(-EINVAL, "allgatherv: sendcount %zu but counts[%d] = %zu", sendcount,
			       c->rank, o->counts[c->rank]);
	o->count = 0;
	for (int i = 0; i < c->size; i++)
		o->count += o->counts[i];
	return 0;
}

DEVCOLL_EXPORT int devcoll_allgatherv(devcoll_comm *c, const void *s, size_t sn, void *r,
				      const size_t *counts, const size_t *displs, enum devcoll_dtype t)
{
	struct op o = OP(.kind = K_ALLGATHERV, .send = s, .recv = r, .type = t, .counts = counts,
			 .displs = displs);
	int ret = check_v(c, &o, sn);

	return ret ? ret : dc_blocking(c, &o);
}

/* A queued v-collective: checked, its arrays copied into the op. */
static int post_v(devcoll_comm *c, struct op *o, size_t sendcount, devcoll_req **q)
{
	const size_t *arrs[4] = { o->counts, o->displs, o->scounts, o->sdispls };
	int narr = o->kind == K_ALLTOALLV ? 4 : 2, ret;
	size_t n;

	if (!q)
		return dc_fail(-EINVAL, "no request pointer");
	*q = NULL;
	ret = check_v(c, o, sendcount);
	if (ret)
		return ret;
	n = (size_t)c->size;
	o->v = malloc((size_t)narr * n * sizeof(size_t));
	if (!o->v)
		return dc_fail(-ENOMEM, "out of memory");
	for (int i = 0; i < narr; i++)
		memcpy(o->v + (size_t)i * n, arrs[i], n * sizeof(size_t));
	o->counts = o->v;
	o->displs = o->v + n;
	if (narr == 4) {
		o->scounts = o->v + 2 * n;
		o->sdispls = o->v + 3 * n;
	}
	ret = dc_post(c, o, q);
	if (ret)
		free(o->v);
	return ret;
}

DEVCOLL_EXPORT int devcoll_iallgatherv(devcoll_comm *c, const void *s, size_t sn, void *r,
				       const size_t *counts, const size_t *displs,
				       enum devcoll_dtype t, devcoll_req **q)
{
	return post_v(c, &OP(.kind = K_ALLGATHERV, .send = s, .recv = r, .type = t, .counts = counts,
			     .displs = displs), sn, q);
}

DEVCOLL_EXPORT int devcoll_ialltoallv(devcoll_comm *c, const void *s, const size_t *sc,
				      const size_t *sd, void *r, const size_t *rc, const size_t *rd,
				      enum devcoll_dtype t, devcoll_req **q)
{
	return post_v(c, &OP(.kind = K_ALLTOALLV, .send = s, .recv = r, .type = t, .scounts = sc,
			     .sdispls = sd, .counts = rc, .displs = rd), 0, q);
}

DEVCOLL_EXPORT int devcoll_igather(devcoll_comm *c, const void *s, void *r, size_t n,
				   enum devcoll_dtype t, int root, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_GATHER, .send = s, .recv = r, .count = n, .type = t, .root = root), q);
}

DEVCOLL_EXPORT int devcoll_iscatter(devcoll_comm *c, const void *s, void *r, size_t n,
				    enum devcoll_dtype t, int root, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_SCATTER, .send = s, .recv = r, .count = n, .type = t, .root = root), q);
}

DEVCOLL_EXPORT int devcoll_reduce_scatter(devcoll_comm *c, const void *s, void *r, size_t n,
					  enum devcoll_dtype t, enum devcoll_op op)
{
	return dc_blocking(c, &OP(.kind = K_RSCATTER, .send = s, .recv = r, .count = n, .type = t, .rop = op));
}

DEVCOLL_EXPORT int devcoll_ireduce_scatter(devcoll_comm *c, const void *s, void *r, size_t n,
					   enum devcoll_dtype t, enum devcoll_op op, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_RSCATTER, .send = s, .recv = r, .count = n, .type = t, .rop = op), q);
}

DEVCOLL_EXPORT int devcoll_alltoall(devcoll_comm *c, const void *s, void *r, size_t n,
				    enum devcoll_dtype t)
{
	return dc_blocking(c, &OP(.kind = K_ALLTOALL, .send = s, .recv = r, .count = n, .type = t));
}

DEVCOLL_EXPORT int devcoll_ialltoall(devcoll_comm *c, const void *s, void *r, size_t n,
				     enum devcoll_dtype t, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_ALLTOALL, .send = s, .recv = r, .count = n, .type = t), q);
}

DEVCOLL_EXPORT int devcoll_alltoallv(devcoll_comm *c, const void *s, const size_t *sc,
				     const size_t *sd, void *r, const size_t *rc, const size_t *rd,
				     enum devcoll_dtype t)
{
	struct op o = OP(.kind = K_ALLTOALLV, .send = s, .recv = r, .type = t, .scounts = sc,
			 .sdispls = sd, .counts = rc, .displs = rd);
	int ret = check_v(c, &o, 0);

	return ret ? ret : dc_blocking(c, &o);
}

DEVCOLL_EXPORT int devcoll_gather(devcoll_comm *c, const void *s, void *r, size_t n,
				  enum devcoll_dtype t, int root)
{
	return dc_blocking(c, &OP(.kind = K_GATHER, .send = s, .recv = r, .count = n, .type = t, .root = root));
}

DEVCOLL_EXPORT int devcoll_scatter(devcoll_comm *c, const void *s, void *r, size_t n,
				   enum devcoll_dtype t, int root)
{
	return dc_blocking(c, &OP(.kind = K_SCATTER, .send = s, .recv = r, .count = n, .type = t, .root = root));
}

DEVCOLL_EXPORT int devcoll_barrier(devcoll_comm *c)
{
	return dc_blocking(c, &OP(.kind = K_BARRIER, .type = DEVCOLL_UINT8));
}

DEVCOLL_EXPORT int devcoll_ibarrier(devcoll_comm *c, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_BARRIER, .type = DEVCOLL_UINT8), q);
}

DEVCOLL_EXPORT int devcoll_send(devcoll_comm *c, const void *b, size_t n, enum devcoll_dtype t,
				int peer, uint32_t tag)
{
	return dc_blocking(c, &OP(.kind = K_SEND, .send = b, .count = n, .type = t, .root = peer, .tag = tag));
}

DEVCOLL_EXPORT int devcoll_recv(devcoll_comm *c, void *b, size_t n, enum devcoll_dtype t, int peer,
				uint32_t tag)
{
	return dc_blocking(c, &OP(.kind = K_RECV, .recv = b, .count = n, .type = t, .root = peer, .tag = tag));
}

DEVCOLL_EXPORT int devcoll_isend(devcoll_comm *c, const void *b, size_t n, enum devcoll_dtype t,
				 int peer, uint32_t tag, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_SEND, .send = b, .count = n, .type = t, .root = peer, .tag = tag), q);
}

DEVCOLL_EXPORT int devcoll_irecv(devcoll_comm *c, void *b, size_t n, enum devcoll_dtype t, int peer,
				 uint32_t tag, devcoll_req **q)
{
	return dc_post(c, &OP(.kind = K_RECV, .recv = b, .count = n, .type = t, .root = peer, .tag = tag), q);
}

/* split: allgather of raw bytes over the parent */
int dc_allgather_raw(devcoll_comm *c, const void *send, void *recv, size_t bytes, int kind)
{
	struct op o = { .kind = K_ALLGATHER, .send = send, .recv = recv, .count = bytes,
			.type = DEVCOLL_UINT8 };

	(void)kind;
	return dc_blocking(c, &o);
}
