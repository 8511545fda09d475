// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The accepting side of the set-up handshakes (rank 0's rendezvous, the
 * mesh's listeners): one poll loop serves every pending connection at once,
 * each with its own deadline and its partial answer buffered, so that an
 * idle or slow stranger costs a slot for a few seconds and nothing more.
 * Whatever fails its check is closed and counted, never fatal: the set-up
 * fails only at its own deadline, short of the ranks it waits for.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

#define GREET_PENDING 64	/* connections answering at once */
#define GREET_ANSWER_MS 5000	/* to answer a challenge */

struct pending {
	int fd;
	int64_t deadline;
	uint8_t nonce[DC_NONCE_LEN];
	uint8_t *buf;
	size_t got;
};

static void drop(struct dc_greeter *g, struct pending *p, const char *why)
{
	close(p->fd);
	p->fd = -1;
	g->strangers++;
	snprintf(g->last_why, sizeof(g->last_why), "%s", why);
}

/* A new connection gets its challenge (a fresh socket's buffer takes it). */
static void admit(struct dc_greeter *g, struct pending *p, int fd)
{
	struct dc_challenge ch = { AUTH_MAGIC, g->kind, { 0 } };
	int64_t now = dc_now_ms();

	p->fd = fd;
	p->got = 0;
	p->deadline = now + GREET_ANSWER_MS < g->deadline ? now + GREET_ANSWER_MS : g->deadline;
	if (dc_random(p->nonce, sizeof(p->nonce)))
		return drop(g, p, "no random nonce");
	memcpy(ch.nonce, p->nonce, sizeof(ch.nonce));
	if (send(fd, &ch, sizeof(ch), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ch))
		drop(g, p, "the challenge could not be sent");
}

/* Reads what @p's socket has; judges the answer once complete. */
static void serve(struct dc_greeter *g, struct pending *p, int *kept)
{
	const char *why = "";
	ssize_t n = recv(p->fd, p->buf + p->got, g->msg_len - p->got, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0)
		return drop(g, p, n ? "a connection error" : "closed before answering");
	p->got += (size_t)n;
	if (p->got < g->msg_len)
		return;
	if (g->check(g->arg, p->nonce, p->buf, p->fd, &why) != 1)
		return drop(g, p, why);
	p->fd = -1;		/* the check took it */
	(*kept)++;
}

int dc_greet(struct dc_greeter *g)
{
	struct pending pend[GREET_PENDING];
	struct pollfd pfd[GREET_PENDING + 1];
	int kept = 0, ret = 0;

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
		int n = 1, oldest = 0;

		if (wait <= 0) {
			ret = -ETIMEDOUT;
			break;
		}
		pfd[0] = (struct pollfd){ .fd = g->lfd, .events = POLLIN };
		for (int i = 0; i < GREET_PENDING; i++) {
			struct pending *p = &pend[i];

			if (p->fd >= 0 && p->deadline <= now)
				drop(g, p, "no answer in time (an idle connection)");
			if (p->fd < 0)
				continue;
			if (p->deadline - now < wait)
				wait = p->deadline - now;
			pfd[n++] = (struct pollfd){ .fd = p->fd, .events = POLLIN };
		}
		if (poll(pfd, (nfds_t)n, (int)wait) < 0 && errno != EINTR) {
			ret = dc_fail(-errno, "poll: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < GREET_PENDING; i++)
			for (int j = 1; j < n; j++)
				if (pend[i].fd >= 0 && pfd[j].fd == pend[i].fd && pfd[j].revents)
					serve(g, &pend[i], &kept);
		if (!(pfd[0].revents & POLLIN))
			continue;
		int fd = accept4(g->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0)
			continue;	/* EMFILE and the like: the others go on */
		for (int i = 0; i < GREET_PENDING; i++) {
			if (pend[i].fd < 0) {
				oldest = i;
				break;
			}
			if (pend[i].deadline < pend[oldest].deadline)
				oldest = i;
		}
		/* all slots taken (a flood): the one waited for longest goes */
		if (pend[oldest].fd >= 0)
			drop(g, &pend[oldest], "pushed out by newer connections (a flood)");
		admit(g, &pend[oldest], fd);
	}
	for (int i = 0; i < GREET_PENDING; i++) {
		if (pend[i].fd >= 0)
			drop(g, &pend[i], "still unanswered when the set-up was done");
		free(pend[i].buf);
	}
	return ret;
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
