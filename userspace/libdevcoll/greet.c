// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The set-up handshakes, both sides. The accepting side (rank 0's
 * rendezvous, the mesh's listeners) serves every pending connection at
 * once in one poll loop, each with its own deadline and its partial answer
 * buffered, so that an idle or slow stranger costs a slot for a few seconds
 * and nothing more; whatever fails its check is told so, closed and
 * counted, never fatal. A flood can still push a rank's connection out, or
 * a stalled rank miss its few seconds: the connecting side then starts the
 * handshake over, until the set-up's own deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"
#include "greet.h"

#define GREET_PENDING 64	/* connections answering at once */
#define GREET_ANSWER_MS 5000	/* to answer a challenge */
#define GREET_MIN_AGE_MS 100	/* before a flood may push a connection out */
#define GREET_FD_PAUSE_MS 20	/* no accept after EMFILE, ENFILE */
#define RETRY_FIRST_MS 10	/* the connecting side's backoff: doubling, */
#define RETRY_MAX_MS 200	/* up to this */

static struct dc_greet_stats stats;	/* updated atomically: any thread may greet */

static void count(unsigned int *n)
{
	__atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
}

void dc_greet_stats(struct dc_greet_stats *out)
{
	out->dropped = __atomic_load_n(&stats.dropped, __ATOMIC_RELAXED);
	out->pushed = __atomic_load_n(&stats.pushed, __ATOMIC_RELAXED);
	out->retried = __atomic_load_n(&stats.retried, __ATOMIC_RELAXED);
}

struct pending {
	int fd;
	int64_t born, deadline;
	uint8_t nonce[DC_NONCE_LEN];
	uint8_t *buf;
	size_t got;
};

/* A connection closed unkept, and why. */
static void refuse(struct dc_greeter *g, const char *why)
{
	g->strangers++;
	count(&stats.dropped);
	snprintf(g->last_why, sizeof(g->last_why), "%s", why);
}

static void drop(struct dc_greeter *g, struct pending *p, const char *why)
{
	close(p->fd);
	p->fd = -1;
	refuse(g, why);
}

/* @p makes room for a newer connection: a rank's own may be among them. */
static void push_out(struct dc_greeter *g, struct pending *p, const char *why)
{
	count(&stats.pushed);
	drop(g, p, why);
}

/* A new connection gets its challenge (a fresh socket's buffer takes it). */
static void admit(struct dc_greeter *g, struct pending *p, int fd)
{
	struct dc_challenge ch = { AUTH_MAGIC, g->kind, { 0 } };
	int64_t now = dc_now_ms();

	p->fd = fd;
	p->got = 0;
	p->born = now;
	p->deadline = now + GREET_ANSWER_MS < g->deadline ? now + GREET_ANSWER_MS : g->deadline;
	if (dc_random(p->nonce, sizeof(p->nonce)))
		return drop(g, p, "no random nonce");
	memcpy(ch.nonce, p->nonce, sizeof(ch.nonce));
	if (send(fd, &ch, sizeof(ch), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ch))
		drop(g, p, "the challenge could not be sent");
}

/* Tells @p's peer what became of its answer; whether that went out. */
static bool tell(struct pending *p, uint32_t code)
{
	struct dc_verdict v = { AUTH_MAGIC, code };

	return send(p->fd, &v, sizeof(v), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(v);
}

/* Reads what @p's socket has; judges the answer once complete. */
static void serve(struct dc_greeter *g, struct pending *p, int *kept)
{
	const char *why = "";
	ssize_t n = recv(p->fd, p->buf + p->got, g->msg_len - p->got, MSG_DONTWAIT);
	uint32_t code;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0)
		return drop(g, p, n ? "a connection error" : "closed before answering");
	p->got += (size_t)n;
	if (p->got < g->msg_len)
		return;
	code = g->check(g->arg, p->nonce, p->buf, &why);
	if (code) {
		tell(p, code);
		return drop(g, p, why);
	}
	/* kept only once the peer knows: else it would retry and find it taken */
	if (!tell(p, DC_KEPT))
		return drop(g, p, "gone before its answer was taken");
	g->keep(g->arg, p->buf, p->fd);
	p->fd = -1;
	(*kept)++;
}

/* Whether @peer may take a slot: from one of the addresses expected, if
 * any. A rank whose endpoint is a wildcard, or of the other IP version
 * than @peer, connects from addresses unknown here: then anyone may. */
