// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Connections and the transfer engine.
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
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

static __thread char errbuf[512];

int dc_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return err;
}

DEVCOLL_EXPORT const char *devcoll_last_error(void)
{
	return errbuf;
}

/* The connection's send side is inside a chunk: nothing else may go out. */
static bool mid_chunk(const struct conn *k)
{
	return k->sbusy && (k->shdr_done || k->spay_done);
}

/* Reads @len bytes of @k into @buf, waiting until @end (ms) at most: the
 * bytes read, fewer at the deadline, on an error or at the end of stream. */
static size_t conn_read_for(devcoll_comm *c, struct conn *k, char *buf, size_t len, int64_t end)
{
	size_t got = 0;

	while (got < len && dc_now_ms() < end) {
		ssize_t n = dc_conn_recv(c, k, buf + got, len - got);
		struct pollfd p = { .fd = k->fd, .events = POLLIN };

		if (n > 0)
			got += (size_t)n;
		else if (n == -EAGAIN)
			poll(&p, 1, 10);
		else
			break;
	}
	return got;
}

/*
 * A failing rank tells its peers why before it shuts its connections down:
 * a K_ABORT header and the message on every connection. A chunk under way is
 * finished first, for at most 200 ms in all (the peer may not be reading);
 * a peer whose chunk could not be finished sees the connection close. A
 * rank failing on such a message passes the first rank's message on, so
 * every rank can say what went wrong where, not only that a peer left.
 */
static void send_abort(devcoll_comm *c, int err, int origin, const char *msg)
{
	struct wire_hdr h = {
		.magic = WIRE_MAGIC, .kind = K_ABORT, .count = (uint64_t)-(int64_t)err,
		.tag = (uint32_t)origin, .len = (uint32_t)strlen(msg),
	};
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)msg, h.len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	int64_t end = dc_now_ms() + 200;

	for (int i = 0; i < c->size * (int)c->nconns; i++) {
		struct conn *k = &c->conns[i];
		int e = 0;

		if (k->fd < 0)
			continue;
		while (mid_chunk(k) && !e && dc_now_ms() < end) {
			struct pollfd p = { .fd = k->fd, .events = POLLOUT };

			if (!dc_conn_send(c, k, &e) && !e)
				poll(&p, 1, 10);
		}
		if (!mid_chunk(k))
			sendmsg(k->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

/* Breaks the communicator (@origin: the rank whose failure this is). */
static int comm_fail(devcoll_comm *c, int err, int origin, const char *msg)
{
	if (!c->err) {
		if (origin == c->rank)
			snprintf(c->errmsg, sizeof(c->errmsg), "rank %d: %s", c->rank, msg);
		else
			snprintf(c->errmsg, sizeof(c->errmsg), "rank %d: rank %d failed: %s", c->rank,
				 origin, msg);
		c->err = err;
		send_abort(c, err, origin, msg);
		for (int i = 0; i < c->size * (int)c->nconns; i++)
			if (c->conns[i].fd >= 0)
				shutdown(c->conns[i].fd, SHUT_RDWR);
	}
	return dc_fail(c->err, "%s", c->errmsg);
}

/* Breaks the communicator: tells the peers why and shuts every connection
 * down, so that they fail at once instead of at their timeout. */
const char *dc_io_error(int e)
{
	/* what a socket call's EFAULT almost always means here */
	if (e == EFAULT)
		return "Bad address: a buffer the CPU cannot reach (GPU memory is staged only where "
		       "the process had loaded libcuda by devcoll_comm_init(), or with "
		       "DEVCOLL_CUDA=on)";
	return strerror(e);
}

int dc_comm_fail(devcoll_comm *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (!c->err) {
		char msg[400];
		/* a binding rdpmd dropped is the reason for whatever failed
		 * (a receive, a peer's closed connection) */
		int dead = c->dm ? dc_dm_dead(c, msg, sizeof(msg)) : 0;

		if (dead) {
			err = dead;
		} else {
			va_start(ap, fmt);
			vsnprintf(msg, sizeof(msg), fmt, ap);
			va_end(ap);
		}
		return comm_fail(c, err, c->rank, msg);
	}
	return dc_fail(c->err, "%s", c->errmsg);
}

/* A peer's K_ABORT (in k->rhdr): reads its message, fails the same way. */
static int recv_abort(devcoll_comm *c, struct conn *k)
{
	const struct wire_hdr *h = &k->rhdr;
	int err = h->count && h->count < 4096 ? -(int)h->count : -ECONNABORTED;
	int origin = h->tag < (uint32_t)c->size ? (int)h->tag : k->peer;
	char msg[400];
	size_t len = h->len < sizeof(msg) ? h->len : sizeof(msg) - 1, got;

	/* sent in one piece right behind the header: here or about to be */
	got = conn_read_for(c, k, msg, len, dc_now_ms() + 1000);
	k->rhdr_valid = false;
	if (got < len)
		snprintf(msg, sizeof(msg), "its message was cut short");
	else
		msg[got] = 0;
	return comm_fail(c, err, origin, msg);
}

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

int dc_listen(struct sockaddr_storage *sa, socklen_t len, int *out)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return dc_fail(-errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)sa, len) || listen(fd, 1024)) {
		int e = errno;

		close(fd);
		return dc_fail(-e, "listen: %s", strerror(e));
	}
	len = sizeof(*sa);
	getsockname(fd, (struct sockaddr *)sa, &len);
	*out = fd;
	return 0;
}

