// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The devmem receive path: a dma-buf bound to a queue of the interface, and
 * the data port steered there, through rdpmd when one listens (unprivileged
 * ranks) or directly (CAP_NET_ADMIN), all with libdevmem. Payloads of data
 * links then land in the dma-buf; the PML reads them in place. A dma-buf in
 * GPU memory (btl_devtcp_devmem_mem cuda) is never mapped: the GPU reads it
 * (btl_devtcp_gpu.c).
 */
#include "btl_devtcp.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/util/output.h"

#include "devmem.h"
#include "devmem_rdpm.h"

/* The window of a data link before its hello authenticates: room for the
 * hello, and little of the dma-buf. */
#define DEVTCP_HELLO_WINDOW 4096
/* Stack room of one receive of a hello (72 bytes): fragments and linear
 * bytes; what does not fit is taken by the next turn of the loop. */
#define DEVTCP_HELLO_FRAGS 16
#define DEVTCP_HELLO_LINEAR 64
/* An authenticated data link's most bytes per recvmsg: one call's control
 * buffer holds that many bytes' fragment records; more calls take longer
 * payloads. */
#define DEVTCP_LINK_RECV_MAX (1 << 20)

struct devtcp_devmem {
	struct rdpm_client *rdpm;	/* set: rdpmd binds and steers */
	struct rdpm_buffer rb;		/* what rdpmd bound */
	bool shared;			/* rb is a share of the host's shared buffer */
	uint32_t handle;
	uint32_t flow_id;
	struct devmem_nic *nic;		/* the direct path's */
	struct devmem_binding *binding;
	uint32_t rule;
	bool have_rule;
	struct devmem_mem *mem;
	bool gpu;			/* mem is CUDA device memory */
	unsigned char *map;		/* NULL on the GPU */
	unsigned int queue;
	size_t page_size;		/* of the binding's buffers */
	int *links;			/* devmem data links accepted */
	size_t nlinks;
};

/* The modes of btl_devtcp_devmem. */
static bool mode_is(const char *want)
{
	const char *m = mca_btl_devtcp_component.devmem_mode;

	return m && !strcmp(m, want);
}

static int devmem_error(const char *what)
{
	const struct devtcp_component *c = &mca_btl_devtcp_component;
	char page[64] = "", gpu[96] = "";

	if (c->devmem_page_size)
		snprintf(page, sizeof(page), "; btl_devtcp_devmem_page_size is %d",
			 c->devmem_page_size);
	if (c->devmem_mem && !strcmp(c->devmem_mem, "cuda"))
		snprintf(gpu, sizeof(gpu), "; btl_devtcp_devmem_mem is cuda, "
			 "btl_devtcp_devmem_cuda_device %d", c->devmem_cuda_device);
	opal_output(0, "btl:devtcp: devmem: %s: %s (MCA parameter btl_devtcp_devmem is %s%s%s%s)",
		    what, devmem_last_error(), c->devmem_mode,
		    mode_is("on") ? "" : "; off receives without devmem", page, gpu);
	return OPAL_ERROR;
}

void devtcp_devmem_close(struct devtcp_module *m)
{
	struct devtcp_devmem *d = m->devmem;

	if (!d)
		return;
	if (d->map)
		devmem_cpu_end(d->mem, DEVMEM_CPU_READ);
	if (d->rdpm) {
		rdpm_close(d->rdpm);	/* rdpmd drops the binding and the rule */
	} else {
		if (d->have_rule)
			devmem_nic_flow_del(d->nic, d->rule);
		if (d->binding)
			devmem_unbind(d->binding);
		if (d->nic)
			devmem_nic_close(d->nic, false);
	}
	devmem_mem_free(d->mem);
	free(d->links);
	free(d);
	m->devmem = NULL;
}

