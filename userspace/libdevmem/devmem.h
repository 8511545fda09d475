/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libdevmem: devmem TCP from user space.
 *
 *   memory     dma-bufs to receive into and send from: udmabuf over a
 *              sealed memfd, a dma-heap, CUDA device memory
 *   nic        header split, channels, RSS and flow rules of one interface,
 *              every change undone on request
 *   binding    a dma-buf bound to RX queues or for TX (netdev netlink)
 *   rx         recvmsg(MSG_SOCK_DEVMEM), fragment iteration, token return
 *   tx         devmem TX sends and their zero-copy completions
 *   zcrx       io_uring zero-copy receive on one queue
 *
 * The clients of rdpmd, which set up receive for applications without
 * privileges, are in devmem_rdpm.h.
 *
 * Errors: functions returning int return 0 (or a count where stated) on
 * success and a negative errno on failure; devmem_last_error() then says
 * what failed, on which interface and queue, and what to change. Pointer
 * arguments marked "out" are written only on success.
 *
 * Threads: the library has no global state apart from the per-thread
 * error message. An object may be used by one thread at a time; different
 * objects may be used concurrently.
 *
 * Lifetimes: a binding lives as long as its devmem_binding object (the kernel
 * ties it to the netlink socket inside). Its memory must outlive it; the
 * kernel keeps the dma-buf until queues, sockets holding fragments and TX
 * skbs let go, so freeing memory after unbinding is always safe. Fragments
 * received into a binding stay owned by the application until released.
 */
#ifndef LIBDEVMEM_DEVMEM_H
#define LIBDEVMEM_DEVMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The last error of this thread, with context; never NULL. */
const char *devmem_last_error(void);

/* ------------------------------------------------------------------ memory */

enum devmem_mem_kind {
	DEVMEM_MEM_UDMABUF,	/* host pages of a sealed memfd */
	DEVMEM_MEM_HEAP,	/* a /dev/dma_heap heap */
	DEVMEM_MEM_CUDA,	/* CUDA device memory */
	DEVMEM_MEM_IMPORT,	/* a dma-buf fd from elsewhere (devmem_mem_import) */
};

/* devmem_mem_udmabuf() flags */
#define DEVMEM_MEM_HUGEPAGES	(1u << 0)	/* back the memfd with 2 MiB pages */

struct devmem_mem;

/* @size is rounded up to the page size (2 MiB with DEVMEM_MEM_HUGEPAGES). */
int devmem_mem_udmabuf(struct devmem_mem **out, size_t size, unsigned int flags);
/* @heap: a name under /dev/dma_heap, NULL for "system". */
int devmem_mem_heap(struct devmem_mem **out, const char *heap, size_t size);
/*
 * Device memory of CUDA device @device exported as a dma-buf. libcuda is
 * loaded at run time: without it (or without a GPU) this fails with -ENODEV
 * and says why.
 */
int devmem_mem_cuda(struct devmem_mem **out, int device, size_t size);
/*
 * Wraps a dma-buf fd made elsewhere (received over a socket): the fd is
 * duplicated, the caller keeps its own. -EBADF when @fd is not a dma-buf.
 * Not mapped: CPU access to it fails.
 */
int devmem_mem_import(struct devmem_mem **out, int fd);
/* Frees the memory; the dma-buf lives on while the kernel still uses it. */
void devmem_mem_free(struct devmem_mem *mem);

int devmem_mem_fd(const struct devmem_mem *mem);
size_t devmem_mem_size(const struct devmem_mem *mem);
enum devmem_mem_kind devmem_mem_kind(const struct devmem_mem *mem);
/* CUDA memory's device address (a CUdeviceptr), for kernels and copies of
 * the caller's; NULL for other kinds. */
void *devmem_mem_cuda_ptr(struct devmem_mem *mem);

/* CPU access directions */
#define DEVMEM_CPU_READ		(1u << 0)
#define DEVMEM_CPU_WRITE	(1u << 1)

