// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The devmem receive path (DEVCOLL_RX=devmem): a udmabuf bound to an RX
 * queue of DEVCOLL_DEVMEM_IFACE through libdevmem, every data connection
 * from a rank on another host steered there by an ntuple rule on its
 * 4-tuple and received with recvmsg(MSG_SOCK_DEVMEM); ranks on this host
 * come over loopback, on the plain path. Payload fragments are read in
 * place from the dma-buf's CPU mapping: copied once into the destination, or for a
 * reduction, reduced straight from the fragments into the result, with no
 * staging copy. Tokens go back to the kernel after every receive call, in
 * batches (libdevmem coalesces them).
 *
 * When rdpmd runs (DEVCOLL_DEVMEM_RDPM=auto, the default, or on), it binds
 * the dma-buf to its reserved queues of the NIC and steers the connections,
 * so an unprivileged job gets devmem receive. Otherwise (no daemon, or
 * DEVCOLL_DEVMEM_RDPM=off) the rank does it itself through libdevmem, which
 * needs CAP_NET_ADMIN and a prepared NIC (header split, RSS off the queue,
 * ntuple on: `devmem nic setup IFACE --reserve K`). Communicators split or
 * dup'ed from one share its binding (a queue takes one) and add their own
 * rules. A rank whose set-up failed tells the others (dm_agree), so every
 * rank fails with its message.
 *
 * With DEVCOLL_DEVMEM_MEM=cuda the dma-buf is GPU memory
 * (DEVCOLL_DEVMEM_CUDA_DEVICE, default 0), which the CPU cannot read. Each
 * connection's message is then received batch by batch straight into a
 * device buffer by libdevmem's unpack kernels (devmem_rx_unpack): a batch's
 * tokens go back once its kernel has run, and the next receive overlaps it.
 * When the message is complete one device-to-host copy brings it to the
 * engine's buffer (or a reduction reads it from there).
 *
 * rdpmd drops a binding when the NIC goes down or away, an administrator
 * drains it or a reload revokes access, and says so on the client socket.
 * That socket is in every sharing communicator's epoll set: the engine reads
 * the events when woken by it, an operation at its start, and a failure
 * before it is reported (dc_dm_dead), so the communicator fails naming the
 * event rather than at a receive that no longer lands in the dma-buf.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "devmem.h"
#include "devmem_rdpm.h"
#include "internal.h"

#define DM_MAXFRAGS 256
#define DM_LINEAR (64 << 10)
/* The most one dc_dm_recv() takes (DM_MAXFRAGS fragments of the NIC's
 * 4 KiB buffers); each devmem_rx is opened for receives as large, so their
 * cmsgs fit its control buffer (the kernel ends a receive where they do
 * not). */
#define DM_RECV_MAX (1 << 20)

/* The binding, shared by a communicator and those split or dup'ed from it
 * (a queue takes one binding): freed with its last user. */
struct dm_core {
	struct rdpm_client *rdpm;	/* set: rdpmd binds and steers */
	uint32_t handle;		/* rdpmd's for the buffer */
	struct devmem_nic *nic;		/* the direct path's */
	struct devmem_mem *mem;
	struct devmem_binding *binding;
	uint32_t dmabuf_id;		/* what fragments must name (the binding's) */
	const char *map;		/* host memory's mapping (NULL: GPU memory,
					 * read through the unpack kernels) */
	int cuda_device;
	unsigned int queue;
	pthread_mutex_t lock;	/* the nic handle's rules, the rdpm client,
				 * the sockets */
	int *socks;		/* every sharing communicator's steered
				 * connections: they divide the dma-buf */
	unsigned int nsocks;
	int refs;
	int dead;		/* rdpmd dropped the binding: the error (under lock) */
	char why[200];		/* and what happened */
};

/* A connection's receive into device memory (CUDA dma-buf). */
struct dm_gpu {
	struct devmem_unpack *u;
	struct devmem_mem *dev;		/* the message, gathered */
	char *host;			/* ... and read back, for a reduction */
	size_t cap;
	bool direct;			/* this one into the caller's device buffer */
	bool reduce;			/* this one reduced on the GPU */
};