/*
 * btl_devtcp_devmem_inplace: ob1 takes MCA_BTL_DES_MAX_SEGMENTS segments a
 * descriptor, the header and 15 pieces of payload. A frame's payload starts
 * a buffer of its own (header split) and at worst a frame is one segment,
 * taking ceil(mss / buffer size) buffers; a payload of N bytes spans at
 * most ceil(N / mss) + 1 segments: N up to (15 / pieces a segment - 1) * mss
 * always lands in 15 pieces or fewer. The sizes this rank sends are capped
 * to that; its peers, configured alike, cap theirs.
 */
static void cap_for_inplace(struct devtcp_module *m, size_t page)
{
	const size_t pieces = MCA_BTL_DES_MAX_SEGMENTS - 1;
	struct ifreq ifr;
	size_t mss, per_seg, cap;
	mca_btl_base_module_t *b = &m->super;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, m->ifname, strnlen(m->ifname, IFNAMSIZ - 1));
	if (s < 0 || ioctl(s, SIOCGIFMTU, &ifr) < 0 || ifr.ifr_mtu <= 52) {
		if (s >= 0)
			close(s);
		devtcp_verbose(1, "devmem: no MTU for %s: fragment sizes left as they are", m->ifname);
		return;
	}
	close(s);
	/* IP, TCP and its timestamps */
	mss = (size_t)ifr.ifr_mtu - (m->addr.family == AF_INET6 ? 72 : 52);
	per_seg = (mss + page - 1) / page;
	cap = per_seg < pieces ? (pieces / per_seg - 1) * mss : mss;
	if (cap >= b->btl_max_send_size)
		return;
	b->btl_max_send_size = cap;
	if (b->btl_eager_limit > cap)
		b->btl_eager_limit = cap;
	if (b->btl_rndv_eager_limit > cap)
		b->btl_rndv_eager_limit = cap;
	devtcp_verbose(1, "devmem: fragments of at most %zu bytes (MTU %d, %zu-byte buffers), so "
		       "that every payload is read in place", cap, ifr.ifr_mtu, page);
}

/*
 * A host's ranks bind the reserved queues from the last one down, one each,
 * by their local rank: two bindings of one queue would fail. False, having
 * said why, when there are fewer reserved queues than local ranks.
 */
static bool queue_of_local_rank(struct devtcp_module *m, struct devmem_nic *nic,
				unsigned int *queue)
{
	const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	unsigned int local = env ? (unsigned int)strtoul(env, NULL, 10) : 0;
	struct devmem_reservation r = { 0 };

	if (devmem_nic_reserved(nic, &r) || local >= r.count) {
		opal_output_verbose(mode_is("on") ? 0 : 1, mca_btl_devtcp_component.output,
				    "btl:devtcp: devmem: local rank %u of this host, and %s has %u "
				    "queue(s) reserved for devmem: one per rank is needed (devmem "
				    "nic setup %s --reserve N, or rdpmd; MCA parameter "
				    "btl_devtcp_devmem_queue picks one by hand)", local, m->ifname,
				    r.count, m->ifname);
		return false;
	}
	*queue = r.first + r.count - 1 - local;
	return true;
}

/*
 * This rank holds the data port, so a rule steering it is one a rank
 * killed before it could delete it (the direct path has no daemon to do
 * that) left behind: it goes, or it would shadow ours.
 */
static int remove_stale_rule(struct devmem_nic *nic, const struct devmem_flow *flow)
{
	uint32_t stale;

	if (devmem_nic_flow_find(nic, flow, &stale))
		return 0;
	devtcp_verbose(1, "devmem: flow rule %u steered data port %u already, left by a process "
		       "that no longer holds the port: removing it", stale, flow->dport);
	return devmem_nic_flow_del(nic, stale);
}

/*
 * Per btl_devtcp_devmem: off, or on/auto with a dma-buf bound and the data
 * port steered. auto falls back to plain receive (saying why at verbose
 * level 1); on fails.
 */
