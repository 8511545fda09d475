/* SPDX-License-Identifier: GPL-2.0 */
/* rdpmd's configuration file (Documentation/rdpm.rst lists the keys). */
#ifndef RDPM_CONFIG_H
#define RDPM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
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

/* A list of names (dma-buf exporters). */
#define RDPM_CONF_NAME		32
struct rdpm_namelist {
	unsigned int n;
	char name[RDPM_CONF_MAX_IDS][RDPM_CONF_NAME];
};

struct rdpm_nic_conf {
	char name[16];
	unsigned int reserve;		/* RX queues reserved for devmem */
	unsigned int queues_per_binding; /* 0: all reserved queues */
	unsigned int max_rules;		/* per uid on this NIC */
	uint64_t max_bytes;		/* bound memory per uid on this NIC */
	uint64_t shared_bytes;		/* each user's shared buffer (JOIN); 0: none */
	struct rdpm_idlist users, groups;	/* who may use it */
	struct rdpm_idlist low_port_users;	/* who may steer local ports < 1024 */
};

struct rdpm_conf {
	char socket[108];
	char state_dir[96];
	unsigned int max_clients;	/* connections at once (admins: a few more) */
	unsigned int max_clients_per_user;	/* connections at once of one uid */
	unsigned int max_preauth;	/* connections without HELLO yet, all uids together */
	unsigned int max_preauth_per_user;	/* connections without HELLO yet of one uid */
	unsigned int hello_timeout_ms;	/* a connection without HELLO by then is closed */
	unsigned int max_bindings;	/* buffers (REGISTER and JOIN) of all users together */
	unsigned int max_proven_flows;	/* socket-proved rules of all users (re-checked) */
	unsigned int max_joins_per_client;	/* shares (JOIN) of one connection at once */
	unsigned int max_joins_per_user;	/* shares of one uid at once */
	struct rdpm_namelist dmabuf_exporters;	/* exp_name of the dma-bufs REGISTER takes */
	struct rdpm_idlist admin_users;	/* drain, reload, full STATUS (root always) */
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

/*
 * Connections an admin may open beyond max_clients: rdpmctl still works
 * when unprivileged users have taken every slot.
 */
#define RDPM_ADMIN_SLOTS	4

/* Client fds waiting to be sent to the closer helper (closer.c) at most. */
#define RDPM_CLOSER_SLOTS	1024
/* Processes stuck in a client's files (killed closer helpers, their
 * closing children) rdpmd follows, with a pidfd each, at most. */
#define RDPM_CLOSER_STUCK	64
/* Fds of uids the closer holds back (closer.c: struck), at most. */
#define RDPM_CLOSER_HELD	(RDPM_CLOSER_SLOTS / 4)
/* Client fds sent to the closer helper and not yet closed, at most: files
 * rdpmd keeps open through the helper (and the socketpair's end). */
#define RDPM_CLOSER_INFLIGHT	512

/*
 * The most file descriptors rdpmd can hold with configuration @c: its own
 * (listener, epoll, signals, netlink, a spare), each connection, each NIC's
 * handle, two per binding (the dma-buf and its netlink socket; a binding
 * takes a reserved queue of its own, so there are at most as many as
 * reserved queues), the few a request holds for a moment and those
 * waiting to be closed (RDPM_CLOSER_SLOTS, RDPM_CLOSER_HELD,
 * RDPM_CLOSER_INFLIGHT).
 */
unsigned long rdpm_conf_fds(const struct rdpm_conf *c);

/*
 * Whether the file descriptors configuration @c may need fit in
 * RLIMIT_NOFILE (its soft limit raised to the hard one if need be); else
 * -EMFILE with the reason in @err.
 */
int rdpm_conf_fd_budget(const struct rdpm_conf *c, char *err, size_t errlen);

bool rdpm_idlist_has(const struct rdpm_idlist *l, uint32_t id);
bool rdpm_namelist_has(const struct rdpm_namelist *l, const char *name);
const struct rdpm_nic_conf *rdpm_conf_nic(const struct rdpm_conf *c, const char *name);

#endif
