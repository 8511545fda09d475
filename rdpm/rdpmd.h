/* SPDX-License-Identifier: GPL-2.0 */
/* rdpmd internals shared between its source files. */
#ifndef RDPMD_H
#define RDPMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>
#include <sys/types.h>

#include <devmem.h>
#include "rdpm_proto.h"
#include "rdpm_wire.h"
#include "config.h"

/*
 * log.c: one line per event on stderr, "<N>" priority first: journald reads
 * it. Never blocks (rdpm_log_init makes stderr non-blocking): a line that
 * does not fit is dropped and counted, and the next line that fits says
 * how many went. Notices and info lines share a budget (a token bucket),
 * so that clients cannot flood the journal; warnings and errors always go.
 */
void rdpm_log_init(void);
void rdpm_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Lines dropped: stderr full, or over the notice budget. */
uint64_t rdpm_log_dropped(void);
uint64_t rdpm_log_suppressed(void);

/* A token bucket, the one rate limiter of rdpmd: zero-initialised it is full. */
struct rdpm_bucket {
	bool primed;
	unsigned int tokens;
	uint64_t at;		/* ms when it was last refilled */
	unsigned long missed;	/* takes refused since the last one granted */
};
/* Takes a token from @b, which holds @burst and gains @per_s a second;
 * false (counted in @b->missed) when it is empty. */
bool rdpm_bucket_take(struct rdpm_bucket *b, unsigned int burst, unsigned int per_s);
/* rdpm_log at most once a second per @b (a kind of event): a client that
 * connects in a loop must not flood the journal. The next line that goes
 * counts those left out. */