int devtcp_devmem_open(struct devtcp_module *m)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	struct devmem_flow flow = { .family = m->addr.family, .dport = ntohs(m->addr.data_port) };
	struct devtcp_devmem *d;
	const char *sock = c->rdpm_socket && *c->rdpm_socket ? c->rdpm_socket : NULL;
	int ret;

	if (mode_is("off"))
		return OPAL_SUCCESS;
	if (!mode_is("on") && !mode_is("auto")) {
		opal_output(0, "btl:devtcp: btl_devtcp_devmem is '%s': want auto, on or off",
			    c->devmem_mode);
		return OPAL_ERR_BAD_PARAM;
	}
	if (!c->devmem_mem || (strcmp(c->devmem_mem, "udmabuf") && strcmp(c->devmem_mem, "cuda"))) {
		opal_output(0, "btl:devtcp: btl_devtcp_devmem_mem is '%s': want udmabuf or cuda",
			    c->devmem_mem ? c->devmem_mem : "");
		return OPAL_ERR_BAD_PARAM;
	}
	if (!strcmp(c->devmem_mem, "cuda") && c->devmem_inplace) {
		opal_output(0, "btl:devtcp: btl_devtcp_devmem_inplace is 1 and btl_devtcp_devmem_mem "
			    "is cuda: the PML cannot read payloads in place in GPU memory (set "
			    "btl_devtcp_devmem_inplace 0)");
		return OPAL_ERR_BAD_PARAM;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return OPAL_ERR_OUT_OF_RESOURCE;
	m->devmem = d;
	d->gpu = !strcmp(c->devmem_mem, "cuda");
	memcpy(flow.dst, m->addr.ip, sizeof(flow.dst));
	d->page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (c->devmem_page_size < 0 || (c->devmem_page_size &&
	    ((size_t)c->devmem_page_size < d->page_size ||
	     (c->devmem_page_size & (c->devmem_page_size - 1))))) {
		opal_output(0, "btl:devtcp: btl_devtcp_devmem_page_size is %d: want 0 or a power of "
			    "two from %zu up", c->devmem_page_size, d->page_size);
		devtcp_devmem_close(m);
		return OPAL_ERR_BAD_PARAM;
	}
	ret = rdpm_connect(&d->rdpm, sock);
	if (!ret && rdpm_in_process(d->rdpm)) {
		rdpm_close(d->rdpm);	/* no daemon: the direct path below */
		d->rdpm = NULL;
	} else if (ret && ret != -ENOENT && ret != -ECONNREFUSED) {
		goto fail_msg;		/* a daemon is there but does not serve us */
	} else if (ret) {
		d->rdpm = NULL;
	}
	if (d->rdpm && c->rdpm_shared && d->gpu)
		devtcp_verbose(1, "devmem: a GPU dma-buf of this rank's own (rdpmd's shared "
			       "dma-bufs are host memory)");
	else if (d->rdpm && c->rdpm_shared) {
		ret = rdpm_join_shared(d->rdpm, m->ifname, c->devmem_size,
				       (uint32_t)c->devmem_page_size, &d->mem, &d->rb);
		if (ret == -EOPNOTSUPP)
			devtcp_verbose(1, "devmem: %s: a dma-buf of this rank's own instead",
				       devmem_last_error());
		else if (ret)
			goto fail_msg;
		else
			d->shared = true;
	}
	/* Buffers over a page need aligned chunks, which a heap's are. */
	if (d->gpu)
		ret = devmem_mem_cuda(&d->mem, c->devmem_cuda_device, (size_t)c->devmem_size);
	else if (!d->shared && (size_t)c->devmem_page_size > d->page_size)
		ret = devmem_mem_heap(&d->mem, NULL, (size_t)c->devmem_size);
	else if (!d->shared)
		ret = devmem_mem_udmabuf(&d->mem, (size_t)c->devmem_size, 0);
	if (ret)
		goto fail_msg;
	if (d->rdpm) {
		struct rdpm_buffer *rb = &d->rb;

		/* One queue: the data port's rule points at one, and the
		 * host's other ranks want the other reserved ones. */
		if (!d->shared)
			ret = rdpm_register_buffer_page_size(d->rdpm, m->ifname, d->mem, 1,
							     (uint32_t)c->devmem_page_size, rb);
		if (!ret && (size_t)c->devmem_page_size > d->page_size)
			d->page_size = (size_t)c->devmem_page_size;
		if (!ret)
			ret = rdpm_steer_socket(d->rdpm, rb->handle, m->data_listen, &flow,
						&d->queue, &d->flow_id);
		if (ret)
			goto fail_msg;
		d->handle = rb->handle;
	} else {
		struct devmem_flow_target t;

		ret = devmem_nic_open(&d->nic, m->ifname);
		if (!ret && c->devmem_queue >= 0) {
			d->queue = (unsigned int)c->devmem_queue;
		} else if (!ret) {
			ret = devmem_nic_devmem_queue(d->nic, &d->queue);
			/* auto binds directly only where `devmem nic setup`
			 * reserved queues: a NIC nobody prepared is left alone */
			if (ret == 0 && mode_is("auto")) {
				devtcp_verbose(1, "devmem: no rdpmd at %s and no queues of %s reserved "
					       "for devmem: receiving without devmem",
					       sock ? sock : "/run/rdpm/rdpm.sock", m->ifname);
				goto fail;
			}
			if (ret == 1 && !queue_of_local_rank(m, d->nic, &d->queue))
				goto fail;
			ret = ret < 0 ? ret : 0;
		}
		if (!ret)
			ret = devmem_bind_rx_page_size(&d->binding, d->nic, d->mem, &d->queue, 1,
						       (uint32_t)c->devmem_page_size);
		if (!ret)
			d->page_size = devmem_binding_page_size(d->binding);
		t = (struct devmem_flow_target){ .queue = d->queue };
		if (!ret)
			ret = remove_stale_rule(d->nic, &flow);
		if (!ret)
			ret = devmem_nic_flow_add(d->nic, &flow, &t, &d->rule);
		d->have_rule = !ret;
		if (ret == -EPERM || ret == -EACCES) {
			opal_output_verbose(mode_is("on") ? 0 : 1, c->output,
					    "btl:devtcp: devmem: %s: without CAP_NET_ADMIN the devmem path "
					    "needs rdpmd, and none listens at %s (MCA parameter "
					    "btl_devtcp_rdpm_socket)", devmem_last_error(),
					    sock ? sock : "/run/rdpm/rdpm.sock");
			goto fail;
		}
		if (ret)
			goto fail_msg;
	}
	d->map = d->gpu ? NULL : devmem_cpu_begin(d->mem, DEVMEM_CPU_READ);
	if (!d->gpu && !d->map) {
		ret = -EIO;
		goto fail_msg;
	}
	m->addr.devmem = 1;
	if (c->devmem_inplace)
		cap_for_inplace(m, d->page_size);
	if (d->gpu)
		devtcp_verbose(1, "devmem: the dma-buf is GPU memory (CUDA device %d): payloads are "
			       "gathered there by the unpack kernels, then copied to host buffers",
			       c->devmem_cuda_device);
	if (d->shared)
		devtcp_verbose(1, "devmem: a %zu-byte share of the host's shared %zu-byte dma-buf %u, "
			       "bound to queue %u of %s by rdpmd, %zu-byte buffers; data port %u "
			       "steered there", (size_t)c->devmem_size, devmem_mem_size(d->mem),
			       d->rb.dmabuf_id, d->queue, m->ifname, d->page_size,
			       ntohs(m->addr.data_port));
	else
		devtcp_verbose(1, "devmem: %zu-byte dma-buf bound to queue %u of %s %s, %zu-byte "
			       "buffers; data port %u steered there", devmem_mem_size(d->mem),
			       d->queue, m->ifname, d->rdpm ? "by rdpmd" : "directly",
			       d->page_size, ntohs(m->addr.data_port));
	return OPAL_SUCCESS;
fail_msg:
	if (mode_is("on"))
		devmem_error("cannot set up the dma-buf");
	else
		devtcp_verbose(1, "devmem: %s: receiving without devmem", devmem_last_error());
fail:
	devtcp_devmem_close(m);
	return mode_is("on") ? OPAL_ERROR : OPAL_SUCCESS;
}

