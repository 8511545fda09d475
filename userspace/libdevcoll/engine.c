// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The transfer engine.
 *
 * Every pair of ranks has nconns TCP connections (rank i connects to every
 * j < i). A message is cut into chunks; each chunk travels with a header
 * (struct wire_hdr) on whichever of the peer's connections is free, so a
 * slow connection takes fewer chunks. The receiver places chunks by their
 * offset, and checks each header against the collective it is running: a
 * different collective, type, op, count or size is an error (-EPROTO), a
 * header for a later message waits on its connection. One thread drives
 * all the sockets (non-blocking, edge-triggered epoll), reducing each chunk
 * as it lands while the others are still in flight.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include "internal.h"

int64_t dc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------ the engine */

struct rstate {
	uint8_t *done;		/* per chunk */
	size_t nchunks, got;
};

/*
 * The chunk of a message that goes whole from one rank to another: nothing
 * is reduced as its chunks land or passed on chunk by chunk, so chunks
 * four times DEVCOLL_CHUNK, for fewer calls and headers per byte (1 MiB
 * chunks made 1 to 16 MiB broadcasts and scatters 10 to 18 % faster). Both
 * ends of such a message use it: dc_sendrecv() and the send/recv engine.
 */
size_t dc_msg_chunk(const devcoll_comm *c)
{
	/* within DEVCOLL_CHUNK's own limit, for the header's 32-bit length */
	return c->chunk <= (1u << 28) ? 4 * c->chunk : c->chunk;
}

size_t dc_nchunks(size_t len, size_t chunk)
{
	return len ? (len + chunk - 1) / chunk : 1;
}

size_t dc_chunk_len(size_t len, size_t chunk, size_t j)
{
	size_t off = j * chunk;

	return len - off < chunk ? len - off : chunk;
}

/*
 * A send to @k's peer broke: the peer may have failed and left its reason
 * (K_ABORT) behind the chunks it was sending. They are skipped (this rank
 * fails either way) to read it, for at most 200 ms.
 * Negative when the communicator failed on what came.
 */
static int peer_reason(devcoll_comm *c, struct conn *k)
{
	int64_t end = dc_now_ms() + 200;
	char sink[4096];
	int dummy = 0, n;

	for (;;) {
		if (k->rhdr_valid) {	/* a chunk's header: skip the chunk too */
			k->rhdr_valid = false;
			k->rinpay = true;
			k->rpay_len = k->rhdr.len;
			k->rpay_got = 0;
		}
		while (k->rinpay && k->rpay_got < k->rpay_len) {
			size_t want = k->rpay_len - k->rpay_got < sizeof(sink) ?
				      k->rpay_len - k->rpay_got : sizeof(sink);
			size_t got = dc_conn_read_for(c, k, sink, want, end);

			k->rpay_got += got;
			if (got < want)
				return 0;
		}
		k->rinpay = false;
		n = dc_conn_hdr(c, k, &dummy);
		if (n < 0)
			return n;
		if (!n) {
			struct pollfd p = { .fd = k->fd, .events = POLLIN };

			if (k->reof || dc_now_ms() >= end)
				return 0;
			poll(&p, 1, 10);
		}
	}
}

/* Sends what the connection has in flight; 1 when it made progress. */
int dc_conn_send(devcoll_comm *c, struct conn *k, int *err)
{
	int progress = 0;

	while (k->sbusy) {
		struct iovec iov[2];
		int n = 0;
		ssize_t w;

		if (k->shdr_done < sizeof(k->shdr)) {
			iov[n].iov_base = (char *)&k->shdr + k->shdr_done;
			iov[n++].iov_len = sizeof(k->shdr) - k->shdr_done;
		}
		if (k->spay_len > k->spay_done) {
			iov[n].iov_base = (char *)k->spay + k->spay_done;
			iov[n++].iov_len = k->spay_len - k->spay_done;
		}
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };

		w = sendmsg(k->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			int e = errno;

			if (e == EAGAIN || e == EINTR)
				return progress;
			/* a peer that failed left its reason before closing */
			if ((e == EPIPE || e == ECONNRESET) && peer_reason(c, k) < 0) {
				*err = c->err;
				return 0;
			}
			*err = dc_comm_fail(c, e == EPIPE || e == ECONNRESET ? -ECONNRESET : -e,
					    "sending to rank %d: %s", k->peer, dc_io_error(e));
			return 0;
		}
		progress = 1;
		size_t h = sizeof(k->shdr) - k->shdr_done;

		if ((size_t)w >= h) {
			k->shdr_done = sizeof(k->shdr);
			k->spay_done += (size_t)w - h;
		} else {
			k->shdr_done += (size_t)w;
		}
		if (k->shdr_done == sizeof(k->shdr) && k->spay_done == k->spay_len)
			k->sbusy = false;
	}
	return progress;
}

