/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libdevmem internals shared between its source files; not installed. */
#ifndef LIBDEVMEM_INTERNAL_H
#define LIBDEVMEM_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/ethtool.h>
#include <net/if.h>

#include "devmem.h"

#define DEVMEM_EXPORT __attribute__((visibility("default")))

/*
 * Records the thread's error message (printf-style, without a trailing
 * newline) and returns @err, a negative errno, so that callers can write
 * "return devmem_fail(-EINVAL, "%s: queue %u does not exist", ...)".
 */
int devmem_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, appending ": strerror(-err)". */
int devmem_fail_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A dma-buf fd from elsewhere, mapped for the CPU (the fd is duplicated). */
int devmem_mem_import_mapped(struct devmem_mem **out, int fd);

/* rx.c: token batches for SO_DEVMEM_DONTNEED, and the cmsg walk. */
#include <sys/socket.h>
#include <linux/devmem_compat.h>

/* Kernel limits of one SO_DEVMEM_DONTNEED call (net/core/sock.c). */
#define DEVMEM_DONTNEED_MAX_TOKENS	128
#define DEVMEM_DONTNEED_MAX_FRAGS	1024

/* Tokens waiting to go back to the kernel, as coalesced ranges. */
struct devmem_token_batch {
	struct dmabuf_token ranges[DEVMEM_DONTNEED_MAX_TOKENS];
	unsigned int n;			/* ranges in use */
	unsigned int frags;		/* tokens in them */
};

/* Adds @token, coalescing with the last range; 1 (nothing added) when the
 * batch is full and must be flushed first. */
int devmem_tokens_add(struct devmem_token_batch *tb, uint32_t token);
/* SO_DEVMEM_DONTNEED of the batch on @sock; empties it. */
int devmem_tokens_flush(struct devmem_token_batch *tb, int sock);

/* Where devmem_rx_parse_next() is in one receive's cmsgs, and the dma-buf
 * its fragments must lie in (dmabuf_id 0: none declared). */
struct devmem_rx_walk {
	struct cmsghdr *cursor;
	bool started;
	size_t linear_used, reported;
	uint32_t dmabuf_id;
	uint64_t dmabuf_size;
};

/*
 * Walks the cmsgs of one recvmsg(MSG_SOCK_DEVMEM) that returned @bytes with
 * linear bytes at @data; @w zeroed but for the dma-buf before the first
 * call. Returns 1 and the next fragment, 0 at the end, -EPROTO when the
 * cmsgs do not add up to @bytes or a cmsg's length (of any type) does not
 * fit the control buffer, -EBADMSG (the fragment in @frag, for its
 * token) when a dma-buf fragment names dma-buf 0 or another than @w's, or
 * does not lie within @w's dma-buf.
 */
int devmem_rx_parse_next(struct msghdr *msg, struct devmem_rx_walk *w, const uint8_t *data,
			 size_t bytes, struct devmem_frag *frag);
/* A receive of @bytes (linear ones at @data, cmsgs in @msg) becomes the one
 * devmem_rx_next() walks: recvmsg's, or a test's. */
void dm_rx_took(struct devmem_rx *rx, const struct msghdr *msg, uint8_t *data, size_t bytes);

/*
 * tx.c: zero-copy send ids. Every sendmsg(MSG_ZEROCOPY) that moves bytes
 * takes the next id; the kernel reports completed ids as inclusive ranges,
 * possibly out of order.
 */
#define DEVMEM_ZC_WINDOW	65536	/* sends outstanding at most */

struct devmem_zc {
	uint32_t next;			/* id of the next send */
	uint32_t done_below;		/* every id below has completed */
	uint32_t ahead;			/* completed ids at or above done_below */
	uint8_t done[DEVMEM_ZC_WINDOW];	/* by id % window, for ids >= done_below */
};

/* Records completion of ids lo..hi; returns how many were new. */
int devmem_zc_complete(struct devmem_zc *zc, uint32_t lo, uint32_t hi);
bool devmem_zc_done(const struct devmem_zc *zc, uint32_t id);
bool devmem_zc_done_upto(const struct devmem_zc *zc, uint32_t id);
bool devmem_zc_full(const struct devmem_zc *zc);

/*
 * CUDA device memory behind devmem_mem_cuda() (cuda.c). mem.c owns the
 * dma-buf fd; the allocation, its context and libcuda stay with @cuda.
 */
struct devmem_cuda;

/* Allocates @size bytes (rounded up to the page size, in @rsize) on CUDA
 * device @device and exports them as a dma-buf (@fd). */
int devmem_cuda_alloc(struct devmem_cuda **out, int device, size_t size, int *fd,
		      size_t *rsize);
/* Copies @len bytes at @off between the device memory and @host. */
int devmem_cuda_copy(struct devmem_cuda *cuda, uint64_t off, void *host, size_t len,
		     bool to_device);
void devmem_cuda_free(struct devmem_cuda *cuda);
/* The device address of the exported range, its context and libcuda. */
struct devmem_cuda_api;
void devmem_cuda_where(struct devmem_cuda *cuda, unsigned long long *base, void **ctx,
		       const struct devmem_cuda_api **api);