/* Blocking helpers for set-up, with a deadline. */
int dc_io_all(int fd, void *buf, size_t len, bool wr, int64_t deadline)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
			       : recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return dc_fail(-ECONNRESET, "set-up: the peer closed the connection");
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return dc_fail(-errno, "set-up: %s", strerror(errno));
		struct pollfd p = { .fd = fd, .events = wr ? POLLOUT : POLLIN };
		int64_t left = deadline - dc_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			return dc_fail(-ETIMEDOUT, "set-up: timed out");
	}
	return 0;
}

struct hello {
	uint32_t magic;
	uint32_t from;
	uint32_t idx;
	uint32_t pad;
	uint64_t id;
};

/*
 * TCP_NODELAY; non-blocking; the congestion control: reno unless set.
 * Cubic's HyStart takes a train of ACKs a few microseconds apart, as between
 * ranks of one host or one rack, for a full queue and leaves slow start with
 * a window of a few dozen segments; over veth that made 512 KiB to 8 MiB
 * allreduces 3x slower. BBR, the default of some distributions, paces each
 * connection at its estimate of the path's rate, which halved loopback
 * throughput. See Documentation/devcoll.rst.
 */
static int tune(devcoll_comm *c, int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->tcp_cc[0] &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, c->tcp_cc, (socklen_t)strlen(c->tcp_cc)) &&
	    c->tcp_cc_set)
		return dc_fail(-errno, "DEVCOLL_TCP_CONGESTION=%s: %s (an unprivileged process "
			       "may use those of net.ipv4.tcp_allowed_congestion_control)",
			       c->tcp_cc, strerror(errno));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

