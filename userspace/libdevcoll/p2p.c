// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Non-blocking send and receive. The progress thread runs every send/recv
 * at the head of the queue at once, and takes in later ones as they are
 * posted, until a collective is next: run one at a time, an irecv posted
 * before the isend of the same pair on both ranks would wait for itself.
 * Messages of a pair still match in the order they were started: each takes
 * the pair's next sequence number, and a header for a receive not started
 * yet waits on its connection, as with the blocking calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include "internal.h"

struct msg {
	devcoll_req *q;
	bool send, fin;
	int peer;
	char *buf;
	size_t len, nch;
	size_t next;		/* send: the next chunk to hand out */
	size_t done;		/* chunks written out or received */
	uint8_t *got;		/* receive: the chunks in */
	struct wire_hdr t;
};

struct batch {
	struct msg **m;
	int n, cap;
	struct msg **sown, **rown;	/* per connection: whose chunk is in flight */
	size_t chunk;			/* dc_msg_chunk() */
};

static bool is_p2p(const devcoll_req *q)
{
	return q->op->kind == K_SEND || q->op->kind == K_RECV;
}

static int start(devcoll_comm *c, struct batch *b, devcoll_req *q)
{
	const struct op *o = q->op;
	size_t bytes = o->count * devcoll_dtype_size(o->type);
	struct msg *m;

	if (c->err)
		return c->err;
	if (b->n == b->cap) {
		int cap = b->cap ? 2 * b->cap : 16;
		struct msg **p = realloc(b->m, (size_t)cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->m = p;
		b->cap = cap;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->q = q;
	m->send = o->kind == K_SEND;
	m->peer = o->root;
	m->buf = m->send ? (char *)o->send : o->recv;
	if (!m->buf)
		m->buf = (char *)"";	/* count 0: no arithmetic on NULL */
	m->len = bytes;
	m->nch = dc_nchunks(bytes, b->chunk);
	if (!m->send && !(m->got = calloc(m->nch, 1))) {
		free(m);
		return -ENOMEM;
	}
	/* the wire header of the blocking calls: both directions are K_SEND */
	m->t = (struct wire_hdr){
		.magic = WIRE_MAGIC, .kind = K_SEND, .dtype = (uint8_t)o->type, .count = o->count,
		.tag = o->tag, .total = bytes,
		.seq = m->send ? c->p2p_sseq[m->peer]++ : c->p2p_rseq[m->peer]++,
	};
	b->m[b->n++] = m;
	return 0;
}

/* the oldest send to @peer with chunks left to hand out */
static struct msg *next_send(struct batch *b, int peer)
{
	for (int i = 0; i < b->n; i++)
		if (b->m[i]->send && b->m[i]->peer == peer && b->m[i]->next < b->m[i]->nch)
			return b->m[i];
	return NULL;
}

static struct msg *find_recv(struct batch *b, int peer, uint32_t seq, bool any)
{
	for (int i = 0; i < b->n; i++) {
		struct msg *m = b->m[i];

		if (!m->send && !m->fin && m->peer == peer && (any || m->t.seq == seq))
			return m;
	}
	return NULL;
}

static int send_conn(devcoll_comm *c, struct batch *b, int ki, int *progress)
{
	struct conn *k = &c->conns[ki];
	int err = 0;

	for (;;) {
		if (!k->sbusy) {
			struct msg *m = next_send(b, k->peer);

			if (!m)
				return 0;
			k->shdr = m->t;
			k->shdr.off = m->next * b->chunk;
			k->shdr.len = (uint32_t)(m->len ? dc_chunk_len(m->len, b->chunk, m->next) : 0);
			k->shdr_done = 0;
			k->spay = m->buf + k->shdr.off;
			k->spay_len = k->shdr.len;
			k->spay_done = 0;
			k->sbusy = true;
			m->next++;
			b->sown[ki] = m;
		}
		*progress |= dc_conn_send(c, k, &err);
		if (err)
			return err;
		if (k->sbusy)
			return 0;
		struct msg *m = b->sown[ki];

		b->sown[ki] = NULL;
		if (++m->done == m->nch)
			m->fin = true;
	}
}

static int recv_conn(devcoll_comm *c, struct batch *b, int ki, int *progress)
{
	struct conn *k = &c->conns[ki];

	for (;;) {
		if (!k->rinpay) {
			if (!find_recv(b, k->peer, 0, true))
				return 0;
			int n = dc_conn_hdr(c, k, progress);

			if (n <= 0)
				return n;
			const struct wire_hdr *h = &k->rhdr;

			/* a collective's header, or one for a receive not
			 * started yet: it waits for its turn */
			if (h->kind != K_SEND || dc_seq_cmp(h->seq, c->p2p_rseq[k->peer]) >= 0)
				return 0;
			struct msg *m = find_recv(b, k->peer, h->seq, false);

			if (!m)
				return dc_comm_fail(c, -EPROTO, "rank %d sent a chunk of send #%u, "
						    "which was received already", k->peer, h->seq);
			if (h->dtype != m->t.dtype || h->count != m->t.count || h->tag != m->t.tag)
				return dc_comm_fail(c, -EPROTO, "mismatched send/recv #%u with rank %d: "
						    "it sends (count %llu, %s, tag %u), this rank "
						    "receives (count %llu, %s, tag %u)", h->seq, k->peer,
						    (unsigned long long)h->count,
						    devcoll_dtype_name(h->dtype), h->tag,
						    (unsigned long long)m->t.count,
						    devcoll_dtype_name(m->t.dtype), m->t.tag);
			size_t j = h->off / b->chunk;

			if (h->total != m->len || h->off % b->chunk || j >= m->nch || m->got[j] ||
			    h->len != (m->len ? dc_chunk_len(m->len, b->chunk, j) : 0))
				return dc_comm_fail(c, -EPROTO, "bad chunk from rank %d", k->peer);
			k->rhdr_valid = false;
			k->rinpay = true;
			k->rchunk = j;
			k->rpay_len = h->len;
			k->rpay_got = 0;
			k->rdst = m->buf + h->off;
			b->rown[ki] = m;
		}
		if (k->rpay_got < k->rpay_len) {
			ssize_t n = dc_conn_recv(c, k, k->rdst + k->rpay_got, k->rpay_len - k->rpay_got);

			if (n == -EAGAIN)
				return 0;
			if (n < 0)
				return dc_comm_fail(c, n == -EFAULT ? -EFAULT : -ECONNRESET,
						    "receiving from rank %d: %s", k->peer,
						    dc_io_error((int)-n));
			if (n == 0)
				return dc_comm_fail(c, -ECONNRESET, "rank %d closed the connection during "
						    "a recv: it died, left, or failed (its own error says why)",
						    k->peer);
			*progress = 1;
			k->rpay_got += (size_t)n;
			if (k->rpay_got < k->rpay_len)
				continue;
		}
		struct msg *m = b->rown[ki];

		m->got[k->rchunk] = 1;
		if (++m->done == m->nch)
			m->fin = true;
		k->rinpay = false;
		b->rown[ki] = NULL;
		*progress = 1;
	}
}

/* One pass over every connection; a receive whose peer closed all its
 * connections fails at once rather than at the timeout. */
static int pass(devcoll_comm *c, struct batch *b, int *progress)
{
	for (int p = 0; p < c->size; p++) {
		unsigned int eofs = 0;
		int ret;

		if (p == c->rank)
			continue;
		for (unsigned int i = 0; i < c->nconns; i++) {
			int ki = p * (int)c->nconns + (int)i;

			ret = send_conn(c, b, ki, progress);
			if (!ret)
				ret = recv_conn(c, b, ki, progress);
			if (ret)
				return ret;
			eofs += c->conns[ki].reof;
		}
		if (eofs == c->nconns && find_recv(b, p, 0, true))
			return dc_comm_fail(c, -ECONNRESET, "rank %d closed its connections (died or "
					    "left) during a recv", p);
	}
	return 0;
}

/* Completes the finished messages (all of them with @err); c->mtx held.
 * Returns how many. */
static int reap(struct batch *b, int err)
{
	int j = 0, n = b->n;

	for (int i = 0; i < b->n; i++) {
		struct msg *m = b->m[i];

		if (!m->fin && !err) {
			b->m[j++] = m;
			continue;
		}
		m->q->status = err;
		m->q->done = true;
		free(m->got);
		free(m);
	}
	b->n = j;
	return n - j;
}

void dc_p2p_batch(devcoll_comm *c)
{
	size_t nk = (size_t)c->size * c->nconns;
	struct batch b = { .sown = calloc(2 * nk, sizeof(*b.sown)), .chunk = dc_msg_chunk(c) };
	int64_t deadline = dc_now_ms() + c->timeout_ms, spin_until = 0;
	int ret = b.sown ? 0 : -ENOMEM;

	if (!ret && c->dm)	/* as exec_op: an rdpmd event since the last operation */
		ret = dc_dm_check(c);
	b.rown = b.sown + nk;
	for (;;) {
		bool woke = false;	/* a request completed: its waiter is told */

		while (c->qhead && is_p2p(c->qhead)) {
			devcoll_req *q = c->qhead;
			int st;

			c->qhead = q->next;
			if (!c->qhead)
				c->qtail = NULL;
			st = ret ? ret : start(c, &b, q);
			if (st) {
				q->status = st;
				q->done = true;
				woke = true;
			}
			deadline = dc_now_ms() + c->timeout_ms;
		}
		if (reap(&b, ret) || woke)
			pthread_cond_broadcast(&c->cv);
		if (!b.n)
			break;
		pthread_mutex_unlock(&c->mtx);
		int progress = 0;

		ret = pass(c, &b, &progress);
		if (!ret && progress) {
			deadline = dc_now_ms() + c->timeout_ms;
			spin_until = 0;
		} else if (!ret) {
			/* sockets, or the eventfd a new post writes to */
			struct epoll_event evs[16];
			int64_t left = deadline - dc_now_ms();
			int n = 0;

			if (left <= 0)
				ret = dc_comm_fail(c, -ETIMEDOUT, "send/recv made no progress for %d ms",
						   c->timeout_ms);
			else if ((n = dc_wait_events(c, evs, 16, &spin_until, (int)left)) < 0 &&
				 errno != EINTR)
				ret = dc_comm_fail(c, -errno, "epoll_wait: %s", strerror(errno));
			for (int i = 0; !ret && i < n; i++)
				if (evs[i].data.u32 == DC_EPOLL_RDPM)
					ret = dc_dm_check(c);
		}
		pthread_mutex_lock(&c->mtx);
	}
	free(b.sown);
	free(b.m);
}