/*
 * CPU access to host memory (udmabuf, heap): returns the mapping of the
 * whole buffer, valid until devmem_cpu_end(), with the dma-buf's caches
 * synchronised for @dir (DMA_BUF_IOCTL_SYNC). NULL with -EOPNOTSUPP for
 * CUDA memory: use devmem_mem_read()/devmem_mem_write().
 */
void *devmem_cpu_begin(struct devmem_mem *mem, unsigned int dir);
int devmem_cpu_end(struct devmem_mem *mem, unsigned int dir);
/* Copies between any kind of memory and a host buffer. */
int devmem_mem_read(struct devmem_mem *mem, uint64_t off, void *dst, size_t len);
int devmem_mem_write(struct devmem_mem *mem, uint64_t off, const void *src, size_t len);

/* ----------------------------------------------------------------- kernel */

/* What the running kernel offers (devmem_kernel_features()). */
#define DEVMEM_KF_BIND_RX	(1u << 0)	/* devmem RX: netdev bind-rx (6.12) */
#define DEVMEM_KF_BIND_TX	(1u << 1)	/* devmem TX: netdev bind-tx (6.15) */
#define DEVMEM_KF_ZCRX		(1u << 2)	/* io_uring zero-copy receive (6.15) */
#define DEVMEM_KF_RSS_NETLINK	(1u << 3)	/* RSS contexts over ethtool netlink */

/*
 * Sets *@features to the DEVMEM_KF_* the running kernel offers, asking the
 * kernel itself (backports count). Needs no privilege.
 */
int devmem_kernel_features(unsigned int *features);
/* "bind-rx", "bind-tx", ... for one DEVMEM_KF_* bit; NULL for others. */
const char *devmem_kernel_feature_name(unsigned int feature);

/* --------------------------------------------------------------------- nic */

struct devmem_nic;

struct devmem_nic_state {
	unsigned int rx_queues;		/* combined channels in use */
	unsigned int max_queues;
	bool header_split;		/* tcp-data-split enabled */
	uint32_t hds_thresh;
	uint32_t hds_thresh_max;
	bool ntuple;			/* the ntuple feature is on */
	uint32_t rss_indir_size;
};

/*
 * Opens interface @ifname of the caller's network namespace: -ENODEV names
 * it when it does not exist. Changes need CAP_NET_ADMIN; reading does not.
 */
int devmem_nic_open(struct devmem_nic **out, const char *ifname);
/*
 * Closes the NIC handle; with @restore, undoes its changes first. Bindings
 * made with the handle are not affected: they stay bound until
 * devmem_unbind(). While a queue is bound the kernel refuses to turn header
 * split off, so restoring with bindings alive leaves it on (and records
 * why in devmem_last_error()): unbind first.
 */
void devmem_nic_close(struct devmem_nic *nic, bool restore);
/*
 * Undoes every change made through @nic, newest first (rules, contexts,
 * the RSS table, channels, ntuple, header split), so dependent state goes
 * before what it depends on; continues past errors and returns the first.
 * What could not be undone stays recorded, so a later call retries it
 * (after devmem_unbind(), for header split).
 * A rule or context deleted explicitly through @nic leaves the log; a rule
 * that @nic did not create and deleted is re-inserted. Rules the kernel
 * dropped itself (turning ntuple off flushes them) count as undone.
 */
int devmem_nic_restore(struct devmem_nic *nic);

const char *devmem_nic_name(const struct devmem_nic *nic);
int devmem_nic_ifindex(const struct devmem_nic *nic);
int devmem_nic_state(struct devmem_nic *nic, struct devmem_nic_state *out);

/*
 * Header split on (tcp-data-split "on", not "auto") with hds-thresh 0, what
 * devmem needs; or off, with hds-thresh back to its value before the first
 * change through @nic. -EOPNOTSUPP when the driver has no header split.
 */
