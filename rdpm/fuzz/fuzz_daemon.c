// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of rdpmd's whole read path: the bytes are a script of
 * clients sending messages, with fds of several kinds attached, to the
 * real client code (clients.c: receive, parse, every request, replies,
 * disconnects) over socketpairs, on the fake NIC layer (fake_nic.c), so
 * that REGISTER, JOIN, STEER, WINDOW and the rest get past the NIC. After
 * each input every client is closed and the process must hold exactly
 * the fds it held before (none leaked, none closed twice), and the next
 * input's clients must all be let in (no count left behind).
 *
 * A record: a control byte, then for a message a 2-byte length and the
 * message. Control bits 0-1: the client (4 slots); 2-4: what is attached
 * (none, a pipe, a memfd, /dev/null, a Unix socket, a TCP listener on
 * 127.0.0.1 (uid 0's: STEER of the admin proves flows with it), two
 * fds, 20 fds); 5-7: 0-3 send the message as is, 4-5 send it with the
 * header's magic, version and length made right, 6 disconnect the client,
 * 7 reconnect it as the uid the next byte picks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "nlquery.h"

#define SLOTS	4

static const char conf[] =
	"[global]\nmax_clients = 8\nmax_clients_per_user = 4\nmax_preauth = 4\n"
	"max_bindings = 6\nmax_joins_per_client = 2\nmax_joins_per_user = 3\n"
	"admin_users = 0\n"
	"[nic fz0]\nusers = 1000, 1001\nreserve = 3\nqueues_per_binding = 1\n"
	"shared_bytes = 1M\nmax_bytes = 4M\nmax_rules = 3\n"
	"[nic fz1]\nusers = 1001\n";
/* An admin, two users, and a uid that may use no NIC. */
static const uid_t uids[] = { 0, 1000, 1001, 65534 };
static unsigned int baseline;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static const uint8_t any[16];
	struct rdpm_diag_key k = { .family = AF_INET, .local = any, .peer = any };
	struct rdpm_diag d;

	harness_init(conf);
	/* rdpmd keeps its sock_diag socket open from the first look-up on. */
	if (rdpm_diag_find(&k, &d) < 0)
		abort();
	baseline = harness_fds();
	return 0;
}

/* Up to 20 fds of kind @kind into @fds; how many. */
static int make_fds(unsigned int kind, int *fds)
{
	int n = 0, p[2];

	switch (kind) {
	case 1:
		if (!pipe2(p, O_CLOEXEC)) {
			fds[n++] = p[0];
			close(p[1]);
		}
		break;
	case 2:
		fds[n] = memfd_create("fuzz", MFD_CLOEXEC);
		if (fds[n] >= 0 && !ftruncate(fds[n], 1 << 16))
			n++;
		else if (fds[n] >= 0)
			close(fds[n]);
		break;
	case 3:
		fds[n] = open("/dev/null", O_RDWR | O_CLOEXEC);
		n += fds[n] >= 0;
		break;
	case 4:
		if (!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p)) {
			fds[n++] = p[0];
			close(p[1]);
		}
		break;
	case 5: {
		/* A listener on lo, whose flows STEER proves; closed once sent,
		 * so that flows_check finds it gone. */
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		fds[n] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[n] >= 0 && !bind(fds[n], (struct sockaddr *)&sa, sizeof(sa)) &&
		    !listen(fds[n], 1))
			n++;
		else if (fds[n] >= 0)
			close(fds[n]);
		break;
	}
	case 6:
	case 7:
		for (int i = 0; i < (kind == 6 ? 2 : 20); i++) {
			fds[n] = memfd_create("fuzz", MFD_CLOEXEC);
			n += fds[n] >= 0;
		}
		break;
	}
	return n;
}

/* Reads (and drops) what rdpmd sent each client, fds closed. */
static void drain(const int *slot)
{
	static char buf[RDPM_MAX_STATUS];

	for (int i = 0; i < SLOTS; i++)
		while (slot[i] >= 0 && harness_recv(slot[i], buf, sizeof(buf), NULL))
			;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	int slot[SLOTS];
	size_t i = 0;

	/* Nothing of the last input may linger: every slot's client is let
	 * in, but the uid that may use no NIC, refused at accept. */
	for (int k = 0; k < SLOTS; k++)
		if (((slot[k] = harness_client(uids[k])) < 0) != (uids[k] == 65534))
			abort();
	while (i < size) {
		unsigned int ctl = data[i++], who = ctl & 3, kind = (ctl >> 2) & 7, act = ctl >> 5;
		unsigned char msg[RDPM_MAX_MSG + 64];
		int fds[20], nfds;
		struct iovec iov = { msg, 0 };
		size_t len;

		if (act == 6) {
			if (slot[who] >= 0)
				close(slot[who]);
			slot[who] = -1;
		} else if (act == 7) {
			if (slot[who] >= 0)
				close(slot[who]);
			slot[who] = harness_client(uids[i < size ? data[i++] % 4 : 0]);
		} else {
			if (size - i < 2)
				break;
			len = (data[i] | data[i + 1] << 8) % sizeof(msg);
			i += 2;
			len = len < size - i ? len : size - i;
			memcpy(msg, data + i, len);
			i += len;
			if (act >= 4 && len >= sizeof(struct rdpm_hdr)) {
				struct rdpm_hdr h;

				memcpy(&h, msg, sizeof(h));
				h.magic = RDPM_MAGIC;
				h.version = RDPM_VERSION;
				h.length = len;
				memcpy(msg, &h, sizeof(h));
			}
			nfds = make_fds(kind, fds);
			iov.iov_len = len;
			if (slot[who] >= 0)
				rdpm_send_fds(slot[who], &iov, 1, fds, nfds, MSG_DONTWAIT);
			for (int k = 0; k < nfds; k++)
				close(fds[k]);
		}
		harness_run();
		drain(slot);
	}
	/* The re-check of socket-proved rules, whose sockets are closed. */
	rdpmd_flows_recheck();
	harness_run();
	for (int k = 0; k < SLOTS; k++)
		if (slot[k] >= 0)
			close(slot[k]);
	harness_run();
	harness_reset();
	/* Every fd a client passed, every binding's, every socket: closed. */
	if (harness_fds() != baseline || fake_rules)
		abort();
	return 0;
}