void rdpm_log_limited(struct rdpm_bucket *b, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * closer.c: closes the file descriptors clients passed, and client sockets.
 * close() of a client's file can block for as long as the client likes (a
 * TCP socket with SO_LINGER towards a peer with a zero window, a FUSE
 * file's flush), so rdpmd hands them to a helper process that closes them,
 * and kills (SIGKILL) and replaces it when it closed nothing for a second.
 * Fds wait in a bounded queue until sent, counted per uid.
 */
enum rdpm_closer_mode {
	RDPM_CLOSER_HELPER,	/* rdpmd: a forked helper process */
	RDPM_CLOSER_DIRECT,	/* fuzzer, unit tests: closed at once by the caller */
};
/* Starts the helper (registered in rdpmd.epfd when set); 0 or -errno. */
int rdpm_closer_start(enum rdpm_closer_mode mode);
/* Queues @n fds of @uid for closing; false (nothing queued) when they do not fit. */
bool rdpm_closer_push(const int *fds, unsigned int n, uid_t uid);
/* Whether a client of @uid may be read now: room for a message's fds and
 * its socket, within the uid's share (1/4 of the queue) and outside the
 * admins' reserve unless @admin. */
bool rdpm_closer_may_read(uid_t uid, bool admin);
/* Whether fds are closed at once by the caller (RDPM_CLOSER_DIRECT): the
 * caller then reads client messages itself. */
bool rdpm_closer_direct(void);
/* Has the helper read the next message of client socket @fd, whose fds it
 * passes on only when they are dma-bufs or sockets; the answer comes to
 * rdpmd_client_read_done with @token; a stall blames @uid. false: not now
 * (no helper, or too many reads under way). */
bool rdpm_closer_read(int fd, uint64_t token, uid_t uid);
/* Whether rdpm_closer_read would take a message now. */
bool rdpm_closer_can_read(void);
/* Whether @uid's files stalled the helper CLOSER_STRIKES times this minute:
 * its clients' messages with fds are not read then (admins' are). */
bool rdpm_closer_struck(uid_t uid);
/* Queues @n fds of @uid whatever the limits (rdpm_closer_push failed): rdpmd
 * never closes a client's file itself; past all room one stays open,
 * counted in fds_kept. */
void rdpm_closer_keep(const int *fds, unsigned int n, uid_t uid);
/* Queue slots free now (for anyone). */
unsigned int rdpm_closer_room(void);
/* Fds not yet closed: queued, or sent to the helper and not acknowledged. */
unsigned int rdpm_closer_pending(void);
unsigned int rdpm_closer_inflight(void);
/* Helpers killed because a close blocked. */
uint64_t rdpm_closer_kills(void);
/* An epoll event of rdpmd.epfd: whether it is the closer's (@tag), and
 * acting on it (the helper's acks). */
bool rdpm_closer_owns(const void *tag);
void rdpm_closer_event(const void *tag, uint32_t events);
/* The epoll_wait timeout until the watchdog looks again; -1: none. */
int rdpm_closer_timeout(void);
/* The watchdog: kills a helper that closed nothing for a second, forks a
 * new one (at most 10 a minute), reaps the dead. */
void rdpm_closer_tick(void);
/* At exit: hands over what is queued (3 s at most) and ends the helper. */
void rdpm_closer_stop(void);

/*
 * The NIC and memory layer clients.c works through: libdevmem on a host
 * (rdpm_devmem_ops, nicstate.c); the fuzzer and unit tests of the client
 * code put a layer of their own here, so that every request runs without
 * a NIC. Errors are -errno with the reason in last_error().
 */
struct rdpm_nic_ops {
	/* A client's fd (already checked to be a dma-buf, dmabuf.c) imported. */
	int (*mem_import)(struct devmem_mem **out, int fd);
	/* A shared buffer of @size bytes for receive buffers of 2^@shift. */
	int (*mem_shared)(struct devmem_mem **out, size_t size, unsigned int shift);
	void (*mem_free)(struct devmem_mem *mem);
	size_t (*mem_size)(const struct devmem_mem *mem);
	int (*mem_fd)(const struct devmem_mem *mem);
	int (*bind_rx)(struct devmem_binding **out, struct devmem_nic *nic,
		       struct devmem_mem *mem, const unsigned int *queues, unsigned int n,
		       uint32_t page_size);
	void (*unbind)(struct devmem_binding *b);
	uint32_t (*binding_id)(const struct devmem_binding *b);
	uint32_t (*binding_page_size)(const struct devmem_binding *b);
	int (*flow_add)(struct devmem_nic *nic, const struct devmem_flow *flow,
			const struct devmem_flow_target *t, uint32_t *rule);
	int (*flow_del)(struct devmem_nic *nic, uint32_t rule);
	/* Whether @fd is a dma-buf rdpmd takes: 0, or -errno with why (dmabuf.c). */
	int (*dmabuf_check)(int fd, char *why, size_t len);
	const char *(*last_error)(void);
};
extern const struct rdpm_nic_ops rdpm_devmem_ops;

/*
 * dmabuf.c: whether @fd, a client's, is a dma-buf open O_RDWR whose
 * exporter the configuration allows (dmabuf_exporters), judged without
 * touching its file system; 0 or an error reply's -errno, why in @why.
 */
int rdpm_dmabuf_check(int fd, char *why, size_t len);
/* What a client's fd is, judged as rdpm_dmabuf_check does (never asking its
 * file system): rdpmd takes only dma-bufs and sockets into its own fd table
 * (closer.c); the others it names in refusals. */
enum rdpm_fd_class {
	RDPM_FD_DMABUF,
	RDPM_FD_SOCKET,		/* TCP/IP stream */
	RDPM_FD_OTHER_SOCKET,
	RDPM_FD_FILE,
	RDPM_FD_PIPE,
	RDPM_FD_ANON,
	RDPM_FD_NONE,
};
enum rdpm_fd_class rdpm_fd_class(int fd);
const char *rdpm_fd_class_name(unsigned int class);
/* Whether fdinfo text @info names an exporter (exp_name) on list @allowed:
 * 0, -EBADF (none) or -EPERM (another), why in @why. */
int rdpm_dmabuf_info_check(const char *info, const struct rdpm_namelist *allowed, char *why,
			   size_t len);

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
	uint64_t refused_preauth;	/* the uid's max_preauth_per_user reached */
	uint64_t preauth_evicted;	/* the oldest without HELLO closed: max_preauth reached */
	uint64_t refused_no_access;	/* a uid that may use no NIC and is no admin */
	uint64_t refused_bindings;	/* max_bindings (all users) reached */
	uint64_t refused_joins;		/* max_joins_per_client or _per_user reached */
	uint64_t closer_full;		/* a client not read: its uid over its closer share */
	uint64_t closer_struck;		/* a client not read: its uid's files stalled the closer */
	uint64_t fds_kept;		/* fds left open in rdpmd: no room to queue them (never expected) */
	uint64_t fds_closed;		/* client fds handed to the closer */
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
	const struct rdpm_nic_ops *ops;	/* the NIC layer (rdpm_devmem_ops) */
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
/* Serves connected socket @fd as a client with credentials @cr (the
 * accept path's SO_PEERCRED; the fuzzer's own); false: refused, closed. */
struct ucred;
bool rdpmd_client_add(int fd, const struct ucred *cr);
/* Reserves the spare fd the accept path uses when out of fds; -errno. */
int rdpmd_clients_init(void);
/* The epoll_wait timeout until the next deadline (a HELLO, the paused
 * listener, the re-check of the sockets that proved flows); -1: none. */
int rdpmd_clients_timeout(void);
/* Acts on the deadlines that passed: closes connections without HELLO,
 * resumes a paused listener, removes flows whose socket is gone. */
/* The next rdpmd_clients_tick re-checks socket-proved rules (tests). */
void rdpmd_flows_recheck(void);
void rdpmd_clients_tick(void);
void rdpmd_client_event(void *client, uint32_t events);
/* A message the closer helper read for client @token (rdpm_closer_read):
 * recvmsg's @n (or -errno) and @flags, the bytes at @data, and @nfds fds,
 * @fds[i] -1 where the helper closed one that was neither a dma-buf nor a
 * socket, @kind[i] what each was (enum rdpm_fd_class). */
void rdpmd_client_read_done(uint64_t token, uid_t uid, int n, int flags, const char *data,
			    const int *fds, const uint8_t *kind, unsigned int nfds);
/* The helper went before reading for client @token: the
 * message still waits in the client's socket, to be read again. */
void rdpmd_client_read_again(uint64_t token);
void rdpmd_clients_reap(void);
void rdpmd_clients_close_all(void);
/* Drops every binding of @c (NULL: everyone's) on @n (NULL: all NICs),
 * telling the clients with @event when non-zero; how many went. */
struct client;
unsigned int rdpmd_drop(struct client *c, struct rdpm_nic *n, uint32_t event);
/* Re-reads the configuration: access lists and quotas change now. */
int rdpmd_reload(void);

#endif
