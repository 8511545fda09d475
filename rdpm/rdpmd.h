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

/* One line per event on stderr, "<N>" priority first: journald reads it. */
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

#endif