int devmem_nic_set_header_split(struct devmem_nic *nic, bool on);
/* The number of combined channels (RX/TX queue pairs). */
int devmem_nic_set_queues(struct devmem_nic *nic, unsigned int count);
/* The ntuple-filters feature; turning it off removes every rule. */
int devmem_nic_set_ntuple(struct devmem_nic *nic, bool on);
/* Spreads the main RSS table evenly over queues [first, first + count). */
int devmem_nic_rss_spread(struct devmem_nic *nic, unsigned int first, unsigned int count);
/* A new RSS context over queues [first, first + count); its id in @ctx. */
int devmem_nic_rss_ctx_add(struct devmem_nic *nic, unsigned int first, unsigned int count,
			   uint32_t *ctx);
int devmem_nic_rss_ctx_del(struct devmem_nic *nic, uint32_t ctx);

/*
 * A TCP flow as the receiving NIC sees it: the peer is the source. Zero
 * addresses or ports are wildcards (a 3-tuple rule: local address and port).
 */
struct devmem_flow {
	int family;			/* AF_INET or AF_INET6 */
	uint8_t src[16], dst[16];	/* network order; IPv4 in the first 4 */
	uint16_t sport, dport;		/* host order */
};

/* Where a flow rule sends matching frames. */
struct devmem_flow_target {
	unsigned int queue;		/* with rss_ctx 0: this queue */
	uint32_t rss_ctx;		/* non-zero: this RSS context (queue is
					 * then an offset into it, usually 0) */
};

/* Installs a rule at a free location; its location in @rule. ntuple must be
 * on (-EOPNOTSUPP says so otherwise). */
int devmem_nic_flow_add(struct devmem_nic *nic, const struct devmem_flow *flow,
			const struct devmem_flow_target *target, uint32_t *rule);
int devmem_nic_flow_del(struct devmem_nic *nic, uint32_t rule);
/* The location of a rule matching exactly @flow (wherever it sends it) in
 * @rule; -ENOENT when there is none. */
int devmem_nic_flow_find(struct devmem_nic *nic, const struct devmem_flow *flow, uint32_t *rule);

/*
 * Queues reserved for devmem: header split on (hds-thresh 0), ntuple on, the
 * main RSS table over the other queues and an RSS context over the reserved
 * ones, so that only flows steered there land in a dma-buf.
 */
struct devmem_reservation {
	int ifindex;
	unsigned int queues;		/* RX queues while reserved */
	unsigned int first, count;	/* the reserved queues: [first, first + count) */
	uint32_t rss_ctx;		/* the RSS context over them */
};

/* Where `devmem nic setup` keeps its state files, IFNAME.state. */
#define DEVMEM_STATE_DIR	"/run/devmem"

/*
 * Reserves the last @count RX queues of @nic (with @queues non-zero, after
 * setting that many channels). With @state, a path, every change made
 * through @nic from then on (flow rules too) is also written to that file
 * before it takes effect, so that devmem_nic_release() can undo it from
 * another process, or after the owner crashed; -EEXIST when the file exists.
 * A failure undoes the changes made through @nic.
 */
int devmem_nic_reserve(struct devmem_nic *nic, unsigned int queues, unsigned int count,
		       const char *state, struct devmem_reservation *out);
/* The reservation that state file @state records; -ENOENT when none. */
int devmem_nic_reservation(const char *state, struct devmem_reservation *out);
/* The reservation of @nic that `devmem nic setup` recorded (its state file in
 * DEVMEM_STATE_DIR); -ENOENT when none. */
int devmem_nic_reserved(struct devmem_nic *nic, struct devmem_reservation *out);
/* The queue a process binds to directly on @nic: the last one reserved (its
 * state file in DEVMEM_STATE_DIR; returns 1), else the NIC's last queue,
 * prepared by hand (returns 0). */
int devmem_nic_devmem_queue(struct devmem_nic *nic, unsigned int *queue);
/*
 * Undoes a reservation and every change recorded with it, newest first (flow
 * rules, the RSS context, the RSS table, ntuple, header split, channels),
 * and removes @state. @nic is the handle that reserved, or any handle of the
 * same device (the changes are then read from @state; a state file of an
 * earlier device with another ifindex is removed with -ESTALE). What could
 * not be undone stays in @state for a later call. Returns the number of
 * flow rules deleted.
 */
