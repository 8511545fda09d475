/* SPDX-License-Identifier: GPL-2.0 */
/* rdpmd internals shared between its source files. */
#ifndef RDPMD_H
#define RDPMD_H

#include <stdbool.h>
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

/* The daemon's state (server.c). */
struct rdpmd {
	struct rdpm_conf conf;
	const char *conf_path;
	struct rdpm_nic nics[RDPM_CONF_MAX_NICS];
	unsigned int nnics;
	int epfd;
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

/* clients.c: a new connection on listening socket @lfd; an epoll event of
 * a client's socket; closing the clients that died (after an event batch),
 * or all (at exit). */
void rdpmd_client_accept(int lfd);
void rdpmd_client_event(void *client, uint32_t events);
void rdpmd_clients_reap(void);
void rdpmd_clients_close_all(void);
/* Drops every binding of @c (NULL: everyone's) on @n (NULL: all NICs),
 * telling the clients with @event when non-zero; how many went. */
struct client;
unsigned int rdpmd_drop(struct client *c, struct rdpm_nic *n, uint32_t event);
/* Re-reads the configuration: access lists and quotas change now. */
int rdpmd_reload(void);

#endif