/* @mem's CUDA part, or NULL when it is not CUDA memory (mem.c). */
struct devmem_cuda *devmem_mem_cuda_part(struct devmem_mem *mem);

/* unpack_cpu.c: a devmem_unpack launch run on the CPU (unpack_abi.h), and
 * its fp16/bf16 conversions (round to nearest even). */
struct dm_unpack_launch;
struct dm_unpack_frag;
void dm_unpack_cpu(const struct dm_unpack_launch *l, const struct dm_unpack_frag *f);
/* unpack.c: devmem_unpack_open() on @mem, or without it on @size bytes of
 * host memory at @cpu (tests: the CPU reference of a GPU run). */
int dm_unpack_open(struct devmem_unpack **out, struct devmem_mem *mem, const void *cpu,
		   size_t size);
/* rx_unpack.c: devmem_rx_unpack()'s fragments held per socket, kept in
 * its devmem_rx (rx.c); devmem_rx_close() hands them back unwaited. */
struct dm_rx_pending;
struct dm_rx_pending **dm_rx_pending_of(struct devmem_rx *rx);
void dm_rx_pending_close(struct devmem_rx *rx);
/* Bytes of the current stream not yet added (0 when none is begun). */
uint64_t dm_unpack_room(const struct devmem_unpack *u);
float dm_half_to_float(uint16_t h);
uint16_t dm_float_to_half(float f);
float dm_bf16_to_float(uint16_t b);
uint16_t dm_float_to_bf16(float f);
/* ------------------------------------------------------ netlink (nl.c) */

struct nlattr;

/* What the kernel said about the last failed request. */
struct devmem_nl_ext {
	int err;			/* negative errno, 0 if none */
	char msg[256];			/* extack text, "" if none */
	uint32_t bad_off;		/* NLMSGERR_ATTR_OFFS */
	bool has_bad_attr;		/* the offset matched an attribute: */
	uint16_t bad_nest, bad_type;	/* its nest (0: top level) and type */
	uint32_t bad_value;		/* and its u32/u8 value */
};

/* A generic netlink socket with extended acks; @what prefixes errors.
 * devmem_nl_close(), devmem_nl_request(): devmem.h. */
int devmem_nl_open(struct devmem_nl **out, const char *what);
/* Resolves generic netlink family @name; -ENOENT names it if missing.
 * @ops (optional): bit N set when the family has command N (N < 64). */
int devmem_nl_family(struct devmem_nl *nl, const char *name, uint16_t *id, uint64_t *ops,
		     const char *what);
/* Starts a request in the socket's send buffer (NLM_F_REQUEST | NLM_F_ACK | @flags). */
struct nlmsghdr *devmem_nl_msg(struct devmem_nl *nl, uint16_t family, uint8_t cmd,
			       uint8_t version, uint16_t flags);
/* After devmem_nl_request() failed: the kernel's details, for callers
 * that can say more. */
const struct devmem_nl_ext *devmem_nl_ext(const struct devmem_nl *nl);
/* Fills @ext from the NLMSG_ERROR or NLMSG_DONE @nlh answering @req. */
void devmem_nl_parse_ext(const struct nlmsghdr *nlh, const struct nlmsghdr *req,
			 struct devmem_nl_ext *ext);
/* Records "WHAT: strerror: extack (attribute ...)" and returns @err. */
int devmem_nl_fail(int err, const struct devmem_nl_ext *ext, const char *what);
/* The value of an NLA_UINT (or u8/u16/u32/u64) attribute. */
uint64_t devmem_nl_uint(const struct nlattr *attr);

/* ------------------------------------------------------------ nic (nic.c) */

/*
 * The undo log: each change made through a NIC handle records how to put
 * back what it changed; restoring applies them newest first.
 */
enum devmem_undo_kind {
	DEVMEM_UNDO_RINGS,		/* tcp-data-split and hds-thresh */
	DEVMEM_UNDO_CHANNELS,		/* combined count */
	DEVMEM_UNDO_NTUPLE,		/* the ntuple-filters feature */
	DEVMEM_UNDO_RSS,		/* the main indirection table */
	DEVMEM_UNDO_CTX_DEL,		/* delete a context we created */
	DEVMEM_UNDO_CTX_ADD,		/* re-create a context we deleted */
	DEVMEM_UNDO_RULE_DEL,		/* delete a rule we inserted */
	DEVMEM_UNDO_RULE_ADD,		/* re-insert a rule we deleted */
};

struct devmem_undo {
	enum devmem_undo_kind kind;
	bool failed;			/* the last restore could not apply it */
	union {
		struct { uint8_t data_split; bool has_thresh; uint32_t hds_thresh; } rings;
		uint32_t channels;
		bool ntuple;
		/* RSS: the main table; CTX_ADD: context @ctx's table */
		struct { uint32_t *indir; uint32_t size; bool reset; uint32_t ctx; } rss;
		uint32_t ctx;
		uint32_t rule;
		struct { struct ethtool_rx_flow_spec fs; uint32_t rss_ctx; } add;
	};
};