int devmem_nic_release(struct devmem_nic *nic, const char *state);

/* Kernel state, for tools: queues of the device as netdev netlink shows them. */
struct devmem_queue_info {
	unsigned int id;
	bool rx;			/* RX queue (else TX) */
	uint32_t napi_id;
	uint32_t dmabuf_id;		/* RX: bound dmabuf, 0 if none */
	bool io_uring;			/* RX: an io_uring zcrx area is installed */
};

/* Up to @max queues into @out; returns how many the device has. */
int devmem_nic_queues(struct devmem_nic *nic, struct devmem_queue_info *out, unsigned int max);

/* A page pool of the device (netdev page-pool-get), for tools. */
struct devmem_page_pool_info {
	uint64_t id;
	uint32_t napi_id;		/* of its queue; 0 once detached */
	uint64_t inflight;		/* buffers handed out and not yet back */
	uint64_t inflight_mem;		/* their bytes */
	uint32_t dmabuf_id;		/* buffers of this binding; 0: host memory */
	bool io_uring;			/* buffers of an io_uring area */
	bool detached;			/* its queue is gone; it waits for buffers */
};

/* Up to @max page pools into @out; returns how many the device has. */
int devmem_nic_page_pools(struct devmem_nic *nic, struct devmem_page_pool_info *out,
			  unsigned int max);

struct devmem_qstats {
	uint64_t rx_packets, rx_bytes, rx_alloc_fail;
	uint64_t tx_packets, tx_bytes;
};

/* Per-queue counters (qstats-get); @queue < 0: the whole device. */
int devmem_nic_qstats(struct devmem_nic *nic, int queue, struct devmem_qstats *out);

/* ----------------------------------------------------------------- binding */

struct devmem_binding;

/*
 * Binds @mem to RX queues @queues[0..n) of @nic (header split must be on;
 * the kernel restarts each queue). The flows to receive must be steered
 * there (devmem_nic_flow_add).
 *
 * Each binding owns its netlink socket: it is independent of other
 * bindings and of @nic, which may be closed (with or without restore)
 * while the binding lives on. It ends with devmem_unbind() or when the
 * process exits.
 */
int devmem_bind_rx(struct devmem_binding **out, struct devmem_nic *nic, struct devmem_mem *mem,
		   const unsigned int *queues, unsigned int n);
/*
 * devmem_bind_rx() with RX buffers of @page_size bytes (netdev's
 * rx-page-size, Linux 7.3; 0 or the page size: the default), so that a
 * segment larger than a page lands in one fragment. The driver must support
 * it, and the dma-buf's chunks must be aligned to it: huge-page udmabufs
 * and dma-heaps are, udmabufs of small pages in general not.
 */
int devmem_bind_rx_page_size(struct devmem_binding **out, struct devmem_nic *nic,
			     struct devmem_mem *mem, const unsigned int *queues, unsigned int n,
			     uint32_t page_size);
/* Binds @mem for sending through @nic (unprivileged). */
int devmem_bind_tx(struct devmem_binding **out, struct devmem_nic *nic, struct devmem_mem *mem);
/* Unbinds: RX queues restart on host memory. */
void devmem_unbind(struct devmem_binding *binding);

/* The dmabuf id the kernel reports in cmsgs and expects in TX cmsgs. */
uint32_t devmem_binding_id(const struct devmem_binding *binding);
struct devmem_mem *devmem_binding_mem(const struct devmem_binding *binding);
/* The size of an RX binding's buffers; 0 for a TX binding. */
uint32_t devmem_binding_page_size(const struct devmem_binding *binding);

/* ---------------------------------------------------------------------- rx */

/* One piece of received data, in stream order. */
struct devmem_frag {
	uint64_t offset;	/* dma-buf offset (dmabuf frags) */
	uint32_t len;
	uint32_t token;		/* to release (dmabuf frags) */
	uint32_t dmabuf_id;	/* 0 for linear bytes */
	const void *linear;	/* linear bytes: a copy in host memory, valid
				 * until the next receive; NULL otherwise */
};