/* A peer on this host reaches us over loopback, whose packets carry host
 * pages that recvmsg(MSG_SOCK_DEVMEM) refuses: its links stay plain. */
static bool peer_is_local(int fd)
{
	struct sockaddr_storage p;
	socklen_t pl = sizeof(p);
	int s, ok;

	if (getpeername(fd, (struct sockaddr *)&p, &pl) ||
	    (p.ss_family != AF_INET && p.ss_family != AF_INET6))
		return false;
	/* The port sits at the same place in both families' addresses. */
	((struct sockaddr_in *)&p)->sin_port = 0;
	s = socket(p.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	ok = !bind(s, (struct sockaddr *)&p, pl);
	close(s);
	return ok;
}

/* The dma-buf id in the cmsgs of what lands in our dma-buf. */
static uint32_t dmabuf_id(const struct devtcp_devmem *d)
{
	return d->rdpm ? d->rb.dmabuf_id : devmem_binding_id(d->binding);
}

/*
 * A connection accepted on the data port: its bytes, the hello included,
 * land in the dma-buf unless the peer is local. Until its hello
 * authenticates it, it may fill little of the dma-buf (a window clamp of a
 * few pages) and has receive state for a hello only. Sets *rx (NULL:
 * plain). The clamp is set here rather than on the listener: a clamp in
 * force at the handshake would also fix a small window scale for good.
 */
int devtcp_devmem_accept(struct devtcp_module *m, int fd, struct devmem_rx **rx)
{
	int clamp = DEVTCP_HELLO_WINDOW;

	*rx = NULL;
	if (!m->devmem || peer_is_local(fd))
		return OPAL_SUCCESS;
	if (setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof(clamp)) < 0 ||
	    devmem_rx_open(rx, fd, sizeof(struct devtcp_hello)) ||
	    devmem_rx_set_buffer(*rx, dmabuf_id(m->devmem), devmem_mem_size(m->devmem->mem))) {
		devtcp_verbose(1, "devmem: a data link's hello: %s", devmem_last_error());
		devmem_rx_close(*rx);
		*rx = NULL;
		return OPAL_ERROR;
	}
	return OPAL_SUCCESS;
}