struct dm_state {
	struct dm_core *core;
	struct dm_gpu *gpu;		/* per connection, CUDA dma-bufs */
	struct devmem_nic *nic;	/* the core's */
	const char *map;	/* the core's */
	uint32_t *rules;	/* rule ids, or rdpmd's flow ids */
	unsigned int nrules;
	struct devmem_frag frags[DM_MAXFRAGS];
	char *linear;
	/* an element split across fragments, per connection */
	unsigned char (*carry)[8];
	unsigned int *carry_len;
	uint64_t dmabuf_bytes, linear_bytes, gpu_direct_bytes, gpu_reduced_bytes;
	unsigned int local_conns;	/* to ranks on this host: plain */
	bool debug;
};

static void flow_of(int fd, struct devmem_flow *f)
{
	struct sockaddr_storage l, p;
	socklen_t ll = sizeof(l), pl = sizeof(p);

	memset(f, 0, sizeof(*f));
	getsockname(fd, (struct sockaddr *)&l, &ll);
	getpeername(fd, (struct sockaddr *)&p, &pl);
	f->family = l.ss_family;
	if (l.ss_family == AF_INET6) {
		memcpy(f->dst, &((struct sockaddr_in6 *)&l)->sin6_addr, 16);
		memcpy(f->src, &((struct sockaddr_in6 *)&p)->sin6_addr, 16);
		f->dport = ntohs(((struct sockaddr_in6 *)&l)->sin6_port);
		f->sport = ntohs(((struct sockaddr_in6 *)&p)->sin6_port);
	} else {
		memcpy(f->dst, &((struct sockaddr_in *)&l)->sin_addr, 4);
		memcpy(f->src, &((struct sockaddr_in *)&p)->sin_addr, 4);
		f->dport = ntohs(((struct sockaddr_in *)&l)->sin_port);
		f->sport = ntohs(((struct sockaddr_in *)&p)->sin_port);
	}
}

static void core_put(struct dm_core *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	int left = --k->refs;

	pthread_mutex_unlock(&k->lock);
	if (left)
		return;
	if (k->map)
		devmem_cpu_end(k->mem, DEVMEM_CPU_READ);
	if (k->rdpm) {
		/* unregistered before closing so that nothing is left once
		 * the communicator is gone, not once rdpmd gets to it */
		if (k->handle && !k->dead)
			rdpm_unregister(k->rdpm, k->handle);
		rdpm_close(k->rdpm);
	}
	if (k->binding)
		devmem_unbind(k->binding);
	if (k->mem)
		devmem_mem_free(k->mem);
	if (k->nic)
		devmem_nic_close(k->nic, false);
	pthread_mutex_destroy(&k->lock);
	free(k->socks);
	free(k);
}

/*
 * Each steered connection's window stays within its share of the dma-buf
 * (devmem_rx_limit_window: segments queued out of order after a drop must
 * not take every buffer, or the connection stalls for good). Tokens go
 * back after every receive, so nothing else is held. Under the lock;
 * returns the clamp (0: none needed) or the error.
 */
static int core_limit_windows(struct dm_core *k)
{
	size_t share = k->nsocks ? devmem_mem_size(k->mem) / k->nsocks : 0;
	int ret = 0;

	for (unsigned int i = 0; i < k->nsocks && ret >= 0; i++) {
		/* rdpmd sets it past rmem_max, which an unprivileged rank cannot */
		ret = k->rdpm ? rdpm_limit_window(k->rdpm, k->handle, k->socks[i], share) :
				-EOPNOTSUPP;
		if (ret == -EOPNOTSUPP)
			ret = devmem_rx_limit_window(k->socks[i], share);
	}
	return ret;
}

/* What the kernel gave a socket's receive buffer (for DEVCOLL_DEBUG). */
static int rcvbuf(int fd)
{
	int v = 0;
	socklen_t l = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l) ? -1 : v;
}

/* Adds a communicator's steered connections to the core's, or takes them
 * out (@add false), and sets every window to the new share. */