/*
 * A read shorter than STAGE_BELOW (a header, a small payload) takes what the
 * socket has, up to STAGE_BYTES, into the connection's staging buffer and is
 * served from there, as are the reads after it until the buffer is empty: a
 * header and its payload, or a run of small messages, cost one recv()
 * instead of one per piece. Longer reads go straight to their destination.
 * Not on devmem communicators, whose payloads must reach dc_dm_recv().
 */
#define STAGE_BYTES 16384
#define STAGE_BELOW 4096

ssize_t dc_conn_recv(devcoll_comm *c, struct conn *k, void *dst, size_t len)
{
	ssize_t n;

	if (k->stage_off == k->stage_len && len < STAGE_BELOW && c->rxmode != DEVCOLL_RX_DEVMEM &&
	    (k->stage || (k->stage = malloc(STAGE_BYTES)))) {
		n = recv(k->fd, k->stage, STAGE_BYTES, MSG_DONTWAIT);
		if (n < 0)
			return errno == EINTR ? -EAGAIN : -errno;
		k->stage_off = 0;
		k->stage_len = (size_t)n;
		if (!n)
			return 0;
	}
	if (k->stage_off < k->stage_len) {
		n = (ssize_t)(len < k->stage_len - k->stage_off ? len : k->stage_len - k->stage_off);
		memcpy(dst, k->stage + k->stage_off, (size_t)n);
		k->stage_off += (size_t)n;
		return n;
	}
	if (k->drx)
		return dc_dm_recv(c, k, dst, NULL, len, NULL, 0);
	n = recv(k->fd, dst, len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	return n;
}

int dc_seq_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0 ? -1 : a != b;
}

static const char *const knames[] = {
	"?", "allreduce", "reduce", "broadcast", "allgather", "allgatherv", "reduce_scatter",
	"alltoall", "alltoallv", "gather", "scatter", "barrier", "split", "send", "recv",
};

const char *dc_kname(unsigned int k)
{
	return k < sizeof(knames) / sizeof(knames[0]) ? knames[k] : "?";
}

/* Reads the connection's next header into k->rhdr: 1 when one is parsed
 * (it stays until taken), 0 when blocked or at a clean end of stream
 * (k->reof), negative on error. Sets *@progress when bytes came in. */
int dc_conn_hdr(devcoll_comm *c, struct conn *k, int *progress)
{
	while (!k->rhdr_valid) {
		ssize_t n = dc_conn_recv(c, k, (char *)&k->rhdr + k->rhdr_got,
					 sizeof(k->rhdr) - k->rhdr_got);

		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return dc_comm_fail(c, n == -EFAULT ? -EFAULT : -ECONNRESET,
					    "receiving from rank %d: %s", k->peer, dc_io_error((int)-n));
		if (n == 0) {
			/* fine between chunks when the peer is done with this
			 * connection; an error mid-header */
			if (k->rhdr_got)
				return dc_comm_fail(c, -ECONNRESET, "rank %d closed the connection "
						    "mid-message", k->peer);
			k->reof = true;
			return 0;
		}
		*progress = 1;
		k->rhdr_got += (size_t)n;
		if (k->rhdr_got < sizeof(k->rhdr))
			continue;
		k->rhdr_got = 0;
		const char *why;

		if (dc_wire_hdr_check(&k->rhdr, &why))
			return dc_comm_fail(c, -EPROTO, "rank %d sent %s", k->peer, why);
		k->rhdr_valid = true;
		if (k->rhdr.kind == K_ABORT)
			return dc_recv_abort(c, k);
	}
	return 1;
}

/* Receives on one connection; 1 on progress, 0 when blocked or the next
 * header belongs to a later message, negative on error. */
