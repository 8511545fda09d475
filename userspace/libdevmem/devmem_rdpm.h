/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libdevmem's clients of rdpmd, the receive data path manager
 * (Documentation/rdpm.rst, rdpm_connect(3)): it binds dma-bufs to reserved
 * RX queues and steers flows to them for applications without
 * CAP_NET_ADMIN. Everything a client holds is released when it closes (or
 * dies). Without a daemon, a caller with CAP_NET_ADMIN gets the same set-up
 * done in-process, undone by rdpm_close().
 */
#ifndef LIBDEVMEM_DEVMEM_RDPM_H
#define LIBDEVMEM_DEVMEM_RDPM_H

#include "devmem.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rdpm_client;

#define RDPM_QUEUES_MAX		32

struct rdpm_buffer {
	uint32_t handle;		/* for rdpm_steer_socket() and rdpm_unregister() */
	uint32_t dmabuf_id;		/* in the cmsgs of data received into it */
	unsigned int nqueues;
	unsigned int queues[RDPM_QUEUES_MAX];	/* the RX queues it is bound to */
};

/* Events rdpmd pushes: the buffer (handle) is gone, its flows with it. */
enum rdpm_event_type {
	RDPM_EVENT_LINK_DOWN = 1,	/* the NIC went down */
	RDPM_EVENT_REMOVED = 2,		/* the NIC disappeared */
	RDPM_EVENT_DRAINED = 3,		/* an administrator drained the NIC */
	RDPM_EVENT_CONFIG = 4,		/* the configuration no longer allows it */
};

struct rdpm_event_info {
	unsigned int event;		/* enum rdpm_event_type */
	uint32_t handle;
	char ifname[16];
};

/* Connects to rdpmd at @path (NULL: /run/rdpm/rdpm.sock). */
int rdpm_connect(struct rdpm_client **out, const char *path);
/* Whether the calls run in-process (no daemon). */
bool rdpm_in_process(const struct rdpm_client *c);
/* The socket, to poll for events; -1 in-process. */
int rdpm_fd(const struct rdpm_client *c);
/*
 * Binds @mem to @nqueues (0: the NIC's default) reserved RX queues of
 * @ifname; @mem must stay alive until rdpm_unregister() or rdpm_close().
 */
int rdpm_register_buffer(struct rdpm_client *c, const char *ifname, struct devmem_mem *mem,
			 unsigned int nqueues, struct rdpm_buffer *out);
/* The same with RX buffers of @page_size bytes (devmem_bind_rx_page_size();
 * 0: the system page size). */
int rdpm_register_buffer_page_size(struct rdpm_client *c, const char *ifname,
				   struct devmem_mem *mem, unsigned int nqueues, uint32_t page_size,
				   struct rdpm_buffer *out);
/*
 * A share of @bytes of the user's shared buffer on @ifname, with receive
 * buffers of @page_size (0: the page size): one dma-buf per NIC, user and
 * buffer size, which rdpmd allocates and binds once for all processes of
 * that user (the ranks of a job on one host), in *@mem, mapped for the CPU;
 * free it after rdpm_unregister() or rdpm_close(). @out as for
 * rdpm_register_buffer(); rdpm_limit_window() takes at most @bytes. With no
 * daemon (in-process), a buffer of @bytes of the process's own.
 */
int rdpm_join_shared(struct rdpm_client *c, const char *ifname, size_t bytes,
		     uint32_t page_size, struct devmem_mem **mem, struct rdpm_buffer *out);
/*
 * Steers the flow of TCP socket @sock, the caller's own, to the
 * least-loaded queue of buffer @handle: a listening socket's connections
 * to its local address and port, or a connected socket's connection. The
 * queue in @queue, the flow's id (for rdpm_unsteer()) in @flow_id. @flow
 * (NULL: the socket's tuple) may narrow what the socket leaves open (a
 * listener's peer, a wildcard's local address); what it names that the
 * socket fixes must be the socket's. rdpmd refuses a flow that overlaps
 * another user's. Unsteer before closing the socket.
 */
int rdpm_steer_socket(struct rdpm_client *c, uint32_t handle, int sock,
		      const struct devmem_flow *flow, unsigned int *queue, uint32_t *flow_id);
/* Steers @flow as given, without a socket: through rdpmd for its
 * administrators only (uid 0 and admin_users; others get -EPERM). */
int rdpm_steer(struct rdpm_client *c, uint32_t handle, const struct devmem_flow *flow,
	       unsigned int *queue, uint32_t *flow_id);
int rdpm_unsteer(struct rdpm_client *c, uint32_t flow_id);
/*
 * devmem_rx_limit_window() on TCP socket @sock with @bytes, its share of
 * buffer @handle, done by rdpmd: it can set the receive buffer past
 * net.core.rmem_max, which an unprivileged caller cannot. The clamp set, 0
 * (none needed) or -errno.
 */
int rdpm_limit_window(struct rdpm_client *c, uint32_t handle, int sock, size_t bytes);
/* Unbinds buffer @handle, removing its flows. */
int rdpm_unregister(struct rdpm_client *c, uint32_t handle);
/* The next event: 1 with @ev, 0 when none came within @timeout_ms. */
int rdpm_next_event(struct rdpm_client *c, struct rdpm_event_info *ev, int timeout_ms);
/*
 * Administration (rdpmctl): rdpmd's state as text or JSON (@json) in *@out,
 * to free(); drain: drop every binding and flow on @ifname; reload: re-read
 * the configuration. Drain and reload need root or one of the configured
 * admin_users. -ENOTCONN on an in-process client: there is no daemon to ask.
 */
int rdpm_status(struct rdpm_client *c, bool json, char **out);
int rdpm_drain(struct rdpm_client *c, const char *ifname);
int rdpm_reload(struct rdpm_client *c);
/* Closes the connection; rdpmd (or, in-process, this call) releases
 * every buffer and flow of the client. */
void rdpm_close(struct rdpm_client *c);

#ifdef __cplusplus
}
#endif

#endif