/* Connects to the lower ranks and accepts the higher ones on @lfd. */
int dc_mesh(devcoll_comm *c, int lfd, const struct endpoint *eps)
{
	int64_t deadline = dc_now_ms() + c->timeout_ms;
	int need = (c->size - 1 - c->rank) * (int)c->nconns, ret;

	for (int j = 0; j < c->rank; j++) {
		for (unsigned int k = 0; k < c->nconns; k++) {
			struct conn *cn = &c->conns[j * c->nconns + k];
			struct hello h = { WIRE_MAGIC, (uint32_t)c->rank, k, 0, c->id };
			int fd;

			for (;;) {
				fd = socket(eps[j].sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
				if (fd < 0)
					return dc_fail(-errno, "socket: %s", strerror(errno));
				if (!connect(fd, (const struct sockaddr *)&eps[j].sa, eps[j].len))
					break;
				ret = -errno;
				close(fd);
				if (dc_now_ms() > deadline)
					return dc_fail(ret, "connecting to rank %d: %s", j, strerror(-ret));
				usleep(10000);
			}
			cn->fd = fd;
			ret = dc_io_all(fd, &h, sizeof(h), true, deadline);
			if (ret)
				return ret;
		}
	}
	while (need > 0) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int64_t left = deadline - dc_now_ms();
		struct hello h;
		int fd;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return dc_fail(-ETIMEDOUT, "rank %d: timed out waiting for %d connections from "
				       "higher ranks", c->rank, need);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		ret = dc_io_all(fd, &h, sizeof(h), false, deadline);
		if (ret || h.magic != WIRE_MAGIC || h.id != c->id || (int)h.from <= c->rank ||
		    (int)h.from >= c->size || h.idx >= c->nconns ||
		    c->conns[h.from * c->nconns + h.idx].fd >= 0) {
			close(fd);	/* not ours (a stray connection): ignore */
			continue;
		}
		c->conns[h.from * c->nconns + h.idx].fd = fd;
		need--;
	}
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->epfd < 0)
		return dc_fail(-errno, "epoll_create1: %s", strerror(errno));
	c->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wakefd < 0)
		return dc_fail(-errno, "eventfd: %s", strerror(errno));
	struct epoll_event wev = { .events = EPOLLIN | EPOLLET, .data.u32 = UINT32_MAX };

	if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wakefd, &wev))
		return dc_fail(-errno, "epoll_ctl: %s", strerror(errno));
	for (int i = 0; i < c->size * (int)c->nconns; i++) {
		struct conn *cn = &c->conns[i];
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = (uint32_t)i };

		if (cn->fd < 0)
			continue;
		int ret = tune(c, cn->fd);

		if (ret)
			return ret;
		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, cn->fd, &ev))
			return dc_fail(-errno, "epoll_ctl: %s", strerror(errno));
	}
	return 0;
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
			size_t got = conn_read_for(c, k, sink, want, end);

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
		if (k->rhdr.magic != WIRE_MAGIC)
			return dc_comm_fail(c, -EPROTO, "garbage from rank %d", k->peer);
		k->rhdr_valid = true;
		if (k->rhdr.kind == K_ABORT)
			return recv_abort(c, k);
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