static int conn_recv_run(devcoll_comm *c, struct conn *k, struct xfer *x, struct rstate *rs,
			 size_t *left)
{
	int progress = 0;
	ssize_t n;

	for (;;) {
		if (!k->rinpay) {
			if (!*left || k->reof)
				return progress;
			n = dc_conn_hdr(c, k, &progress);
			if (n <= 0)
				return n < 0 ? (int)n : progress;
			const struct wire_hdr *h = &k->rhdr, *t = &x->tmpl;
			bool p2p_h = h->kind == K_SEND, p2p_t = t->kind == K_SEND;

			if (p2p_h != p2p_t)
				return progress;	/* the other space: for later */
			int cs = dc_seq_cmp(h->seq, t->seq);

			if (cs > 0 || (cs == 0 && h->step >= x->tmpl.step + (uint32_t)x->nst))
				return progress;	/* a later message: wait */
			if (cs < 0 || h->step < x->tmpl.step)
				return dc_comm_fail(c, -EPROTO, "rank %d sent %s #%u message %u, "
						    "expected %s #%u", k->peer, dc_kname(h->kind), h->seq,
						    h->step, dc_kname(t->kind), t->seq);
			if (h->kind != t->kind || h->op != t->op || h->dtype != t->dtype ||
			    h->count != t->count || h->tag != t->tag)
				return dc_comm_fail(c, -EPROTO, "mismatched collective #%u with rank %d: "
						    "it runs %s(count %llu, %s, %s, tag %u), this rank "
						    "%s(count %llu, %s, %s, tag %u)", t->seq, k->peer,
						    dc_kname(h->kind), (unsigned long long)h->count,
						    devcoll_dtype_name(h->dtype), devcoll_op_name(h->op),
						    h->tag, dc_kname(t->kind), (unsigned long long)t->count,
						    devcoll_dtype_name(t->dtype), devcoll_op_name(t->op),
						    t->tag);
			int s = (int)(h->step - x->tmpl.step);
			struct step *st = &x->st[s];
			size_t j = h->off / x->chunk;

			if (!st->rptr || h->total != st->rlen)
				return dc_comm_fail(c, -EPROTO, "mismatched %s #%u: rank %d sends %llu "
						    "bytes, this rank expects %zu", dc_kname(t->kind), t->seq,
						    k->peer, (unsigned long long)h->total,
						    st->rptr ? st->rlen : 0);
			if (h->off % x->chunk || j >= rs[s].nchunks || rs[s].done[j] ||
			    h->len != (st->rlen ? dc_chunk_len(st->rlen, x->chunk, j) : 0))
				return dc_comm_fail(c, -EPROTO, "bad chunk from rank %d", k->peer);
			k->rhdr_valid = false;
			k->rinpay = true;
			k->rstep = s;
			k->rchunk = j;
			k->rpay_len = h->len;
			k->rpay_got = 0;
			/* a reduction lands in the connection's cache-sized slot
			 * and is reduced from there as soon as the chunk is in;
			 * devmem reduces straight from the fragments */
			k->rdst = x->red && st->tmp ? x->slots + (size_t)(k - &c->conns[x->rpeer * c->nconns]) * x->chunk
						    : st->rptr + h->off;
		}
		struct step *st = &x->st[k->rstep];
		bool direct_red = k->drx && x->red && st->tmp;
		/* the reduction's other operand: this rank's data */
		const char *mine = st->init ? st->init : st->rptr;

		if (k->rpay_got < k->rpay_len) {
			if (direct_red) {	/* devmem: reduce from the fragments in place */
				size_t at = k->rchunk * x->chunk + k->rpay_got;

				n = dc_dm_recv(c, k, st->rptr + at, mine + at, k->rpay_len - k->rpay_got,
					       x->red, x->esize);
			} else {
				n = dc_conn_recv(c, k, k->rdst + k->rpay_got, k->rpay_len - k->rpay_got);
			}
			if (n == -EAGAIN)
				return progress;
			if (n < 0)
				return dc_comm_fail(c, n == -EFAULT ? -EFAULT : -ECONNRESET,
						    "receiving from rank %d: %s", k->peer,
						    dc_io_error((int)-n));
			if (n == 0)
				return dc_comm_fail(c, -ECONNRESET, "rank %d closed the connection during "
						    "%s #%u: it died, left, or failed (its own error says "
						    "why)", k->peer, dc_kname(x->tmpl.kind), x->tmpl.seq);
			progress = 1;
			k->rpay_got += (size_t)n;
			if (k->rpay_got < k->rpay_len)
				continue;
		}
		if (x->red && st->tmp && !direct_red) {
			size_t off = k->rchunk * x->chunk;

			x->red(st->rptr + off, mine + off, k->rdst, k->rpay_len / x->esize);
		}
		rs[k->rstep].done[k->rchunk] = 1;
		rs[k->rstep].got++;
		(*left)--;
		k->rinpay = false;
		progress = 1;
	}
}

/*
 * Whether to poll again rather than sleep: for c->spin_us from the first
 * call after progress (*@until: 0 then). The next bytes are usually
 * microseconds away, and a wake-up from epoll_wait costs tens of them, more
 * than a small message and about a tenth of a large one's time. The poll
 * yields the CPU: a peer rank woken onto this CPU (TCP wakes the reader on
 * the writer's CPU) runs now instead of after the spin.
 */
