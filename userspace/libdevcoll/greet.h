/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The set-up handshakes over TCP: the accepting side's greeter (greet.c)
 * and the connecting side's handshake.
 */
#ifndef DEVCOLL_GREET_H
#define DEVCOLL_GREET_H

#include <stdint.h>
#include "wire.h"

struct endpoint;

/* The accepting side's verdict on an answer, sent before it keeps or
 * closes the connection. Not authenticated: whoever could forge it could
 * as well cut the connection. */
struct dc_verdict {
	uint32_t magic, code;
};
enum { DC_KEPT, DC_REFUSED_SECRET, DC_REFUSED_MISMATCH, DC_REFUSED_TAKEN };

/* greet.c: serves the handshakes on listener @lfd, many connections at
 * once, until @want were kept or @deadline: each gets a challenge of
 * @kind and has a few seconds to answer with @msg_len bytes, which @check
 * judges: DC_KEPT, or a DC_REFUSED_* code and @why; a kept one's peer is
 * told so, then @keep takes its fd. With @allow, only connections from the
 * addresses of those @nallow endpoints get a slot. Strangers (and why the
 * last one was dropped) are counted in @g. */
struct dc_greeter {
	int lfd;
	uint32_t kind;
	size_t msg_len;
	uint32_t (*check)(void *arg, const uint8_t *nonce, const void *msg, const char **why);
	void (*keep)(void *arg, const void *msg, int fd);
	void *arg;
	const struct endpoint *allow;
	int nallow;
	int want;
	int64_t deadline;
	unsigned int strangers;
	char last_why[160];
};
int dc_greet(struct dc_greeter *g);
/* The connecting side: reads the challenge of @kind into @nonce. */
int dc_greet_read(int fd, uint32_t kind, uint8_t nonce[DC_NONCE_LEN], int64_t deadline);
/* The connecting side's whole handshake: connects to @to (from @from's
 * address, if set), answers the challenge of @kind with the @len bytes of
 * @msg signed by @sign with @key, and reads the verdict. A connection
 * refused or closed before the verdict is tried again until @deadline.
 * 0 with the connection in *@out, or an error naming @who ("rank 0 at
 * host:port") and @what ("registration") from @rank's view. */
struct dc_handshake {
	const struct sockaddr_storage *to, *from;
	uint32_t kind;
	void *msg;
	size_t len;
	void (*sign)(void *msg, const uint8_t key[DC_KEY_LEN], const uint8_t nonce[DC_NONCE_LEN]);
	const uint8_t *key;
	int64_t deadline;
	int rank;
	const char *who, *what;
};
int dc_handshake(const struct dc_handshake *h, int *out);
/* What the set-ups of this process met so far, all greeters and
 * handshakes together (tests assert on it). */
struct dc_greet_stats {
	unsigned int dropped;	/* connections a greeter closed unkept */
	unsigned int pushed;	/* ... of them pushed out by newer ones (a flood) */
	unsigned int retried;	/* handshakes started over: closed before the verdict */
};
void dc_greet_stats(struct dc_greet_stats *out);
/* Says on stderr what @g dropped, if anything (@who: "rank 0's rendezvous"). */
void dc_greet_report(const struct dc_greeter *g, int rank, const char *who);

#endif