int dc_run(devcoll_comm *c, struct xfer *x)
{
	struct conn *sconns = x->speer >= 0 ? &c->conns[x->speer * c->nconns] : NULL;
	struct conn *rconns = x->rpeer >= 0 ? &c->conns[x->rpeer * c->nconns] : NULL;
	struct rstate rs_stack[8], *rs = x->nst <= 8 ? rs_stack : calloc((size_t)x->nst, sizeof(*rs));
	uint8_t done_stack[64], *donebuf = done_stack;
	size_t total_chunks = 0, ss = 0, sj = 0, recv_left = 0;
	int64_t deadline, spin_until = 0;
	int ret = 0;

	if (!x->chunk)
		x->chunk = c->chunk;
	if (c->err)
		return dc_fail(c->err, "%s", c->errmsg);
	if (!rs)
		return dc_fail(-ENOMEM, "out of memory");
	bool need_slots = false;

	for (int s = 0; s < x->nst; s++) {
		need_slots |= x->red && x->st[s].tmp && x->st[s].rptr;
		rs[s].nchunks = x->st[s].rptr ? dc_nchunks(x->st[s].rlen, x->chunk) : 0;
		rs[s].got = 0;
		total_chunks += rs[s].nchunks;
	}
	recv_left = total_chunks;
	x->slots = NULL;
	if (need_slots) {
		x->slots = malloc(c->nconns * x->chunk);
		if (!x->slots) {
			if (rs != rs_stack)
				free(rs);
			return dc_fail(-ENOMEM, "out of memory");
		}
	}
	if (total_chunks > sizeof(done_stack)) {
		donebuf = calloc(total_chunks, 1);
		if (!donebuf) {
			if (rs != rs_stack)
				free(rs);
			free(x->slots);
			return dc_fail(-ENOMEM, "out of memory");
		}
	} else {
		memset(done_stack, 0, sizeof(done_stack));
	}
	for (int s = 0, o = 0; s < x->nst; s++) {
		rs[s].done = donebuf + o;
		o += (int)rs[s].nchunks;
	}
	/* the first step with something to send */
	while ((int)ss < x->nst && !x->st[ss].sptr)
		ss++;
	deadline = dc_now_ms() + c->timeout_ms;
	for (;;) {
		int progress = 0;
		bool sending = false;

		/* sends: hand the next ready chunks to free connections */
		for (unsigned int i = 0; sconns && i < c->nconns; i++) {
			struct conn *k = &sconns[i];

			for (;;) {
				if (!k->sbusy && (int)ss < x->nst) {
					struct step *st = &x->st[ss];

					if (st->dep && ss > 0 && !rs[ss - 1].done[sj])
						break;
					k->shdr = x->tmpl;
					k->shdr.step = x->tmpl.step + (uint32_t)ss;
					k->shdr.total = st->slen;
					k->shdr.off = sj * x->chunk;
					k->shdr.len = (uint32_t)(st->slen ? dc_chunk_len(st->slen, x->chunk, sj) : 0);
					k->shdr_done = 0;
					k->spay = st->sptr + k->shdr.off;
					k->spay_len = k->shdr.len;
					k->spay_done = 0;
					k->sbusy = true;
					if (++sj >= dc_nchunks(st->slen, x->chunk)) {
						sj = 0;
						do
							ss++;
						while ((int)ss < x->nst && !x->st[ss].sptr);
					}
				}
				if (!k->sbusy)
					break;
				progress |= dc_conn_send(c, k, &ret);
				if (ret)
					goto out;
				if (k->sbusy)
					break;
			}
			sending |= k->sbusy;
		}
		/* receives */
		unsigned int eofs = 0;

		for (unsigned int i = 0; rconns && recv_left && i < c->nconns; i++) {
			ret = conn_recv_run(c, &rconns[i], x, rs, &recv_left);
			if (ret < 0)
				goto out;
			progress |= ret;
			ret = 0;
			eofs += rconns[i].reof;
		}
		if (recv_left && eofs == c->nconns) {
			ret = dc_comm_fail(c, -ECONNRESET, "rank %d closed its connections during %s #%u: "
					   "it died, left, or failed (its own error says why)", x->rpeer,
					   dc_kname(x->tmpl.kind), x->tmpl.seq);
			goto out;
		}
		if ((int)ss >= x->nst && !sending && !recv_left)
			break;
		if (progress) {
			deadline = dc_now_ms() + c->timeout_ms;
			spin_until = 0;
			continue;
		}
		struct epoll_event evs[16];
		int64_t left = deadline - dc_now_ms();

		if (left <= 0) {
			ret = dc_comm_fail(c, -ETIMEDOUT, "%s #%u made no progress for %d ms (waiting "
					   "for rank %d%s)", dc_kname(x->tmpl.kind), x->tmpl.seq,
					   c->timeout_ms, recv_left ? x->rpeer : x->speer,
					   recv_left ? "" : " to take data");
			goto out;
		}
		int nev = dc_wait_events(c, evs, 16, &spin_until, (int)left);

		if (nev < 0 && errno != EINTR) {
			ret = dc_comm_fail(c, -errno, "epoll_wait: %s", strerror(errno));
			goto out;
		}
		/* rdpmd's socket is read only when it wakes the engine */
		for (int i = 0; i < nev; i++)
			if (evs[i].data.u32 == DC_EPOLL_RDPM && (ret = dc_dm_check(c)))
				goto out;
	}
out:
	if (rs != rs_stack)
		free(rs);
	if (donebuf != done_stack)
		free(donebuf);
	free(x->slots);
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
