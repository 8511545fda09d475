/* SPDX-License-Identifier: GPL-2.0 */
/* rdpmd internals shared between its source files. */
#ifndef RDPMD_H
#define RDPMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

#include <devmem.h>
#include "rdpm_proto.h"
#include "config.h"

/* log.c: one line per event on stderr, "<N>" priority first: journald reads it. */
void rdpm_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A configured NIC and what rdpmd changed on it. */
struct rdpm_nic {
	struct rdpm_nic_conf conf;
	char state_path[192];
	struct devmem_nic *nic;		/* NULL: absent or not set up */
	int ifindex;
	bool up;
	unsigned int queues;		/* RX queues of the device */
	unsigned int first;		/* first reserved queue */
	uint32_t rss_ctx;
	unsigned int rules[RDPM_MAX_QUEUES];	/* per reserved queue */
	bool bound[RDPM_MAX_QUEUES];
};

/* Connections refused or closed by rdpmd, and why (admins see them in STATUS). */
struct rdpm_counters {
	uint64_t refused_max_clients;	/* max_clients reached */
	uint64_t refused_per_user;	/* the uid's max_clients_per_user reached */
	uint64_t refused_no_fds;	/* accepted and closed at once: out of fds */
	uint64_t refused_no_creds;	/* no SO_PEERCRED */
	uint64_t hello_timeouts;	/* no HELLO within hello_timeout_ms */
	uint64_t closed_unread;		/* replies not read (send would block) */
	uint64_t closed_empty;		/* a 0-byte message */
	uint64_t fds_refused;		/* fds attached where none is taken: closed */
	uint64_t listener_paused;	/* times the listener was paused, out of fds */
};

/* The daemon's state (server.c). */
struct rdpmd {
	struct rdpm_conf conf;
	const char *conf_path;
	struct rdpm_nic nics[RDPM_CONF_MAX_NICS];
	unsigned int nnics;
	int epfd;
	int lfd;			/* the listening socket; epoll data &lfd */
	struct rdpm_counters counters;
};

extern struct rdpmd rdpmd;

/*
 * Removes what a previous rdpmd left on @n's device (its state file says
 * what), then reserves queues as configured and records the originals in
 * the state file. -errno with the reason logged.
 */
int rdpm_nic_setup(struct rdpm_nic *n, const char *state_dir);
/* Puts the device back (with @restore; else only forgets it: it is gone). */
void rdpm_nic_teardown(struct rdpm_nic *n, bool restore);
/* Steers @flow to reserved queue @queue; the rule location in @rule. */
int rdpm_nic_rule_add(struct rdpm_nic *n, const struct devmem_flow *flow, unsigned int queue,
		      uint32_t *rule);
void rdpm_nic_rule_del(struct rdpm_nic *n, uint32_t rule, unsigned int queue);

/* Milliseconds since an arbitrary start (CLOCK_MONOTONIC). */
uint64_t rdpm_now_ms(void);

/* clients.c: new connections on the listening socket rdpmd.lfd; an epoll
 * event of a client's socket; closing the clients that died (after an
 * event batch), or all (at exit). */
void rdpmd_client_accept(void);
/* Reserves the spare fd the accept path uses when out of fds; -errno. */
int rdpmd_clients_init(void);
/* The epoll_wait timeout until the next deadline (a HELLO, the paused
 * listener, the re-check of the sockets that proved flows); -1: none. */
int rdpmd_clients_timeout(void);
/* Acts on the deadlines that passed: closes connections without HELLO,
 * resumes a paused listener, removes flows whose socket is gone. */
void rdpmd_clients_tick(void);
void rdpmd_client_event(void *client, uint32_t events);
void rdpmd_clients_reap(void);
void rdpmd_clients_close_all(void);
/* Drops every binding of @c (NULL: everyone's) on @n (NULL: all NICs),
 * telling the clients with @event when non-zero; how many went. */
struct client;
unsigned int rdpmd_drop(struct client *c, struct rdpm_nic *n, uint32_t event);
/*
 * Whether the file descriptors configuration @c may need fit in
 * RLIMIT_NOFILE (its soft limit raised to the hard one if need be); else
 * -EMFILE with the reason in @err (server.c).
 */
int rdpmd_fd_budget(const struct rdpm_conf *c, char *err, size_t errlen);
/* Re-reads the configuration: access lists and quotas change now. */
int rdpmd_reload(void);

#endif