static bool spin(const devcoll_comm *c, int64_t *until)
{
	int64_t t;

	if (!c->spin_us)
		return false;
	t = now_us();
	if (!*until)
		*until = t + c->spin_us;
	if (t >= *until)
		return false;
	sched_yield();
	return true;
}

/*
 * Waits for events of the communicator's sockets: polls for them (yielding
 * between polls, see spin()) while c->spin_us lasts, then sleeps at most
 * @timeout_ms. epoll_wait() learns of new bytes without taking the
 * sockets' locks, as a recv() that finds none would: a reader holding the
 * lock makes the writer's softirq queue the segments to the socket's
 * backlog, which the reader then processes itself. epoll_wait()'s result.
 */
int dc_wait_events(devcoll_comm *c, struct epoll_event *evs, int max, int64_t *spin_until,
		   int timeout_ms)
{
	int n;

	while ((n = epoll_wait(c->epfd, evs, max, 0)) == 0 && spin(c, spin_until))
		;
	return n ? n : epoll_wait(c->epfd, evs, max, timeout_ms);
}

/* One transfer's progress: chunks received per step, and the next to send. */
struct run {
	struct rstate rs_stack[8], *rs;
	uint8_t done_stack[64], *done;
	size_t ss, sj;		/* the step and chunk to send next */
	size_t recv_left;	/* chunks still to arrive */
};

static void run_free(struct run *r, struct xfer *x)
{
	if (r->rs != r->rs_stack)
		free(r->rs);
	if (r->done != r->done_stack)
		free(r->done);
	free(x->slots);
	x->slots = NULL;
}

/* Counts the chunks to receive and allocates their flags and, when chunks
 * are reduced from a temporary, a slot per connection. */
static int run_init(devcoll_comm *c, struct xfer *x, struct run *r)
{
	size_t total = 0;
	bool need_slots = false;

	memset(r, 0, sizeof(*r));
	r->rs = x->nst <= 8 ? r->rs_stack : calloc((size_t)x->nst, sizeof(*r->rs));
	r->done = r->done_stack;
	x->slots = NULL;
	if (!r->rs)
		return dc_fail(-ENOMEM, "out of memory");
	for (int s = 0; s < x->nst; s++) {
		need_slots |= x->red && x->st[s].tmp && x->st[s].rptr;
		r->rs[s].nchunks = x->st[s].rptr ? dc_nchunks(x->st[s].rlen, x->chunk) : 0;
		r->rs[s].got = 0;
		total += r->rs[s].nchunks;
	}
	r->recv_left = total;
	if (need_slots)
		x->slots = malloc(c->nconns * x->chunk);
	if (total > sizeof(r->done_stack))
		r->done = calloc(total, 1);
	if ((need_slots && !x->slots) || !r->done) {
		if (!r->done)
			r->done = r->done_stack;
		run_free(r, x);
		return dc_fail(-ENOMEM, "out of memory");
	}
	for (int s = 0, o = 0; s < x->nst; s++) {
		r->rs[s].done = r->done + o;
		o += (int)r->rs[s].nchunks;
	}
	/* the first step with something to send */
	while ((int)r->ss < x->nst && !x->st[r->ss].sptr)
		r->ss++;
	return 0;
}

/* Gives free connection @k the next chunk that may go; false if none. */
static bool next_chunk(struct xfer *x, struct run *r, struct conn *k)
{
	struct step *st;

	if ((int)r->ss >= x->nst)
		return false;
	st = &x->st[r->ss];
	if (st->dep && r->ss > 0 && !r->rs[r->ss - 1].done[r->sj])
		return false;
	k->shdr = x->tmpl;
	k->shdr.step = x->tmpl.step + (uint32_t)r->ss;
	k->shdr.total = st->slen;
	k->shdr.off = r->sj * x->chunk;
	k->shdr.len = (uint32_t)(st->slen ? dc_chunk_len(st->slen, x->chunk, r->sj) : 0);
	k->shdr_done = 0;
	k->spay = st->sptr + k->shdr.off;
	k->spay_len = k->shdr.len;
	k->spay_done = 0;
	k->sbusy = true;
	if (++r->sj >= dc_nchunks(st->slen, x->chunk)) {
		r->sj = 0;
		do
			r->ss++;
		while ((int)r->ss < x->nst && !x->st[r->ss].sptr);
	}
	return true;
}

/* Hands the next ready chunks to free connections and sends what they can
 * take; *@sending: a chunk is still under way. Progress made, or <0. */