static bool allowed(const struct dc_greeter *g, const struct sockaddr_storage *peer)
{
	static const uint8_t zero[16];
	uint8_t ip[16], pip[16];
	size_t pn = dc_sa_ip(peer, pip);

	if (!g->allow)
		return true;
	for (int i = 0; i < g->nallow; i++) {
		size_t n = dc_sa_ip(&g->allow[i].sa, ip);

		if (!n || n != pn || !memcmp(ip, zero, n) || !memcmp(ip, pip, n))
			return true;
	}
	return false;
}

/* A slot for a new connection: a free one, else (a flood) a random one of
 * those old enough that a rank had time to answer (-1: none). @any: of all. */
static int slot_for(const struct pending *pend, int64_t now, bool any)
{
	int cand[GREET_PENDING], n = 0;
	uint32_t r;

	for (int i = 0; i < GREET_PENDING; i++) {
		if (pend[i].fd < 0)
			return i;
		if (any || now - pend[i].born >= GREET_MIN_AGE_MS)
			cand[n++] = i;
	}
	if (!n)
		return -1;
	if (dc_random(&r, sizeof(r)))
		r = (uint32_t)now;
	return cand[r % (uint32_t)n];
}

/* Accepts one connection on @g's listener, if it is allowed and has room. */
static void take_new(struct dc_greeter *g, struct pending *pend, int64_t *pause_until)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	int64_t now = dc_now_ms();
	int fd = accept4(g->lfd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC), i;

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* out of descriptors: free one, and let the others go on */
			i = slot_for(pend, now, true);
			if (i >= 0 && pend[i].fd >= 0)
				push_out(g, &pend[i], "pushed out: no file descriptor left (a flood)");
			*pause_until = now + GREET_FD_PAUSE_MS;
		}
		return;
	}
	if (!allowed(g, &peer)) {
		refuse(g, "a connection from no rank's address");
		close(fd);
		return;
	}
	i = slot_for(pend, now, false);
	if (i < 0) {
		refuse(g, "no room: every slot just taken (a flood)");
		close(fd);
		return;
	}
	if (pend[i].fd >= 0)
		push_out(g, &pend[i], "pushed out by newer connections (a flood)");
	admit(g, &pend[i], fd);
}