/* Like a plain read of want bytes into buf (a hello), from a devmem link:
 * copies the pieces out of the dma-buf and hands them back. */
int devtcp_devmem_read(struct devtcp_module *m, struct devmem_rx *rx, void *buf, size_t want,
		       size_t *done)
{
	while (*done < want) {
		struct devmem_frag f[DEVTCP_HELLO_FRAGS];
		unsigned char linear[DEVTCP_HELLO_LINEAR];
		unsigned int n = 0, i;
		ssize_t got;
		int err = 0;

		got = devmem_rx_recv_upto(rx, want - *done, MSG_DONTWAIT, f, DEVTCP_HELLO_FRAGS, &n, linear,
					  sizeof(linear));
		for (i = 0; i < n; i++) {
			char *to = (char *)buf + *done;

			if (f[i].dmabuf_id && m->devmem->gpu)
				err |= devmem_mem_read(m->devmem->mem, f[i].offset, to, f[i].len);
			else
				memcpy(to, f[i].dmabuf_id ? m->devmem->map + f[i].offset : f[i].linear,
				       f[i].len);
			*done += f[i].len;
			devmem_rx_release(rx, &f[i]);
		}
		devmem_rx_flush(rx);
		if (err) {
			errno = EIO;
			return -1;
		}
		if (got == -EAGAIN)
			return 0;
		if (got <= 0) {
			errno = got ? -got : 0;
			return -1;
		}
	}
	return 1;
}

/*
 * An authenticated devmem data link joins a peer: receive state for whole
 * payloads replaces the hello's (*rx), and its window opens to its share:
 * every such link may fill an equal share of the dma-buf, so that segments
 * queued out of order after a drop cannot take all of it. The share
 * shrinks with each link: the earlier ones are limited again. On failure
 * nothing changed but the link's own window: the caller refuses it.
 */