/*
 * Unpacking received fragments (unpack.c): the fragments of one stream,
 * batch after batch, copied into a contiguous destination or reduced into
 * it element by element (dst = dst op stream), reading them in place in
 * the dma-buf. On CUDA memory a GPU kernel does it (dst is then a device
 * pointer) and a batch's fragments may go back once
 * devmem_unpack_completed() counts it; on host memory the CPU does, at
 * once. See devmem_unpack_open(3).
 */
enum devmem_unpack_type {
	DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_FP16, DEVMEM_UNPACK_BF16, DEVMEM_UNPACK_FP32,
	DEVMEM_UNPACK_FP64,
};
enum devmem_unpack_op {
	DEVMEM_UNPACK_COPY, DEVMEM_UNPACK_SUM, DEVMEM_UNPACK_PROD, DEVMEM_UNPACK_MIN,
	DEVMEM_UNPACK_MAX, DEVMEM_UNPACK_AVG,
};
#define DEVMEM_UNPACK_MAX_FRAGS	4096	/* per batch */

struct devmem_unpack;

int devmem_unpack_open(struct devmem_unpack **out, struct devmem_mem *mem);
/* A new stream of @len bytes into @dst; AVG divides by @avg_n (1 but for
 * the last contribution). */
int devmem_unpack_begin(struct devmem_unpack *u, void *dst, size_t len,
			enum devmem_unpack_type type, enum devmem_unpack_op op,
			unsigned int avg_n);
/* The stream's next @n fragments, one launch: its number (from 1) or -errno. */
int devmem_unpack_add(struct devmem_unpack *u, const struct devmem_frag *f, unsigned int n);
/* How many batches have finished (all of them, with @wait), or -errno. */
int devmem_unpack_completed(struct devmem_unpack *u, bool wait);
void devmem_unpack_close(struct devmem_unpack *u);

struct devmem_rx;

/* Receive state of TCP socket @sock: buffers for data and cmsgs, pending
 * tokens. @max_bytes bounds one receive (0: 1 MiB). */
int devmem_rx_open(struct devmem_rx **out, int sock, size_t max_bytes);
/* Returns the tokens still held and frees the state (not the socket). */
void devmem_rx_close(struct devmem_rx *rx);

/*
 * One recvmsg(MSG_SOCK_DEVMEM) with @flags (MSG_DONTWAIT ...). Returns the
 * bytes received (0 at end of stream); iterate them with devmem_rx_next().
 * -EFAULT names the cause when data arrived outside any binding.
 */
ssize_t devmem_rx_recv(struct devmem_rx *rx, int flags);
/* The next fragment of the last receive: 1, or 0 when there are no more. */
int devmem_rx_next(struct devmem_rx *rx, struct devmem_frag *frag);
/*
 * The dma-buf @rx's data lands in: binding @dmabuf_id (devmem_binding_id(),
 * rdpm_buffer.dmabuf_id), @size bytes (devmem_mem_size()). A consumer that
 * reads fragments at their offsets must declare it. From then on a dma-buf
 * fragment of another dma-buf, or not wholly within @size, never reaches
 * the caller: the receive fails with -EBADMSG saying which, and its tokens
 * (the refused fragment's and the rest of that receive's) go back to the
 * kernel. Undeclared, only fragments of dma-buf 0
 * or whose end overflows are refused.
 */
int devmem_rx_set_buffer(struct devmem_rx *rx, uint32_t dmabuf_id, uint64_t size);

/*
 * Hands a dma-buf fragment back to the kernel. Tokens are batched and
 * coalesced into ranges; a batch goes out when full (128 ranges or 1024
 * fragments, the kernel's limits per call) or on devmem_rx_flush().
 * Linear fragments need no release (ignored).
 */
int devmem_rx_release(struct devmem_rx *rx, const struct devmem_frag *frag);
int devmem_rx_flush(struct devmem_rx *rx);
/* Fragments received and not yet handed back to the kernel. */
uint64_t devmem_rx_held(const struct devmem_rx *rx);