int dc_greet(struct dc_greeter *g)
{
	struct pending pend[GREET_PENDING];
	struct pollfd pfd[GREET_PENDING + 1];
	int kept = 0, ret = 0;
	int64_t pause_until = 0;

	for (int i = 0; i < GREET_PENDING; i++) {
		pend[i].fd = -1;
		pend[i].buf = malloc(g->msg_len);
		if (!pend[i].buf) {
			while (i--)
				free(pend[i].buf);
			return dc_fail(-ENOMEM, "out of memory");
		}
	}
	while (kept < g->want) {
		int64_t now = dc_now_ms(), wait = g->deadline - now;
		int n = 1, at[GREET_PENDING + 1];

		if (wait <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		/* a negative fd: poll skips the listener while paused */
		pfd[0] = (struct pollfd){ .fd = now < pause_until ? -1 : g->lfd, .events = POLLIN };
		if (now < pause_until && pause_until - now < wait)
			wait = pause_until - now;
		for (int i = 0; i < GREET_PENDING; i++) {
			struct pending *p = &pend[i];

			if (p->fd >= 0 && p->deadline <= now)
				drop(g, p, "no answer in time (an idle connection)");
			if (p->fd < 0)
				continue;
			if (p->deadline - now < wait)
				wait = p->deadline - now;
			at[n] = i;
			pfd[n++] = (struct pollfd){ .fd = p->fd, .events = POLLIN };
		}
		if (poll(pfd, (nfds_t)n, (int)wait) < 0 && errno != EINTR) {
			ret = dc_fail(-errno, "poll: %s", strerror(errno));
			break;
		}
		for (int j = 1; j < n && kept < g->want; j++)
			if (pfd[j].revents && pend[at[j]].fd >= 0)
				serve(g, &pend[at[j]], &kept);
		if (kept < g->want && pfd[0].fd >= 0 && (pfd[0].revents & POLLIN))
			take_new(g, pend, &pause_until);
	}
	for (int i = 0; i < GREET_PENDING; i++) {
		if (pend[i].fd >= 0)
			drop(g, &pend[i], "still unanswered when the set-up was done");
		free(pend[i].buf);
	}
	return ret;
}

/* Why a handshake was refused, as the connecting side says it. */
static const char *refusal(uint32_t code)
{
	switch (code) {
	case DC_REFUSED_SECRET:
		return "its answer is not signed with the same secret (DEVCOLL_SECRET differs)";
	case DC_REFUSED_MISMATCH:
		return "it is for another world size, rank or communicator";
	case DC_REFUSED_TAKEN:
		return "another process already took that place (the same rank twice?)";
	default:
		return "for a reason of another devcoll version";
	}
}

/* One try of @h on a connection to @to: 0, or -EAGAIN when it was closed
 * before the verdict (the caller tries again). */
static int try_once(const struct dc_handshake *h, int fd, bool *connected)
{
	struct dc_verdict v;
	uint8_t nonce[DC_NONCE_LEN];
	int ret;

	if (h->from && h->from->ss_family == h->to->ss_family && !dc_sa_is_any(h->from)) {
		struct sockaddr_storage src = *h->from;

		/* from the address the peer expects us at (else from the route's) */
		dc_sa_set_port(&src, 0);
		(void)!bind(fd, (struct sockaddr *)&src, dc_sa_len(&src));
	}
	if (connect(fd, (const struct sockaddr *)h->to, dc_sa_len(h->to)))
		return -errno;
	*connected = true;
	ret = dc_greet_read(fd, h->kind, nonce, h->deadline);
	if (!ret) {
		h->sign(h->msg, h->key, nonce);
		ret = dc_io_all(fd, h->msg, h->len, true, h->deadline);
	}
	if (!ret)
		ret = dc_io_all(fd, &v, sizeof(v), false, h->deadline);
	if (ret == -ECONNRESET || ret == -EPIPE)
		return -EAGAIN;
	if (ret)
		return ret;
	if (v.magic != AUTH_MAGIC)
		return dc_fail(-EPROTO, "rank %d: garbage from %s for an answer", h->rank, h->who);
	if (v.code != DC_KEPT)
		return dc_fail(v.code == DC_REFUSED_SECRET ? -EACCES : -EPROTO, "rank %d: %s refused "
			       "the %s: %s", h->rank, h->who, h->what, refusal(v.code));
	return 0;
}

int dc_handshake(const struct dc_handshake *h, int *out)
{
	int delay = RETRY_FIRST_MS, closed = 0, ret;

	for (;;) {
		bool connected = false;
		int fd = socket(h->to->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return dc_fail(-errno, "socket: %s", strerror(errno));
		ret = try_once(h, fd, &connected);
		if (!ret) {
			*out = fd;
			return 0;
		}
		close(fd);
		if (ret != -EAGAIN && connected)
			return ret;	/* refused, or the deadline */
		if (connected) {
			closed++;
			count(&stats.retried);
			delay = delay * 2 < RETRY_MAX_MS ? delay * 2 : RETRY_MAX_MS;
		}
		if (dc_now_ms() + delay > h->deadline) {
			if (closed)
				return dc_fail(-ECONNRESET, "rank %d: %s closed the connection before "
					       "answering, %d time(s) until the timeout (a flood of "
					       "connections there, or it failed)", h->rank, h->who,
					       closed);
			return dc_fail(ret, "rank %d: cannot reach %s: %s", h->rank, h->who,
				       strerror(-ret));
		}
		usleep((useconds_t)delay * 1000);
	}
}

int dc_greet_read(int fd, uint32_t kind, uint8_t nonce[DC_NONCE_LEN], int64_t deadline)
{
	struct dc_challenge ch;
	int ret = dc_io_all(fd, &ch, sizeof(ch), false, deadline);

	if (ret)
		return ret;
	if (ch.magic != AUTH_MAGIC || ch.kind != kind)
		return dc_fail(-EPROTO, "set-up: the peer is not a devcoll rank of this version");
	memcpy(nonce, ch.nonce, DC_NONCE_LEN);
	return 0;
}

void dc_greet_report(const struct dc_greeter *g, int rank, const char *who)
{
	if (g->strangers)
		fprintf(stderr, "devcoll rank %d: %s dropped %u stranger connection(s), the last: "
			"%s\n", rank, who, g->strangers, g->last_why);
}