int devtcp_devmem_link(struct devtcp_module *m, int fd, struct devmem_rx **rx)
{
	struct devtcp_devmem *d = m->devmem;
	struct devmem_rx *full;
	int *links, open = INT_MAX, ret = 0;
	size_t share;

	links = realloc(d->links, (d->nlinks + 1) * sizeof(*links));
	if (!links)
		return OPAL_ERR_OUT_OF_RESOURCE;
	d->links = links;
	/* libdevmem refuses any fragment outside our dma-buf, for the copy and
	 * the GPU unpack paths alike */
	if (devmem_rx_open(&full, fd, DEVTCP_LINK_RECV_MAX))
		return devmem_error("cannot receive on a data link");
	if (devmem_rx_set_buffer(full, dmabuf_id(d), devmem_mem_size(d->mem))) {
		devmem_rx_close(full);
		return devmem_error("cannot receive on a data link");
	}
	/* the accept's clamp off; devmem_rx_limit_window sets the share's */
	if (setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &open, sizeof(open)) < 0) {
		devmem_rx_close(full);
		return OPAL_ERROR;
	}
	/* Of a shared buffer, only what rdpmd admitted is this rank's. */
	share = (d->shared ? mca_btl_devtcp_component.devmem_size : devmem_mem_size(d->mem)) /
		(d->nlinks + 1);
	ret = d->rdpm ? rdpm_limit_window(d->rdpm, d->handle, fd, share) :
			devmem_rx_limit_window(fd, share);
	for (size_t i = 0; i < d->nlinks && ret >= 0; i++)
		ret = d->rdpm ? rdpm_limit_window(d->rdpm, d->handle, d->links[i], share) :
				devmem_rx_limit_window(d->links[i], share);
	if (ret < 0) {
		devmem_rx_close(full);
		return devmem_error("cannot limit the data links' windows to their share");
	}
	d->links[d->nlinks++] = fd;
	devmem_rx_close(*rx);
	*rx = full;
	return OPAL_SUCCESS;
}

/* The link is closing: its descriptor may be reused for another socket. */
void devtcp_devmem_unlink(struct devtcp_module *m, int fd)
{
	struct devtcp_devmem *d = m->devmem;

	for (size_t i = 0; d && i < d->nlinks; i++)
		if (d->links[i] == fd) {
			d->links[i] = d->links[--d->nlinks];
			break;
		}
}

/* A fragment's bytes in the mapped dma-buf (libdevmem checked that it lies
 * inside: devmem_rx_set_buffer). */
const void *devtcp_devmem_at(struct devtcp_module *m, const struct devmem_frag *f)
{
	return m->devmem->map + f->offset;
}

struct devmem_mem *devtcp_devmem_mem(struct devtcp_module *m)
{
	return m->devmem->mem;
}

bool devtcp_devmem_on_gpu(struct devtcp_module *m)
{
	return m->devmem && m->devmem->gpu;
}

int devtcp_devmem_events(struct devtcp_module *m)
{
	struct devtcp_devmem *d = m->devmem;
	struct rdpm_event_info ev;
	int ret;

	if (!d || !d->rdpm)
		return 0;
	ret = rdpm_next_event(d->rdpm, &ev, 0);
	if (ret <= 0)
		return ret < 0 && ret != -EAGAIN ? -1 : 0;
	opal_output(0, "btl:devtcp: devmem: rdpmd took the dma-buf's binding on %s away (event %u: "
		    "%s): payloads can no longer land in it", ev.ifname, ev.event,
		    ev.event == RDPM_EVENT_DRAINED ? "drained by an administrator" :
		    ev.event == RDPM_EVENT_LINK_DOWN ? "link down" :
		    ev.event == RDPM_EVENT_REMOVED ? "the NIC disappeared" : "configuration");
	return -1;
}

int devtcp_devmem_fd(struct devtcp_module *m)
{
	return m->devmem && m->devmem->rdpm ? rdpm_fd(m->devmem->rdpm) : -1;
}