/*
 * Keeps TCP socket @sock's receive window below half of what @buf_bytes of
 * receive buffers (page-sized) hold in full-sized segments, so segments
 * queued out of order after a drop cannot take every buffer and starve the
 * resend that fills the hole (the connection would stall for good).
 * @buf_bytes is what this socket may fill: its share of the dma-buf, less
 * what the application keeps held. Fixes SO_RCVBUF and sets
 * TCP_WINDOW_CLAMP where autotuning could open the window wider (a caller
 * that wants it smaller sets its own clamp afterwards). Returns the clamp in
 * bytes, 0 when none is needed, or -EINVAL when @buf_bytes holds fewer than
 * 8 buffers.
 * devmem_zcrx_recv() applies it with the area's size.
 */
int devmem_rx_limit_window(int sock, size_t buf_bytes);

/*
 * Receives exactly @len bytes as fragments into @frags (at most @max; the
 * count in @nfrags): dma-buf fragments as received, linear bytes copied into
 * @linear (capacity @linear_cap) with each linear fragment pointing there.
 * Returns the bytes received: @len, or fewer when @max or @linear_cap ran
 * out first (the rest stays in the socket for the next call); 0 at end of
 * stream before the first byte; -EPIPE when the stream ends mid-way (the
 * fragments received so far are in @frags and must still be released).
 */
ssize_t devmem_rx_recv_exact(struct devmem_rx *rx, size_t len, struct devmem_frag *frags,
			     unsigned int max, unsigned int *nfrags, void *linear,
			     size_t linear_cap);
/*
 * devmem_rx_recv_exact() that also stops when the socket has nothing more
 * with MSG_DONTWAIT in @flags: the bytes received (at most @len, at least
 * 1), -EAGAIN when none were there, 0 at end of stream, -EPIPE when it ends
 * within @len. For callers that must not block: call again with what is
 * left of the message.
 */
ssize_t devmem_rx_recv_upto(struct devmem_rx *rx, size_t len, int flags,
			    struct devmem_frag *frags, unsigned int max, unsigned int *nfrags,
			    void *linear, size_t linear_cap);

/*
 * Receives up to @len bytes of @rx's stream (as devmem_rx_recv_upto: all
 * of them, or with MSG_DONTWAIT in @flags what is there, -EAGAIN if
 * nothing) and adds them to @u's current stream as one batch
 * (devmem_unpack_add). The batch's dma-buf fragments are held until
 * devmem_unpack_completed() counts it, then handed back on a later call:
 * on CUDA memory the next receive overlaps the kernel reading this one.
 * Returns the bytes, 0 at end of stream, -EPIPE when it ended mid-way,
 * -ENOSPC when the destination is full. See devmem_rx_unpack(3).
 */
ssize_t devmem_rx_unpack(struct devmem_rx *rx, struct devmem_unpack *u, size_t len, int flags);
/* Waits for every batch devmem_rx_unpack() launched and hands back its
 * fragments. Before devmem_rx_close() and devmem_unpack_close(). */
int devmem_rx_unpack_wait(struct devmem_rx *rx);

/* ---------------------------------------------------------------------- tx */

struct devmem_tx;

/* Devmem sends on connected TCP socket @sock from @binding (a TX binding on
 * the route's device); sets SO_ZEROCOPY. */
int devmem_tx_open(struct devmem_tx **out, int sock, struct devmem_binding *binding);
/* Waits up to @timeout_ms for outstanding sends, then frees the state. */
void devmem_tx_close(struct devmem_tx *tx, int timeout_ms);

/*
 * Sends up to @len bytes at dma-buf offset @off (one sendmsg). Returns the
 * bytes sent; the send's completion id, for devmem_tx_done(), in @id.
 */
ssize_t devmem_tx_send(struct devmem_tx *tx, uint64_t off, size_t len, int flags, uint32_t *id);
/* Reads completions from the error queue, waiting up to @timeout_ms
 * (0: none, -1: forever) for one; returns the number of sends completed. */