static int core_socks(struct dm_core *k, devcoll_comm *c, bool add, bool debug)
{
	int n = c->size * (int)c->nconns, ret = 0;
	int *socks = k->socks;

	pthread_mutex_lock(&k->lock);
	if (add)
		socks = realloc(k->socks, (k->nsocks + (size_t)n + 1) * sizeof(*socks));
	if (add && !socks) {
		pthread_mutex_unlock(&k->lock);
		return dc_fail(-ENOMEM, "out of memory");
	}
	k->socks = socks;
	for (int i = 0; i < n; i++) {
		int fd = c->conns[i].fd;
		unsigned int j = 0;

		if (!c->conns[i].drx)
			continue;
		if (add) {
			socks[k->nsocks++] = fd;
			continue;
		}
		while (j < k->nsocks && socks[j] != fd)
			j++;
		if (j < k->nsocks)
			socks[j] = socks[--k->nsocks];
	}
	ret = core_limit_windows(k);
	if (debug && ret >= 0)
		fprintf(stderr, "devcoll rank %d: devmem: %u connections share the %zu-byte dma-buf: "
			"window limit %d bytes (0: autotuning stays below it), receive buffer %d "
			"bytes%s\n", c->rank, k->nsocks, devmem_mem_size(k->mem), ret,
			k->nsocks ? rcvbuf(k->socks[0]) : 0,
			k->rdpm && !rdpm_in_process(k->rdpm) ? " (set by rdpmd)" : "");
	pthread_mutex_unlock(&k->lock);
	if (!add || ret >= 0)
		return 0;	/* a share that grew cannot be too small */
	if (ret == -EINVAL)
		return dc_fail(ret, "devmem: the %zu-byte dma-buf is too small for %u connections "
			       "(%s): raise DEVCOLL_DEVMEM_SIZE", devmem_mem_size(k->mem),
			       k->nsocks, devmem_last_error());
	return dc_fail(ret, "devmem: %s", devmem_last_error());
}

static void core_dead(struct dm_core *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* rdpmd dropped the binding (k->lock held). Shutting the client socket down
 * makes it readable for good, so every communicator sharing the core wakes
 * and fails, not only the one that read the event; rdpmd then releases what
 * is left of the client. */
static void core_dead(struct dm_core *k, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->why, sizeof(k->why), fmt, ap);
	va_end(ap);
	k->dead = -ENETDOWN;
	shutdown(rdpm_fd(k->rdpm), SHUT_RDWR);
}

/* Reads rdpmd's pending events (k->lock held). */
static void core_events(struct dm_core *k)
{
	static const char *const what[] = {
		[RDPM_EVENT_LINK_DOWN] = "went down",
		[RDPM_EVENT_REMOVED] = "was removed",
		[RDPM_EVENT_DRAINED] = "was drained by an administrator",
		[RDPM_EVENT_CONFIG] = "is no longer allowed to this user (rdpmd's configuration "
				      "was reloaded)",
	};
	struct rdpm_event_info ev;
	int ret;

	while (!k->dead && (ret = rdpm_next_event(k->rdpm, &ev, 0))) {
		if (ret < 0)	/* rdpmd exited: the kernel unbound its dma-bufs */
			core_dead(k, "lost rdpmd (%s); devmem receive stopped",
				  devmem_last_error());
		else if (!ev.handle || ev.handle == k->handle)
			core_dead(k, "rdpmd: %s %s; devmem receive stopped", ev.ifname,
				  ev.event < sizeof(what) / sizeof(what[0]) && what[ev.event] ?
				  what[ev.event] : "lost the binding (unknown event)");
	}
}

/*
 * Connects to rdpmd per DEVCOLL_DEVMEM_RDPM: 1 with the client in *out, 0
 * for the direct path (off, or auto with no daemon), negative on errors.
 * rdpm_connect()'s in-process mode is not used: the direct path is the
 * same set-up without the client's undo of the NIC preparation.
 */
static int rdpm_open(struct rdpm_client **out)
{
	const char *mode = getenv("DEVCOLL_DEVMEM_RDPM"), *path = getenv("RDPM_SOCKET");
	bool on;
	int ret;

	if (path && !*path)
		path = NULL;
	if (!mode || !*mode || !strcmp(mode, "auto"))
		on = false;
	else if (!strcmp(mode, "on"))
		on = true;
	else if (!strcmp(mode, "off"))
		return 0;
	else
		return dc_fail(-EINVAL, "DEVCOLL_DEVMEM_RDPM=%s: want auto, on or off", mode);
	ret = rdpm_connect(out, path);
	if (!ret && !rdpm_in_process(*out))
		return 1;
	if (!ret) {	/* no daemon, but CAP_NET_ADMIN */
		rdpm_close(*out);
		*out = NULL;
		ret = -ECONNREFUSED;
	} else if (ret != -ENOENT && ret != -ECONNREFUSED) {
		/* a daemon is there but does not serve us */
		return dc_fail(ret, "devmem: %s", devmem_last_error());
	}
	if (on)
		return dc_fail(ret, "DEVCOLL_DEVMEM_RDPM=on, but no rdpmd listens at %s",
			       path ? path : "the default socket (/run/rdpm/rdpm.sock)");
	return 0;
}

