/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * btl/devtcp: an Open MPI byte transfer layer over TCP whose large payloads
 * travel on separate data connections, so that a receiver with a devmem
 * queue can steer them into a dma-buf while the PML's headers stay in host
 * memory.
 *
 * Each ordered pair of ranks has its own connections, opened by the sender:
 * one control connection (wire headers, PML headers, small payloads) and
 * btl_devtcp_data_links data connections (payload bytes only). A receiver
 * never sends on a connection it accepted, so no connect race needs
 * resolving. See Documentation/openmpi.rst.
 */
#ifndef BTL_DEVTCP_H
#define BTL_DEVTCP_H

#include "opal_config.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"
#include "opal/util/proc.h"

#include "btl_devtcp_compat.h"
#include "btl_devtcp_wire.h"

#define DEVTCP_MAX_LINKS 8
#define DEVTCP_MAX_IFS 8	/* interfaces, so modules, per rank */

struct devmem_rx;
struct devmem_frag;

/* What a rank publishes in the modex, one per interface (module). */
struct devtcp_addr {
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint8_t devmem;		/* payloads land in a dma-buf here */
	uint16_t ctrl_port;	/* network order */
	uint16_t data_port;	/* network order */
	uint8_t prefix;		/* bits of the interface's subnet */
	uint8_t pad;
	uint8_t ip[16];		/* network order; IPv4 in the first 4 */
};

#define DEVTCP_ADDRSTRLEN INET6_ADDRSTRLEN

/* The modex blob: the rank's secret, then one devtcp_addr per interface.
 * PMIx carries it to the job's processes only; the hello proves knowledge
 * of the secret without sending it. */
#define DEVTCP_MODEX_MIN (DEVTCP_KEY_LEN + sizeof(struct devtcp_addr))

/* Connections accepted and still without a hello, in all and from one
 * address: past either, the oldest is closed. */
#define DEVTCP_MAX_PENDING 64
#define DEVTCP_MAX_PENDING_SRC 16

/* What register_mem hands the PML: the PML gives it to the peer that puts
 * into the region, whose put frame names it. */
struct mca_btl_base_registration_handle_t {
	uint64_t id;
};

/* A region the PML registered (register_mem): a put may write it only. */
struct devtcp_reg {
	struct devtcp_reg *next;
	struct mca_btl_base_endpoint_t *ep;	/* the only writer; NULL: any peer */
	struct devtcp_region region;
	mca_btl_base_registration_handle_t handle;
	unsigned int pins;	/* puts naming it under way (reg_lock) */
	unsigned int writing;	/* of which writing into it now */
	bool gone;		/* deregistered: the last unpin frees it */
};

/* A descriptor: the PML's view (base) and what sending it needs; a put's
 * completion too. */
struct devtcp_frag {
	mca_btl_base_descriptor_t base;
	mca_btl_base_segment_t segs[2];
	struct devtcp_frag *next;
	struct mca_btl_base_endpoint_t *ep;
	size_t reserve;		/* PML header bytes at the front, 0: unknown */
	struct devtcp_frame frame;
	struct iovec iov[3];	/* control connection: frame, header, rest */
	int iov_count, iov_done;
	struct iovec data;	/* data connection: what remains to write */
	struct devtcp_put put;	/* a put: where its bytes go in the peer */
	mca_btl_base_rdma_completion_fn_t put_done;
	void *put_context, *put_cbdata;
	size_t cap;
	unsigned char buf[];
};

/* Reading the control connection (devtcp_ctrl_step), or a message's
 * payload from its data link. */
enum devtcp_rx_state { RX_FRAME, RX_DATA };

/*
 * One peer. The send half is ours; the receive half is the peer's.
 *
 * Threads (MPI_THREAD_MULTIPLE): the send half belongs to whoever holds
 * send_lock; the receive half, like the module's listeners, pending
 * connections and dma-buf, to the one thread that holds the module's
 * rx_lock, which progress only ever tries. Neither lock is held while the
 * PML is called back for a finished send, so the PML may send again from
 * there; messages are delivered with rx_lock held, and the PML's send from
 * that callback takes only send_lock. Endpoints are added at the head of
 * the module's list under ep_lock and never removed before finalize, so
 * the list is walked without a lock.
 */