static int send_some(devcoll_comm *c, struct xfer *x, struct run *r, struct conn *sconns,
		     bool *sending)
{
	int progress = 0, err = 0;

	*sending = false;
	for (unsigned int i = 0; sconns && i < c->nconns; i++) {
		struct conn *k = &sconns[i];

		while (k->sbusy || next_chunk(x, r, k)) {
			progress |= dc_conn_send(c, k, &err);
			if (err)
				return err;
			if (k->sbusy)
				break;
		}
		*sending |= k->sbusy;
	}
	return progress;
}

/* Reads what the connections from the receive peer have. Progress, or <0
 * (also when every connection ended with chunks still to come). */
static int recv_some(devcoll_comm *c, struct xfer *x, struct run *r, struct conn *rconns)
{
	unsigned int eofs = 0;
	int progress = 0, ret;

	for (unsigned int i = 0; rconns && r->recv_left && i < c->nconns; i++) {
		ret = conn_recv_run(c, &rconns[i], x, r->rs, &r->recv_left);
		if (ret < 0)
			return ret;
		progress |= ret;
		eofs += rconns[i].reof;
	}
	if (r->recv_left && eofs == c->nconns)
		return dc_comm_fail(c, -ECONNRESET, "rank %d closed its connections during %s #%u: "
				    "it died, left, or failed (its own error says why)", x->rpeer,
				    dc_kname(x->tmpl.kind), x->tmpl.seq);
	return progress;
}

/* Nothing moved: waits for the sockets (and rdpmd's) until @deadline. */
static int wait_some(devcoll_comm *c, struct xfer *x, struct run *r, int64_t deadline,
		     int64_t *spin_until)
{
	struct epoll_event evs[16];
	int64_t left = deadline - dc_now_ms();
	int nev, ret;

	if (left <= 0)
		return dc_comm_fail(c, -ETIMEDOUT, "%s #%u made no progress for %d ms (waiting "
				    "for rank %d%s)", dc_kname(x->tmpl.kind), x->tmpl.seq,
				    c->timeout_ms, r->recv_left ? x->rpeer : x->speer,
				    r->recv_left ? "" : " to take data");
	nev = dc_wait_events(c, evs, 16, spin_until, (int)left);
	if (nev < 0 && errno != EINTR)
		return dc_comm_fail(c, -errno, "epoll_wait: %s", strerror(errno));
	/* rdpmd's socket is read only when it wakes the engine */
	for (int i = 0; i < nev; i++)
		if (evs[i].data.u32 == DC_EPOLL_RDPM && (ret = dc_dm_check(c)))
			return ret;
	return 0;
}

int dc_run(devcoll_comm *c, struct xfer *x)
{
	struct conn *sconns = x->speer >= 0 ? &c->conns[x->speer * c->nconns] : NULL;
	struct conn *rconns = x->rpeer >= 0 ? &c->conns[x->rpeer * c->nconns] : NULL;
	int64_t deadline, spin_until = 0;
	struct run r;
	bool sending;
	int ret, moved;

	if (!x->chunk)
		x->chunk = c->chunk;
	if (c->err)
		return dc_fail(c->err, "%s", c->errmsg);
	ret = run_init(c, x, &r);
	if (ret)
		return ret;
	deadline = dc_now_ms() + c->timeout_ms;
	for (;;) {
		ret = send_some(c, x, &r, sconns, &sending);
		if (ret < 0)
			break;
		moved = ret;
		ret = recv_some(c, x, &r, rconns);
		if (ret < 0)
			break;
		moved |= ret;
		ret = 0;
		if ((int)r.ss >= x->nst && !sending && !r.recv_left)
			break;
		if (moved) {
			deadline = dc_now_ms() + c->timeout_ms;
			spin_until = 0;
			continue;
		}
		ret = wait_some(c, x, &r, deadline, &spin_until);
		if (ret)
			break;
	}
	run_free(&r, x);
	return ret;
}

int dc_sendrecv(devcoll_comm *c, const struct wire_hdr *tmpl, int speer, const void *sbuf,
		size_t slen, int rpeer, void *rbuf, size_t rlen)
{
	struct step st = {
		.sptr = speer >= 0 ? (sbuf ? sbuf : "") : NULL, .slen = slen,
		.rptr = rpeer >= 0 ? (rbuf ? rbuf : (char *)"") : NULL, .rlen = rlen,
	};
	struct xfer x = { .speer = speer, .rpeer = rpeer, .st = &st, .nst = 1, .tmpl = *tmpl,
			  .chunk = dc_msg_chunk(c) };

	return dc_run(c, &x);
}
