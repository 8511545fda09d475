/* SPDX-License-Identifier: GPL-2.0 */
/* rdpmd's configuration file (Documentation/rdpm.rst lists the keys). */
#ifndef RDPM_CONFIG_H
#define RDPM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RDPM_CONF_MAX_IDS	32
#define RDPM_CONF_MAX_NICS	16
#define RDPM_DEFAULT_CONF	"/etc/rdpm/rdpm.conf"

/* A list of uids or gids; "*" in the file means everyone. */
struct rdpm_idlist {
	bool any;
	unsigned int n;
	uint32_t id[RDPM_CONF_MAX_IDS];
};

struct rdpm_nic_conf {
	char name[16];
	unsigned int reserve;		/* RX queues reserved for devmem */
	unsigned int queues_per_binding; /* 0: all reserved queues */
	unsigned int max_rules;		/* per client on this NIC */
	uint64_t max_bytes;		/* bound memory per client on this NIC */
	uint64_t shared_bytes;		/* each user's shared buffer (JOIN); 0: none */
	struct rdpm_idlist users, groups;	/* who may use it */
	struct rdpm_idlist low_port_users;	/* who may steer local ports < 1024 */
};

struct rdpm_conf {
	char socket[108];
	char state_dir[96];
	unsigned int max_clients;
	struct rdpm_idlist admin_users;	/* drain, reload (root always) */
	unsigned int nnics;
	struct rdpm_nic_conf nics[RDPM_CONF_MAX_NICS];
};

/*
 * Parses configuration text @text; 0, or a negative errno with
 * "line N: what" in @err. User and group names are resolved with
 * getpwnam/getgrnam; numbers are taken as ids.
 */
int rdpm_conf_parse(const char *text, struct rdpm_conf *c, char *err, size_t errlen);
/* Reads and parses file @path. */
int rdpm_conf_load(const char *path, struct rdpm_conf *c, char *err, size_t errlen);

bool rdpm_idlist_has(const struct rdpm_idlist *l, uint32_t id);
const struct rdpm_nic_conf *rdpm_conf_nic(const struct rdpm_conf *c, const char *name);

#endif
