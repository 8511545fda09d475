// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Requests: argument checks, the queue of non-blocking operations and the
 * progress thread that runs it in order, blocking calls, test and wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "internal.h"

int dc_op_check(devcoll_comm *c, const struct op *o)
{
	if (!c)
		return dc_fail(-EINVAL, "no communicator");
	if (c->err)
		return dc_fail(c->err, "%s", c->errmsg);
	if ((unsigned int)o->type >= DEVCOLL_NTYPES)
		return dc_fail(-EINVAL, "unknown type %d", o->type);
	if ((unsigned int)o->rop >= DEVCOLL_NOPS)
		return dc_fail(-EINVAL, "unknown op %d", o->rop);
	if ((o->kind == K_REDUCE || o->kind == K_BCAST || o->kind == K_GATHER ||
	     o->kind == K_SCATTER || o->kind == K_SEND || o->kind == K_RECV) &&
	    (o->root < 0 || o->root >= c->size))
		return dc_fail(-EINVAL, "rank %d is not in the communicator (size %d)", o->root, c->size);
	if ((o->kind == K_SEND || o->kind == K_RECV) && o->root == c->rank)
		return dc_fail(-EINVAL, "send/recv: to or from itself");
	if (o->count > (1ull << 40))
		return dc_fail(-EINVAL, "count %zu is too large", o->count);
	return 0;
}


/*
 * After an operation: wakes whoever waits for the communicator to be free,
 * for a request or to run the queue. Nobody, mostly: a blocking collective
 * with nothing queued. Then the progress thread sleeps on, rather than
 * waking on the peer's CPU for nothing after every operation (it took the
 * 8-byte allreduce from 4 to between 8 and 16 us once the thread existed).
 * c->mtx held.
 */
static void wake(devcoll_comm *c)
{
	if (c->qhead || c->waiting)
		pthread_cond_broadcast(&c->cv);
}

/* Runs the operation at the head of the queue (the send/recv there as one
 * batch); c->mtx held, c->busy clear. */
static void run_head(devcoll_comm *c)
{
	devcoll_req *q = c->qhead;

	c->busy = true;
	if (q->op->kind == K_SEND || q->op->kind == K_RECV) {
		dc_p2p_batch(c);
	} else {
		c->qhead = q->next;
		if (!c->qhead)
			c->qtail = NULL;
		pthread_mutex_unlock(&c->mtx);
		int st = dc_exec_op(c, q->op);

		pthread_mutex_lock(&c->mtx);
		q->status = st;
		q->done = true;
	}
	c->busy = false;
	wake(c);
}

static void *progress_thread(void *arg)
{
	devcoll_comm *c = arg;

	pthread_mutex_lock(&c->mtx);
	for (;;) {
		while (!c->stop && (!c->qhead || c->busy))
			pthread_cond_wait(&c->cv, &c->mtx);
		if (!c->qhead)
			break;
		run_head(c);
	}
	pthread_mutex_unlock(&c->mtx);
	return NULL;
}

int dc_blocking(devcoll_comm *c, struct op *o)
{
	int ret = dc_op_check(c, o);

	if (ret)
		return ret;
	pthread_mutex_lock(&c->mtx);
	/* a send/recv behind queued ones joins them on the progress thread:
	 * waiting for the queue first could wait for an irecv it matches */
	if ((o->kind == K_SEND || o->kind == K_RECV) && (c->qhead || c->busy)) {
		devcoll_req *q;

		pthread_mutex_unlock(&c->mtx);
		ret = dc_post(c, o, &q);
		return ret ? ret : devcoll_wait(q);
	}
	c->waiting++;
	while (c->qhead || c->busy)
		pthread_cond_wait(&c->cv, &c->mtx);
	c->waiting--;
	c->busy = true;
	pthread_mutex_unlock(&c->mtx);
	ret = c->cuda ? dc_cuda_stage(c, o) : 0;
	if (!ret)
		ret = dc_exec_op(c, o);
	ret = dc_cuda_unstage(o, ret);
	pthread_mutex_lock(&c->mtx);
	c->busy = false;
	wake(c);
	pthread_mutex_unlock(&c->mtx);
	return ret;
}

int dc_post(devcoll_comm *c, const struct op *o, devcoll_req **out)
{
	devcoll_req *q;
	struct op *copy;
	int ret;

	if (!out)
		return dc_fail(-EINVAL, "no request pointer");
	*out = NULL;
	ret = dc_op_check(c, o);
	if (ret)
		return ret;
	q = calloc(1, sizeof(*q));
	copy = malloc(sizeof(*copy));
	if (!q || !copy) {
		free(q);
		free(copy);
		return dc_fail(-ENOMEM, "out of memory");
	}
	*copy = *o;
	/* the GPU's bytes are copied now, as the caller had them */
	ret = c->cuda ? dc_cuda_stage(c, copy) : 0;
	if (ret) {
		dc_cuda_unstage(copy, ret);
		free(q);
		free(copy);
		return ret;
	}
	q->op = copy;
	q->comm = c;
	pthread_mutex_lock(&c->mtx);
	if (!c->thread_started) {
		if (pthread_create(&c->thread, NULL, progress_thread, c)) {
			pthread_mutex_unlock(&c->mtx);
			dc_cuda_unstage(copy, -EAGAIN);
			free(q);
			free(copy);
			return dc_fail(-EAGAIN, "cannot start the progress thread");
		}
		c->thread_started = true;
	}
	if (c->qtail)
		c->qtail->next = q;
	else
		c->qhead = q;
	c->qtail = q;
	bool running = c->busy;

	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mtx);
	/* wakes a send/recv batch (the only thing running that could take
	 * this in) sleeping in epoll_wait (edge-triggered: every write is an
	 * event, the counter is never read) */
	if (running && c->wakefd >= 0 && (o->kind == K_SEND || o->kind == K_RECV)) {
		uint64_t one = 1;

		if (write(c->wakefd, &one, sizeof(one)) < 0) {
			/* cannot fail short of counter overflow */
		}
	}
	*out = q;
	return 0;
}

DEVCOLL_EXPORT int devcoll_test(devcoll_req *q, int *status)
{
	int done;

	pthread_mutex_lock(&q->comm->mtx);
	done = q->done;
	pthread_mutex_unlock(&q->comm->mtx);
	/* done means the received bytes are where the caller looks */
	if (done && q->op->stage)
		q->status = dc_cuda_unstage(q->op, q->status);
	if (done && status)
		*status = q->status;
	return done;
}

DEVCOLL_EXPORT int devcoll_wait(devcoll_req *q)
{
	devcoll_comm *c;
	int st;

	if (!q)
		return dc_fail(-EINVAL, "no request");
	c = q->comm;
	pthread_mutex_lock(&c->mtx);
	/* the queue not taken up yet runs here: waking the progress thread
	 * and then this one would cost tens of microseconds each */
	while (!q->done) {
		if (c->qhead && !c->busy) {
			run_head(c);
		} else {
			c->waiting++;
			pthread_cond_wait(&c->cv, &c->mtx);
			c->waiting--;
		}
	}
	st = q->status;
	pthread_mutex_unlock(&c->mtx);
	if (q->op->stage)
		st = dc_cuda_unstage(q->op, st);
	if (st && c->err)
		dc_fail(st, "%s", c->errmsg);
	free(q->op->v);
	free(q->op);
	free(q);
	return st;
}