/*
 * A peer on this host (its address is one of this namespace's) is reached
 * over loopback, whose packets carry host pages that recvmsg(MSG_SOCK_DEVMEM)
 * refuses: such a connection stays on the plain path. A datagram socket
 * binds to an address only where it is local.
 */
static bool peer_is_local(int fd)
{
	struct sockaddr_storage p;
	socklen_t pl = sizeof(p);
	int s, ok;

	if (getpeername(fd, (struct sockaddr *)&p, &pl))
		return false;
	if (p.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&p)->sin6_port = 0;
	else
		((struct sockaddr_in *)&p)->sin_port = 0;
	s = socket(p.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	ok = !bind(s, (struct sockaddr *)&p, pl);
	close(s);
	return ok;
}

/* An error of the direct path; refused privilege is the usual case of a
 * job that expected rdpmd, so say so. */
static int direct_fail(int ret)
{
	if (ret == -EPERM || ret == -EACCES)
		return dc_fail(ret, "devmem: %s (without CAP_NET_ADMIN the devmem path needs rdpmd, "
			       "and none listens at $RDPM_SOCKET or /run/rdpm/rdpm.sock)",
			       devmem_last_error());
	return dc_fail(ret, "devmem: %s", devmem_last_error());
}

/* The dma-buf, per DEVCOLL_DEVMEM_MEM: host memory (udmabuf) or GPU memory. */
static int mem_new(struct dm_core *k, size_t size)
{
	const char *kind = getenv("DEVCOLL_DEVMEM_MEM");
	int ret;

	if (kind && !strcmp(kind, "cuda")) {
		k->cuda_device = (int)dc_env_long("DEVCOLL_DEVMEM_CUDA_DEVICE", 0);
		ret = devmem_mem_cuda(&k->mem, k->cuda_device, size);
	} else if (!kind || !*kind || !strcmp(kind, "udmabuf")) {
		ret = devmem_mem_udmabuf(&k->mem, size, 0);
	} else {
		return dc_fail(-EINVAL, "DEVCOLL_DEVMEM_MEM=%s: want udmabuf or cuda", kind);
	}
	return ret ? dc_fail(ret, "devmem: %s", devmem_last_error()) : 0;
}

static int core_new(struct dm_core **out, int rank, bool debug)
{
	const char *ifname = getenv("DEVCOLL_DEVMEM_IFACE");
	size_t size = (size_t)dc_env_long("DEVCOLL_DEVMEM_SIZE", 64 << 20);
	struct rdpm_buffer rb;
	struct dm_core *k;
	unsigned int q;
	int ret;

	if (!ifname)
		return dc_fail(-EINVAL, "DEVCOLL_RX=devmem needs DEVCOLL_DEVMEM_IFACE (the NIC to "
			       "receive on)");
	k = calloc(1, sizeof(*k));
	if (!k)
		return dc_fail(-ENOMEM, "out of memory");
	pthread_mutex_init(&k->lock, NULL);
	k->refs = 1;
	*out = k;
	ret = rdpm_open(&k->rdpm);
	if (ret < 0)
		return ret;
	ret = mem_new(k, size);
	if (ret)
		return ret;
	if (k->rdpm) {
		/* rdpmd picks the queues: DEVCOLL_DEVMEM_QUEUE is not used */
		ret = rdpm_register_buffer(k->rdpm, ifname, k->mem, 0, &rb);
		if (ret)
			return dc_fail(ret, "devmem: %s", devmem_last_error());
		k->handle = rb.handle;
		k->dmabuf_id = rb.dmabuf_id;
		if (debug)
			fprintf(stderr, "devcoll rank %d: devmem: rdpmd bound the dma-buf to %u "
				"queue(s) of %s from %u\n", rank, rb.nqueues, ifname, rb.queues[0]);
	} else {
		q = (unsigned int)dc_env_long("DEVCOLL_DEVMEM_QUEUE", -1);
		ret = devmem_nic_open(&k->nic, ifname);
		if (ret)
			return direct_fail(ret);
		if (q == (unsigned int)-1) {
			ret = devmem_nic_devmem_queue(k->nic, &q);
			if (ret < 0)
				return direct_fail(ret);
		}
		k->queue = q;
		ret = devmem_bind_rx(&k->binding, k->nic, k->mem, &q, 1);
		if (ret)
			return direct_fail(ret);
		k->dmabuf_id = devmem_binding_id(k->binding);
		if (debug)
			fprintf(stderr, "devcoll rank %d: devmem: the dma-buf bound to queue %u of "
				"%s directly\n", rank, q, ifname);
	}
	if (devmem_mem_kind(k->mem) == DEVMEM_MEM_CUDA) {
		if (debug)
			fprintf(stderr, "devcoll rank %d: devmem: the dma-buf is GPU memory (CUDA "
				"device %d), read through libdevmem's unpack kernels\n", rank,
				k->cuda_device);
		return 0;
	}
	k->map = devmem_cpu_begin(k->mem, DEVMEM_CPU_READ);
	if (!k->map)
		return dc_fail(-EIO, "devmem: %s", devmem_last_error());
	return 0;
}

/* Steers one connection's flow, that of socket @fd, to the core's queue(s):
 * rdpmd reads it from the socket, the proof that it is ours. */
static int steer(struct dm_core *k, int fd, const struct devmem_flow *f, uint32_t *id)
{
	struct devmem_flow_target t = { .queue = k->queue };
	unsigned int q;
	int ret;

	pthread_mutex_lock(&k->lock);
	if (k->rdpm) {
		ret = rdpm_steer_socket(k->rdpm, k->handle, fd, NULL, &q, id);
		/* the client queues events that came before the reply, where
		 * no communicator's epoll sees them */
		core_events(k);
	} else {
		ret = devmem_nic_flow_add(k->nic, f, &t, id);
	}
	pthread_mutex_unlock(&k->lock);
	return ret;
}

static int dm_setup(devcoll_comm *c, const devcoll_comm *parent)
{
	struct dm_state *d;
	int ret, nc = c->size * (int)c->nconns;

	d = calloc(1, sizeof(*d));
	if (!d)
		return dc_fail(-ENOMEM, "out of memory");
	c->dm = d;
	d->debug = dc_env_long("DEVCOLL_DEBUG", 0) != 0;
	d->rules = calloc((size_t)nc, sizeof(*d->rules));
	d->carry = calloc((size_t)nc, sizeof(*d->carry));
	d->carry_len = calloc((size_t)nc, sizeof(*d->carry_len));
	d->linear = malloc(DM_LINEAR);
	if (!d->rules || !d->carry || !d->carry_len || !d->linear)
		return dc_fail(-ENOMEM, "out of memory");
	if (parent && parent->dm) {
		d->core = ((struct dm_state *)parent->dm)->core;
		pthread_mutex_lock(&d->core->lock);
		d->core->refs++;
		pthread_mutex_unlock(&d->core->lock);
	} else {
		ret = core_new(&d->core, c->rank, d->debug);
		if (ret)
			return ret;
	}
	d->nic = d->core->nic;
	d->map = d->core->map;
	if (!d->map) {
		d->gpu = calloc((size_t)nc, sizeof(*d->gpu));
		if (!d->gpu)
			return dc_fail(-ENOMEM, "out of memory");
	}
	if (d->core->rdpm) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = DC_EPOLL_RDPM };

		if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, rdpm_fd(d->core->rdpm), &ev))
			return dc_fail(-errno, "epoll_ctl: %s", strerror(errno));
	}
	for (int i = 0; i < nc; i++) {
		struct conn *k = &c->conns[i];
		struct devmem_flow f;

		if (k->fd < 0)
			continue;
		if (peer_is_local(k->fd)) {
			d->local_conns++;
			continue;
		}
		flow_of(k->fd, &f);
		ret = steer(d->core, k->fd, &f, &d->rules[d->nrules]);
		if (ret)
			return dc_fail(ret, "devmem: steering the connection from rank %d: %s", k->peer,
				       devmem_last_error());
		d->nrules++;
		ret = devmem_rx_open(&k->drx, k->fd, DM_RECV_MAX);
		/* fragments are read at their offsets: only ours, within it */
		if (!ret)
			ret = devmem_rx_set_buffer(k->drx, d->core->dmabuf_id,
						   devmem_mem_size(d->core->mem));
		if (ret)
			return dc_fail(ret, "devmem: %s", devmem_last_error());
	}
	return core_socks(d->core, c, true, d->debug);
}