int devmem_tx_reap(struct devmem_tx *tx, int timeout_ms);
/* Whether send @id has completed (the device no longer reads its range). */
bool devmem_tx_done(const struct devmem_tx *tx, uint32_t id);
/* Waits until send @id (and every earlier one) has completed. */
int devmem_tx_wait(struct devmem_tx *tx, uint32_t id, int timeout_ms);
/* Sends not yet completed. */
uint32_t devmem_tx_pending(const struct devmem_tx *tx);

/* -------------------------------------------------------------------- zcrx */

struct devmem_zcrx;

/* io_uring zero-copy receive on RX queue @queue of @nic. The area is @mem
 * (a dma-buf) or, with @mem NULL, @area_size bytes of user memory. */
int devmem_zcrx_open(struct devmem_zcrx **out, struct devmem_nic *nic, unsigned int queue,
		     struct devmem_mem *mem, size_t area_size);
/* The same with receive buffers of @page_size bytes (a power of two from the
 * page size up; 0: pages), on kernels whose zcrx takes rx_buf_len (7.x). */
int devmem_zcrx_open_page_size(struct devmem_zcrx **out, struct devmem_nic *nic,
			       unsigned int queue, struct devmem_mem *mem, size_t area_size,
			       uint32_t page_size);
/* The size of each receive buffer, as the kernel set it. */
uint32_t devmem_zcrx_page_size(const struct devmem_zcrx *z);
void devmem_zcrx_close(struct devmem_zcrx *z);

/* Starts receiving on TCP socket @sock (a multishot RECV_ZC). */
int devmem_zcrx_recv(struct devmem_zcrx *z, int sock);

struct devmem_zcrx_chunk {
	int sock;
	uint64_t offset;	/* in the area */
	uint32_t len;		/* 0: the socket's stream ended */
	const void *data;	/* user-memory areas: the bytes; else NULL */
	uint64_t cookie;	/* for devmem_zcrx_release() */
};

/* Up to @max received chunks, waiting up to @timeout_ms for the first. */
int devmem_zcrx_wait(struct devmem_zcrx *z, struct devmem_zcrx_chunk *chunks, unsigned int max,
		     int timeout_ms);
/* Hands a chunk's buffer back through the refill ring. */
int devmem_zcrx_release(struct devmem_zcrx *z, const struct devmem_zcrx_chunk *chunk);

/* ----------------------------------------------------------------- netlink */

/*
 * libdevmem's netlink requests, for tools that send rtnetlink requests of
 * their own (devtcp-pair, devtcp-fault): replies fed to a callback up to
 * the ack, a kernel refusal recorded for devmem_last_error() as "WHAT:
 * strerror: extack". See devmem_nl_open_route(3).
 */
struct nlmsghdr;
struct devmem_nl;

/* A NETLINK_ROUTE socket with extended acks; @what prefixes errors. */
int devmem_nl_open_route(struct devmem_nl **out, const char *what);
void devmem_nl_close(struct devmem_nl *nl);
/* Starts an RTM_*LINK request for @ifindex (0: by IFLA_IFNAME) in the
 * socket's send buffer (NLM_F_REQUEST | NLM_F_ACK | @flags). */
struct nlmsghdr *devmem_nl_link_msg(struct devmem_nl *nl, uint16_t type, uint16_t flags,
				    int ifindex);
/* Called for each reply message; a negative return ends the request with it. */
typedef int (*devmem_nl_cb)(const struct nlmsghdr *nlh, void *data);
/*
 * Sends @req and feeds replies to @cb up to the ack (or NLMSG_DONE of a
 * dump). Returns 0, @cb's error, or the kernel's (a negative errno), then
 * recording "WHAT: strerror: extack (attribute ...)".
 */
int devmem_nl_request(struct devmem_nl *nl, struct nlmsghdr *req, devmem_nl_cb cb, void *data,
		      const char *what);

#ifdef __cplusplus
}
#endif

#endif