struct mca_btl_base_endpoint_t {
	struct mca_btl_base_endpoint_t *next;
	opal_proc_t *proc;
	opal_process_name_t name;
	struct devtcp_addr addr;	/* the one we connect to */
	bool have_addr;
	uint8_t key[DEVTCP_KEY_LEN];	/* its secret: our hellos to it prove we know it */
	struct devtcp_addr addrs[DEVTCP_MAX_IFS];	/* all it published: its
							 * connections come from these */
	int naddrs;
	/* send half */
	pthread_mutex_t send_lock;
	int ctrl_fd;
	int data_fd[DEVTCP_MAX_LINKS];
	int next_link;
	struct devtcp_frag *sendq, *sendq_tail;
	bool said_bye;
	/* receive half */
	int rx_ctrl_fd;
	int rx_data_fd[DEVTCP_MAX_LINKS];
	bool rx_ctrl_used, rx_data_used[DEVTCP_MAX_LINKS];	/* a slot is filled once */
	uint64_t rx_link_wait;		/* ms: since when a message waits for its link */
	struct devmem_rx *rx_devmem[DEVTCP_MAX_LINKS];	/* NULL: plain link */
	struct devmem_frag *rx_frags;	/* the current message's, devmem links */
	unsigned int rx_nfrags, rx_frags_cap;
	size_t rx_linear;		/* bytes of it copied into rx_data */
	unsigned char *rx_put;		/* a put's destination, NULL: a message */
	struct devtcp_reg *rx_put_reg;	/* its region, pinned */
	struct devtcp_gpu *gpu;		/* receiving from a GPU dma-buf */
	unsigned char *cb;		/* control connection's read buffer */
	size_t cb_start, cb_end;
	unsigned char *rx_bounce;	/* a payload in too many pieces, gathered */
	size_t rx_bounce_cap;
	enum devtcp_rx_state rx_state;
	struct devtcp_ctrl_rx crx;	/* the control connection's reader */
	size_t rx_done;			/* of the current payload */
	unsigned char *rx_data;
	size_t rx_data_cap;
	bool rx_bye;
	bool failed;
};

/* An accepted connection whose hello has not arrived yet. */
struct devtcp_pending {
	struct devtcp_pending *next;
	int fd;
	struct devmem_rx *rx;	/* a devmem data link's */
	bool data;		/* accepted on the data port */
	uint64_t deadline;	/* ms, monotonic: the hello is due */
	struct devtcp_tuple tuple;	/* the connection, as its opener sees it */
	size_t got;
	struct devtcp_hello hello;
};

struct devtcp_module {
	mca_btl_base_module_t super;
	mca_btl_base_module_error_cb_fn_t error_cb;
	struct devtcp_addr addr;
	char ifname[64];
	int ctrl_listen, data_listen;
	pthread_mutex_t ep_lock;	/* adding to endpoints */
	struct mca_btl_base_endpoint_t *endpoints;
	int sending;			/* endpoints with a send queue (atomic) */
	pthread_mutex_t rx_lock;	/* everything below, and the receive halves */
	struct devtcp_pending *pending;
	unsigned int npending;
	uint64_t next_check;		/* ms: deadlines are checked then */
	uint64_t refused;		/* connections refused before or at their hello */
	uint64_t hello_timeouts;	/* of which without a hello in time */
	uint64_t evicted;		/* of which closed for a newer one */
	uint64_t strangers;		/* of which from no address of the job */
	uint32_t job_size;		/* processes in our job, 0: unknown */
	uint32_t job_peers;		/* of which with an endpoint (ep_lock) */
	pthread_mutex_t reg_lock;	/* regs, and each one's pins */
	pthread_cond_t reg_cond;	/* a put's write into a region ended */
	struct devtcp_reg *regs;
	struct devtcp_devmem *devmem;	/* NULL: plain receive */
	uint64_t tx_msgs, tx_bytes;	/* atomic: every sending thread adds */
	uint64_t rx_msgs, rx_bytes;	/* puts included */
	uint64_t rx_puts, rx_put_bytes;
	uint64_t bytes_inplace;		/* payload read in the dma-buf by the PML */
	uint64_t bytes_bounced;		/* copied: too many pieces for one message */
	uint64_t bytes_put;		/* copied from it into a put's destination */
	uint64_t bytes_linear;		/* arrived in host memory */
	uint64_t bytes_gpu;		/* gathered from a GPU dma-buf, then copied */
	struct pollfd *pfd;
	struct mca_btl_base_endpoint_t **pep;
	size_t pfd_cap;
};