struct devmem_undo_log {
	struct devmem_undo *v;
	size_t n, cap;
	struct devmem_journal *journal;	/* its state file (reserve.c), or NULL */
};

/* Appends @u (taking its rss.indir) and writes the journal; on failure
 * frees it and returns -ENOMEM or the journal's error, with a message. */
int devmem_undo_push(struct devmem_undo_log *log, const struct devmem_undo *u);
/* Drops the newest entry (a change that did not happen after all). */
void devmem_undo_pop(struct devmem_undo_log *log);
/* Drops the newest entry of @kind for context/rule @id; true if found. */
bool devmem_undo_forget(struct devmem_undo_log *log, enum devmem_undo_kind kind, uint32_t id);
/* Applies every entry, newest first, through @apply; continues past errors
 * and returns the first. Entries applied are dropped, failed ones kept. */
int devmem_undo_run(struct devmem_undo_log *log,
		    int (*apply)(void *ctx, const struct devmem_undo *u), void *ctx);
void devmem_undo_free(struct devmem_undo_log *log);

/*
 * reserve.c: a log mirrored to a state file, rewritten (write + rename)
 * whenever the log changes, so another process can undo it. 0 when the
 * log has no journal.
 */
int devmem_journal_sync(const struct devmem_undo_log *log);
/* Starts mirroring @log to @path, which must not exist yet. */
int devmem_journal_attach(struct devmem_undo_log *log, const char *path,
			  const struct devmem_reservation *resv);
/* Reads state file @path: its reservation and its log (no journal). */
int devmem_journal_read(const char *path, struct devmem_reservation *resv,
			struct devmem_undo_log *log);
/* Applies @log to @nic, newest first, as devmem_nic_restore() does (nic.c). */
int devmem_nic_undo(struct devmem_nic *nic, struct devmem_undo_log *log);
/* The log of @nic's changes, to attach a journal to. */
struct devmem_undo_log *devmem_nic_log(struct devmem_nic *nic);

/*
 * Builds the ntuple rule for @flow and @target on @ifname (for messages):
 * TCP over IPv4 or IPv6, zero addresses and ports as wildcards, the queue
 * in ring_cookie or, with an RSS context, FLOW_RSS and the context in
 * *@rss_ctx. Never a drop rule.
 */
int devmem_flow_spec(const char *ifname, const struct devmem_flow *flow,
		     const struct devmem_flow_target *target, struct ethtool_rx_flow_spec *fs,
		     uint32_t *rss_ctx);

/* An open interface (nic.c); its changes go to @undo. */
struct devmem_nic {
	char name[IF_NAMESIZE];
	int ifindex;
	struct devmem_nl *nl;
	uint16_t ethtool, netdev;	/* generic netlink family ids */
	int ioctl_fd;			/* any socket, for SIOCETHTOOL */
	bool rss_ioctl;			/* no RSS_SET/RSS_CREATE_ACT netlink */
	struct devmem_undo_log undo;
};

/* nic.c: an ethtool request for @nic (@set: omit the reply) */
struct nlmsghdr *devmem_ethtool_msg(struct devmem_nic *nic, uint8_t cmd, uint16_t hdr_type,
				    bool set);
/* SIOCETHTOOL with @cmd on @nic: 0 or -errno */
int devmem_ethtool_ioctl(struct devmem_nic *nic, void *cmd);

/* the ntuple-filters feature: whether the driver can switch it, and whether on */
struct feature {
	const char *name;
	bool hw, active;
};

int devmem_ntuple_get(struct devmem_nic *nic, struct feature *ft);

/* rss.c: the main table (ctx 0) or a context's; the caller frees r->indir */
struct rss {
	uint32_t *indir;
	uint32_t size;
	bool nomem;
};

int devmem_rss_get(struct devmem_nic *nic, uint32_t ctx, struct rss *r);
/* the main table (@size 0: the driver's default) */
int devmem_rss_set(struct devmem_nic *nic, const uint32_t *indir, uint32_t size, const char *what);
/* a context with table @t: id @want (0: any) where netlink lets us choose;
 * its id in *@id */
int devmem_rss_ctx_create(struct devmem_nic *nic, uint32_t want, const uint32_t *t,
			  uint32_t size, uint32_t *id, const char *what);
int devmem_rss_ctx_delete(struct devmem_nic *nic, uint32_t ctx, const char *what);

/* flow.c: SIOCETHTOOL rule insertion and deletion, without undo records */
int devmem_rule_insert(struct devmem_nic *nic, struct ethtool_rx_flow_spec *fs, uint32_t rss_ctx);
int devmem_rule_delete(struct devmem_nic *nic, uint32_t loc);

/* A NIC handle without kernel state, for tests of argument checks. */
struct devmem_nic *devmem_nic_alloc(const char *ifname, int ifindex);
/* RSS through SIOCETHTOOL as on kernels without ethtool netlink RSS_SET
 * and RSS_CREATE_ACT (chosen by itself at open), to test that path. */
void devmem_nic_rss_use_ioctl(struct devmem_nic *nic);
/* The RX queue count, for range checks (bindings); reads the channels. */
int devmem_nic_rx_queues(struct devmem_nic *nic, unsigned int *count);

#endif
