/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rdpmd's client code (clients.c) driven without a daemon or hardware:
 * clients are socketpairs, the NIC layer is fake_nic.c, and the event
 * loop is harness_run(), which does what server.c's loop does. For the
 * fuzzer (fuzz_daemon.c) and the unit tests (tests/t_clients.c).
 */
#ifndef RDPM_HARNESS_H
#define RDPM_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "rdpmd.h"

extern const struct rdpm_nic_ops fake_nic_ops;
extern unsigned int fake_rules;

/*
 * Sets rdpmd up with configuration text @conf (its first NIC present and
 * up with 8 queues, the last reserve of them reserved; the others absent)
 * and the closer in its direct mode (fds closed at once, in this process:
 * they are the harness's own). Exits on errors.
 */
void harness_init(const char *conf);
/* A new client of @uid (gid @uid, no groups): the client's end of its
 * socket, or -1 when rdpmd refused it. */
int harness_client(uid_t uid);
/* Runs the event loop until nothing is left to read. */
void harness_run(void);
/*
 * The next message for the client at @fd, without waiting: its length
 * (0: none), the fd passed with it in *@fd_out (-1: none; the caller
 * closes it; NULL: closed here).
 */
int harness_recv(int fd, void *buf, size_t len, int *fd_out);
/* Closes every client (the closer closes at once). */
void harness_reset(void);
/* File descriptors this process holds. */
unsigned int harness_fds(void);

#endif