struct devtcp_component {
	mca_btl_base_component_3_0_0_t super;
	/* MCA parameters */
	char *if_include;
	int family;
	int data_links;
	int data_min;
	int ctrl_port, data_port;
	int verbose;
	int connect_timeout;	/* s: a hello, a message's data link */
	int peer_timeout;	/* s: TCP keepalive and user timeout, 0: off */
	uint8_t secret[DEVTCP_KEY_LEN];	/* this process's, in the modex */
	char *devmem_mode;
	char *devmem_mem;
	int devmem_cuda_device;
	size_t devmem_size;
	int devmem_queue;
	int devmem_inplace;
	int devmem_page_size;
	char *rdpm_socket;
	bool rdpm_shared;
	int output;
	struct devtcp_module *modules[DEVTCP_MAX_IFS];
	int num_modules;
};

/* The one symbol Open MPI looks up in the DSO. */
__attribute__((visibility("default"))) extern struct devtcp_component mca_btl_devtcp_component;
extern struct devtcp_module devtcp_module_template;

#define devtcp_verbose(level, ...) \
	opal_output_verbose(level, mca_btl_devtcp_component.output, "btl:devtcp: " __VA_ARGS__)

/* btl_devtcp_component.c */
int devtcp_random(void *buf, size_t len, const char *what);

/* btl_devtcp_addr.c */
int devtcp_pick_interface(struct devtcp_module *m, const char *want, int family);
socklen_t devtcp_sockaddr(const struct devtcp_addr *a, uint16_t port, struct sockaddr_storage *ss);
const char *devtcp_ntop(const struct devtcp_addr *a, char *buf);
int devtcp_match_peer(const struct devtcp_addr *mine, int index, const struct devtcp_addr *theirs,
		      int count);

void devtcp_tuple(struct devtcp_tuple *t, const struct sockaddr_storage *src,
		  const struct sockaddr_storage *dst);
bool devtcp_from(const struct devtcp_addr *addrs, int count, const struct sockaddr_storage *ss);

/* btl_devtcp_module.c */
struct devtcp_reg *devtcp_region_pin(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
				     uint64_t handle, struct devtcp_region *r);
void devtcp_region_unpin(struct devtcp_module *m, struct devtcp_reg *reg);
bool devtcp_region_write_begin(struct devtcp_module *m, struct devtcp_reg *reg);
void devtcp_region_write_end(struct devtcp_module *m, struct devtcp_reg *reg);

/* btl_devtcp_devmem.c */
int devtcp_devmem_open(struct devtcp_module *m);
void devtcp_devmem_close(struct devtcp_module *m);
int devtcp_devmem_accept(struct devtcp_module *m, int fd, struct devmem_rx **rx);
int devtcp_devmem_read(struct devtcp_module *m, struct devmem_rx *rx, void *buf, size_t want,
		       size_t *done);
int devtcp_devmem_link(struct devtcp_module *m, int fd, struct devmem_rx **rx);
void devtcp_devmem_unlink(struct devtcp_module *m, int fd);
const void *devtcp_devmem_at(struct devtcp_module *m, const struct devmem_frag *f);
struct devmem_mem *devtcp_devmem_mem(struct devtcp_module *m);
bool devtcp_devmem_on_gpu(struct devtcp_module *m);
int devtcp_devmem_events(struct devtcp_module *m);
int devtcp_devmem_fd(struct devtcp_module *m);

/* btl_devtcp_gpu.c */
int devtcp_gpu_recv(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
		    struct devmem_rx *rx, unsigned char *dst, size_t len);
void devtcp_gpu_free(struct mca_btl_base_endpoint_t *ep);

/* Milliseconds on the monotonic clock. */
static inline uint64_t devtcp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline struct mca_btl_base_endpoint_t *devtcp_first_endpoint(struct devtcp_module *m)
{
	return __atomic_load_n(&m->endpoints, __ATOMIC_ACQUIRE);
}

/* btl_devtcp_endpoint.c */
struct mca_btl_base_endpoint_t *devtcp_endpoint_get(struct devtcp_module *m, opal_proc_t *proc);
struct mca_btl_base_endpoint_t *devtcp_endpoint_for_hello(struct devtcp_module *m,
							  const opal_process_name_t *name,
							  const struct sockaddr_storage *from);
void devtcp_set_peer_timeout(int fd);
int devtcp_read_some(int fd, void *buf, size_t want, size_t *done);
void devtcp_endpoint_free(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep);
int devtcp_endpoint_send(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
			 struct devtcp_frag *frag);
int devtcp_progress_module(struct devtcp_module *m);
void devtcp_endpoint_bye(struct mca_btl_base_endpoint_t *ep);

/* btl_devtcp_accept.c */
void devtcp_accept_all(struct devtcp_module *m, int lfd);
void devtcp_pending_progress(struct devtcp_module *m, uint64_t now);

#endif