/*
 * Every rank's set-up status, allgathered: a rank that failed (rdpmd said
 * no, say) makes every rank fail with its message rather than leaving the
 * others to fail at their first collective with a reset connection. The
 * failed rank keeps what it set up until then, so the exchange reads each
 * connection the way it is steered.
 */
struct dm_status {
	int32_t err;
	char msg[252];
};

static int dm_agree(devcoll_comm *c, int err)
{
	struct dm_status me = { err, "" }, *all;
	int ret;

	if (err)
		snprintf(me.msg, sizeof(me.msg), "%s", devcoll_last_error());
	all = calloc((size_t)c->size, sizeof(*all));
	if (!all)
		return err ? err : dc_fail(-ENOMEM, "out of memory");
	ret = devcoll_allgather(c, &me, all, sizeof(me), DEVCOLL_UINT8);
	for (int r = 0; !ret && !err && r < c->size; r++)
		if (all[r].err)
			ret = dc_fail(all[r].err < 0 ? all[r].err : -EIO, "rank %d: %.*s", r,
				      (int)sizeof(all[r].msg), all[r].msg);
	free(all);
	if (err)	/* its own message, not the exchange's */
		return dc_fail(err, "rank %d: %s", c->rank, me.msg);
	return ret;
}

int dc_dm_setup(devcoll_comm *c, const devcoll_comm *parent)
{
	return dm_agree(c, dm_setup(c, parent));
}

int dc_dm_dead(devcoll_comm *c, char *why, size_t len)
{
	struct dm_state *d = c->dm;
	struct dm_core *k = d ? d->core : NULL;
	int dead;

	if (!k || !k->rdpm)
		return 0;
	pthread_mutex_lock(&k->lock);
	core_events(k);
	dead = k->dead;
	if (dead)
		snprintf(why, len, "%s", k->why);
	pthread_mutex_unlock(&k->lock);
	return dead;
}

int dc_dm_check(devcoll_comm *c)
{
	char why[sizeof(((struct dm_core *)0)->why)];
	int dead = dc_dm_dead(c, why, sizeof(why));

	return dead ? dc_comm_fail(c, dead, "%s", why) : 0;
}

void dc_dm_free(devcoll_comm *c)
{
	struct dm_state *d = c->dm;

	if (!d)
		return;
	if (d->debug)
		fprintf(stderr, "devcoll rank %d: devmem: %llu bytes via the dma-buf, %llu linear; "
			"%u connections steered, %u to ranks on this host (plain)\n", c->rank,
			(unsigned long long)d->dmabuf_bytes, (unsigned long long)d->linear_bytes,
			d->nrules, d->local_conns);
	if (d->debug && d->gpu)
		fprintf(stderr, "devcoll rank %d: devmem: %llu bytes received straight into GPU "
			"buffers, %llu reduced on the GPU as they lay in the dma-buf\n", c->rank,
			(unsigned long long)d->gpu_direct_bytes,
			(unsigned long long)d->gpu_reduced_bytes);
	/* the others' share grows */
	if (d->core)
		core_socks(d->core, c, false, false);
	for (int i = 0; d->gpu && i < c->size * (int)c->nconns; i++) {
		/* the kernels end before the fragments go back with the socket */
		devmem_unpack_close(d->gpu[i].u);
		devmem_mem_free(d->gpu[i].dev);
		free(d->gpu[i].host);
	}
	for (int i = 0; i < c->size * (int)c->nconns; i++)
		if (c->conns[i].drx) {
			devmem_rx_close(c->conns[i].drx);
			c->conns[i].drx = NULL;
		}
	if (d->core) {
		struct dm_core *k = d->core;

		pthread_mutex_lock(&k->lock);
		for (unsigned int i = 0; i < d->nrules; i++)
			if (!k->rdpm)
				devmem_nic_flow_del(d->nic, d->rules[i]);
			else if (!k->dead)	/* else rdpmd removed them */
				rdpm_unsteer(k->rdpm, d->rules[i]);
		if (k->rdpm && d->nrules)
			core_events(k);	/* for the communicators still sharing it */
		pthread_mutex_unlock(&k->lock);
		core_put(d->core);
	}
	free(d->gpu);
	free(d->rules);
	free(d->carry);
	free(d->carry_len);
	free(d->linear);
	free(d);
	c->dm = NULL;
}

/* dst + pos = a + pos OP the @len bytes at @src (positions counted from an
 * element boundary of the chunk; @a may be @dst), carrying a split element
 * over. */
static void reduce_bytes(struct dm_state *d, int ci, char *dst, const char *a, size_t pos,
			 const char *src, size_t len, reduce_fn red, size_t es)
{
	unsigned int *cl = &d->carry_len[ci];

	if (*cl) {
		size_t take = es - *cl < len ? es - *cl : len;

		memcpy(d->carry[ci] + *cl, src, take);
		*cl += (unsigned int)take;
		src += take;
		len -= take;
		pos += take;
		if (*cl < es)
			return;
		red(dst + pos - es, a + pos - es, d->carry[ci], 1);
		*cl = 0;
	}
	size_t nel = len / es;

	if (nel) {
		if ((uintptr_t)src % es) {	/* misaligned: through a small bounce */
			char bounce[4096] __attribute__((aligned(8)));

			for (size_t done = 0; done < nel;) {
				size_t m = nel - done < sizeof(bounce) / es ? nel - done : sizeof(bounce) / es;

				memcpy(bounce, src + done * es, m * es);
				red(dst + pos + done * es, a + pos + done * es, bounce, m);
				done += m;
			}
		} else {
			red(dst + pos, a + pos, src, nel);
		}
	}
	if (len % es) {
		memcpy(d->carry[ci], src + nel * es, len % es);
		*cl = (unsigned int)(len % es);
	}
}

bool dc_dm_gpu_direct(const devcoll_comm *c, int peer)
{
	const struct dm_state *d = c->dm;

	if (!d || !d->gpu || peer < 0 || peer >= c->size)
		return false;
	for (unsigned int i = 0; i < c->nconns; i++)
		if (!c->conns[peer * (int)c->nconns + (int)i].drx)
			return false;
	return true;
}

/* The unpack handle of connection @g, and its device buffer for a message
 * of @whole bytes (0: none needed); libdevmem's error. */
static int gpu_ready(struct dm_state *d, struct dm_gpu *g, size_t whole)
{
	int ret = 0;

	if (!g->u)
		ret = devmem_unpack_open(&g->u, d->core->mem);
	if (!ret && whole && g->cap < whole) {
		size_t cap = g->cap ? g->cap : 65536;

		while (cap < whole)
			cap *= 2;
		devmem_mem_free(g->dev);
		free(g->host);
		g->host = NULL;
		g->cap = 0;
		ret = devmem_mem_cuda(&g->dev, d->core->cuda_device, cap);
		if (!ret)
			g->cap = cap;
	}
	return ret;
}

/* The unpack kernels' type and operation for reduction @red: false for
 * the types they lack (8, 16 and 64-bit integers, unsigned ones), which
 * the host reduces. AVG sums (dc_avg_finish() divides at the end). */
static bool gpu_reduction(reduce_fn red, enum devmem_unpack_type *type,
			  enum devmem_unpack_op *op)
{
	static const struct { enum devcoll_dtype t; enum devmem_unpack_type u; } types[] = {
		{ DEVCOLL_INT32, DEVMEM_UNPACK_INT32 }, { DEVCOLL_FP16, DEVMEM_UNPACK_FP16 },
		{ DEVCOLL_BF16, DEVMEM_UNPACK_BF16 }, { DEVCOLL_FP32, DEVMEM_UNPACK_FP32 },
		{ DEVCOLL_FP64, DEVMEM_UNPACK_FP64 },
	};
	static const struct { enum devcoll_op o; enum devmem_unpack_op u; } ops[] = {
		{ DEVCOLL_SUM, DEVMEM_UNPACK_SUM }, { DEVCOLL_PROD, DEVMEM_UNPACK_PROD },
		{ DEVCOLL_MIN, DEVMEM_UNPACK_MIN }, { DEVCOLL_MAX, DEVMEM_UNPACK_MAX },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		for (size_t j = 0; j < sizeof(ops) / sizeof(ops[0]); j++)
			if (dc_reduce_fn(types[i].t, ops[j].o) == red) {
				*type = types[i].u;
				*op = ops[j].u;
				return true;
			}
	return false;
}

/*
 * dc_dm_recv() on a CUDA dma-buf: the message (a payload, or a header
 * outside one) is gathered in the connection's device buffer, one batch a
 * call, and copied to @dst by the call that completes it. A reduction of a
 * type the kernels have starts from @a copied into that buffer, and the
 * kernels reduce each batch into it as its fragments lie in the dma-buf
 * (no gather first); the call that completes it copies the result to
 * @dst. The engine reads a payload only once it is complete.
 */
static ssize_t gpu_recv(devcoll_comm *c, struct dm_state *d, struct conn *k, void *dst,
			const void *a, size_t len, reduce_fn red, size_t es)
{
	struct dm_gpu *g = &d->gpu[k - c->conns];
	size_t at = k->rinpay ? k->rpay_got : 0, whole = k->rinpay ? k->rpay_len : len;
	char *dst0 = (char *)dst - at;
	const char *a0 = a ? (const char *)a - at : NULL;
	ssize_t n;
	int ret;

	if (!at) {
		/* a point-to-point payload for a device buffer (a receive
		 * left unstaged, cuda.c) goes straight there; collectives'
		 * chunks never do, so they ask the driver nothing */
		enum devmem_unpack_type type = DEVMEM_UNPACK_INT32;
		enum devmem_unpack_op op = DEVMEM_UNPACK_COPY;

		g->direct = k->rinpay && !red && k->rhdr.kind == K_SEND &&
			    dc_cuda_on_device(dst0);
		g->reduce = red && gpu_reduction(red, &type, &op);
		ret = gpu_ready(d, g, g->direct ? 0 : whole);
		if (!ret && g->reduce)
			ret = devmem_mem_write(g->dev, 0, a0, whole);
		if (!ret)
			ret = devmem_unpack_begin(g->u, g->direct ? dst0 : devmem_mem_cuda_ptr(g->dev),
						  whole, type, op, 1);
		if (ret)
			return dc_fail(ret, "devmem: %s", devmem_last_error());
	}
	n = devmem_rx_unpack(k->drx, g->u, len, 0);
	if (n <= 0)
		return n;
	d->dmabuf_bytes += (uint64_t)n;
	if (g->direct)
		d->gpu_direct_bytes += (uint64_t)n;
	if (g->reduce)
		d->gpu_reduced_bytes += (uint64_t)n;
	if (at + (size_t)n < whole)
		return n;
	ret = devmem_rx_unpack_wait(k->drx);
	if (!ret && !g->direct && red && !g->reduce) {
		if (!g->host)
			g->host = malloc(g->cap);
		ret = g->host ? devmem_mem_read(g->dev, 0, g->host, whole) : -ENOMEM;
		if (!ret)
			reduce_bytes(d, (int)(k - c->conns), dst0, a0, 0, g->host, whole, red, es);
	} else if (!ret && !g->direct) {
		ret = devmem_mem_read(g->dev, 0, dst0, whole);
	}
	return ret ? dc_fail(ret, "devmem: %s", devmem_last_error()) : n;
}

ssize_t dc_dm_recv(devcoll_comm *c, struct conn *k, void *dst, const void *a, size_t len,
		   reduce_fn red, size_t es)
{
	struct dm_state *d = c->dm;
	unsigned int nf = 0;
	int ci = (int)(k - c->conns);
	size_t pos = 0;
	ssize_t n;

	if (!d)
		return -EOPNOTSUPP;
	if (len > DM_RECV_MAX)
		len = DM_RECV_MAX;
	if (d->gpu)
		return gpu_recv(c, d, k, dst, a, len, red, es);
	n = devmem_rx_recv_exact(k->drx, len, d->frags, DM_MAXFRAGS, &nf, d->linear, DM_LINEAR);
	if (n <= 0)
		return n;	/* a failed receive leaves no fragment with us */
	for (unsigned int i = 0; i < nf; i++) {
		const struct devmem_frag *f = &d->frags[i];
		const char *src = f->linear ? f->linear : d->map + f->offset;

		if (f->linear)
			d->linear_bytes += f->len;
		else
			d->dmabuf_bytes += f->len;
		if (red)
			reduce_bytes(d, ci, dst, a, pos, src, f->len, red, es);
		else
			memcpy((char *)dst + pos, src, f->len);
		pos += f->len;
		devmem_rx_release(k->drx, f);
	}
	devmem_rx_flush(k->drx);
	return n;
}
