// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The RDPM client: asks rdpmd (rdpm/, protocol in rdpm_proto.h)
 * to bind dma-bufs and steer flows for an unprivileged application. With no
 * daemon and CAP_NET_ADMIN, the same calls do the set-up in-process with
 * the nic and binding parts of the library, undone by rdpm_close().
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "rdpm_proto.h"
#include "rdpm_wire.h"

#include "devmem_rdpm.h"
#include "internal.h"

_Static_assert(RDPM_QUEUES_MAX == RDPM_MAX_QUEUES, "queue limits of API and protocol");

#define EVQ		16	/* events kept while waiting for a reply */
#define LOCAL_MAX	16	/* in-process bindings */
/* How long a request waits for its reply: binding a large dma-buf can take
 * the daemon tens of seconds on a slow kernel (KASAN and DMA-API debugging
 * under TCG, beside another VM); a daemon that never answers still fails
 * the call instead of hanging it. */
#define REPLY_TIMEOUT_S	120

/* An in-process binding: its own NIC handle, so closing it restores. */
struct local_binding {
	struct devmem_nic *nic;
	struct devmem_binding *b;
	unsigned int nq, q[RDPM_QUEUES_MAX], rules[RDPM_QUEUES_MAX];
};

struct local_flow {
	uint32_t id, handle, rule;
	unsigned int qi;
};

struct rdpm_client {
	int fd;				/* -1: in-process */
	char path[108];			/* rdpmd's socket, for messages */
	uint32_t next_id;
	struct rdpm_event_info ev[EVQ];
	unsigned int nev;
	struct local_binding lb[LOCAL_MAX];	/* handle = index + 1 */
	struct local_flow *lf;
	unsigned int nlf, caplf;
	uint32_t next_flow;
	int passed_fd;			/* came with the last reply (JOIN); -1: none */
};

static bool has_net_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32));
}

static int xfer_send(struct rdpm_client *c, uint16_t type, const void *body, size_t len, int fd,
		     uint32_t *id)
{
	struct rdpm_hdr h = { RDPM_MAGIC, RDPM_VERSION, type, sizeof(h) + len, ++c->next_id };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };

	if (!c->next_id)
		h.id = ++c->next_id;
	*id = h.id;
	if (rdpm_send_fds(c->fd, iov, 2, &fd, fd >= 0, 0) < 0)
		return devmem_fail_errno(-errno, "rdpmd: sending a request");
	return 0;
}

/* Reads one message into @buf; keeps events. 1: a reply or error, 0: an
 * event was queued, negative on errors. */
static int xfer_recv(struct rdpm_client *c, char *buf, size_t cap, struct rdpm_hdr *h, int timeout)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	struct iovec iov = { buf, cap };
	unsigned int nfds;
	int fd, flags;
	ssize_t n;

	if (poll(&p, 1, timeout) == 0)
		return -ETIMEDOUT;
	/* rdpmd passes one fd at most: any more are never opened here. */
	n = rdpm_recv_fds(c->fd, &iov, 1, &fd, 1, &nfds, &flags, MSG_DONTWAIT);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	if (n < 0)
		return devmem_fail_errno(-errno, "rdpmd: receiving");
	/* A JOIN reply's dma-buf: kept until rdpm_join_shared() takes it. */
	if (nfds) {
		if (c->passed_fd >= 0)
			close(c->passed_fd);
		c->passed_fd = fd;
	}
	if (n == 0)
		return devmem_fail(-ECONNRESET, "rdpmd closed the connection");
	memcpy(h, buf, n < (ssize_t)sizeof(*h) ? 0 : sizeof(*h));
	if (n < (ssize_t)sizeof(*h) || h->magic != RDPM_MAGIC || h->length != (size_t)n)
		return devmem_fail(-EPROTO, "rdpmd: malformed message");
	if (h->type == RDPM_EVENT) {
		struct rdpm_event e;

		if (h->length != sizeof(*h) + sizeof(e))
			return devmem_fail(-EPROTO, "rdpmd: malformed event");
		memcpy(&e, buf + sizeof(*h), sizeof(e));
		if (c->nev < EVQ) {
			c->ev[c->nev].event = e.event;
			c->ev[c->nev].handle = e.handle;
			memcpy(c->ev[c->nev].ifname, e.ifname, sizeof(e.ifname));
			c->ev[c->nev].ifname[sizeof(e.ifname) - 1] = 0;
			c->nev++;
		}
		return 0;
	}
	return 1;
}

/* The error reply in @buf (header @h) as this call's failure. */
static int xfer_error(const char *buf, const struct rdpm_hdr *h)
{
	struct rdpm_error e;

	if (h->length < sizeof(*h) + sizeof(e) + 1 || buf[h->length - 1])
		return devmem_fail(-EPROTO, "rdpmd: malformed error reply");
	memcpy(&e, buf + sizeof(*h), sizeof(e));
	return devmem_fail(e.err < 0 ? e.err : -EPROTO, "rdpmd: %s", buf + sizeof(*h) + sizeof(e));
}

/*
 * rdpmd refuses a connection it will not serve (a uid that may use no NIC)
 * with an error of id 0 and closes it, maybe before our request went out:
 * that error, if it is waiting, says why better than EPIPE would.
 */
static int xfer_refused(struct rdpm_client *c, char *buf, size_t cap, int err)
{
	struct rdpm_hdr h;

	/* Closing with our request unread, rdpmd left a pending ECONNRESET,
	 * reported once before the queued messages: a few tries read past it. */
	for (int tries = 0, r; tries < 4; tries++) {
		r = xfer_recv(c, buf, cap, &h, 0);
		if (r == 1 && h.type == RDPM_ERROR && !h.id)
			return xfer_error(buf, &h);
		if (r < 0 && r != -ECONNRESET)
			break;
	}
	return err;
}

/* One request; its reply body, @blen bytes, moved to the start of @buf. */
static int xfer_buf(struct rdpm_client *c, uint16_t type, const void *body, size_t len, int fd,
		    char *buf, size_t cap, size_t *blen)
{
	struct rdpm_hdr h;
	uint32_t id;
	int err = xfer_send(c, type, body, len, fd, &id);

	if (err == -EPIPE || err == -ECONNRESET)
		return xfer_refused(c, buf, cap, err);
	while (!err) {
		err = xfer_recv(c, buf, cap, &h, REPLY_TIMEOUT_S * 1000);
		if (err == -ETIMEDOUT)
			return devmem_fail(err, "rdpmd did not answer within %d s", REPLY_TIMEOUT_S);
		if (err == -ECONNRESET)
			return xfer_refused(c, buf, cap, err);
		if (err < 0)
			return err;
		if (err && h.type == RDPM_ERROR && !h.id)
			return xfer_error(buf, &h);
		if (!err || h.id != id) {
			err = 0;
			continue;
		}
		if (h.type == RDPM_ERROR)
			return xfer_error(buf, &h);
		if (h.type != (type | RDPM_REPLY))
			return devmem_fail(-EPROTO, "rdpmd: unexpected reply (type 0x%x, %u bytes)",
					   h.type, h.length);
		*blen = h.length - sizeof(h);
		memmove(buf, buf + sizeof(h), *blen);
		return 0;
	}
	return err;
}

/* One request and its reply body (exactly @rlen bytes into @reply). */
static int xfer(struct rdpm_client *c, uint16_t type, const void *body, size_t len, int fd,
		void *reply, size_t rlen)
{
	char buf[RDPM_MAX_MSG];
	size_t blen;
	int err = xfer_buf(c, type, body, len, fd, buf, sizeof(buf), &blen);

	if (!err && blen != rlen)
		return devmem_fail(-EPROTO, "rdpmd: unexpected reply (type 0x%x, %zu bytes)",
				   type | RDPM_REPLY, blen);
	if (!err && rlen)
		memcpy(reply, buf, rlen);
	return err;
}

DEVMEM_EXPORT int rdpm_connect(struct rdpm_client **out, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rdpm_hello hello = { RDPM_VERSION, RDPM_VERSION, 0 };
	struct rdpm_hello_reply hr;
	struct rdpm_client *c;
	int err;

	if (!out)
		return devmem_fail(-EINVAL, "rdpm_connect: out is NULL");
	if (!path)
		path = RDPM_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path))
		return devmem_fail(-ENAMETOOLONG, "rdpm_connect: socket path too long");
	strcpy(sa.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return devmem_fail(-ENOMEM, "rdpm_connect: out of memory");
	c->next_flow = 1;
	c->passed_fd = -1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		err = devmem_fail_errno(-errno, "rdpm_connect: socket");
		free(c);
		return err;
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(c->fd);
		c->fd = -1;
		if ((err == -ENOENT || err == -ECONNREFUSED) && has_net_admin()) {
			*out = c;	/* in-process */
			return 0;
		}
		free(c);
		return devmem_fail_errno(err, "rdpm_connect: %s: no rdpmd there, and without "
					 "CAP_NET_ADMIN no in-process set-up", path);
	}
	err = xfer(c, RDPM_HELLO, &hello, sizeof(hello), -1, &hr, sizeof(hr));
	if (!err && hr.version != RDPM_VERSION)
		err = devmem_fail(-EPROTONOSUPPORT, "rdpmd chose protocol version %u", hr.version);
	if (err) {
		close(c->fd);
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

DEVMEM_EXPORT bool rdpm_in_process(const struct rdpm_client *c)
{
	return c && c->fd < 0;
}

DEVMEM_EXPORT int rdpm_fd(const struct rdpm_client *c)
{
	return c ? c->fd : -EINVAL;
}

/* ------------------------------------------------------------ in-process */

static void local_unbind(struct local_binding *lb)
{
	devmem_unbind(lb->b);
	/* Rules, the RSS table, ntuple and header split, newest first. */
	devmem_nic_close(lb->nic, true);
	memset(lb, 0, sizeof(*lb));
}

static int local_register(struct rdpm_client *c, const char *ifname, struct devmem_mem *mem,
			  unsigned int nq, uint32_t page_size, struct rdpm_buffer *out)
{
	struct local_binding *lb = NULL;
	struct devmem_reservation r;
	int err, i;

	for (i = 0; i < LOCAL_MAX && !lb; i++)
		if (!c->lb[i].nic)
			lb = &c->lb[i];
	if (!lb)
		return devmem_fail(-EDQUOT, "rdpm (in-process): at most %d buffers", LOCAL_MAX);
	err = devmem_nic_open(&lb->nic, ifname);
	if (err)
		return err;
	nq = nq ? nq : 1;
	/* The last @nq queues, as rdpmd reserves them; no state file: the
	 * handle's restore at rdpm_close() undoes it. */
	err = devmem_nic_reserve(lb->nic, 0, nq, NULL, &r);
	for (unsigned int q = 0; !err && q < nq; q++)
		lb->q[q] = r.first + q;
	lb->nq = nq;
	if (!err)
		err = devmem_bind_rx_page_size(&lb->b, lb->nic, mem, lb->q, nq, page_size);
	if (err) {
		devmem_nic_close(lb->nic, true);
		memset(lb, 0, sizeof(*lb));
		return err;
	}
	out->handle = lb - c->lb + 1;
	out->dmabuf_id = devmem_binding_id(lb->b);
	out->nqueues = nq;
	memcpy(out->queues, lb->q, sizeof(out->queues));
	return 0;
}

static struct local_binding *local_binding(struct rdpm_client *c, uint32_t handle)
{
	if (!handle || handle > LOCAL_MAX || !c->lb[handle - 1].nic) {
		devmem_fail(-ENOENT, "rdpm: no buffer with handle %u", handle);
		return NULL;
	}
	return &c->lb[handle - 1];
}

static int local_steer(struct rdpm_client *c, uint32_t handle, const struct devmem_flow *flow,
		       unsigned int *queue, uint32_t *flow_id)
{
	struct local_binding *lb = local_binding(c, handle);
	struct devmem_flow_target t = { 0 };
	unsigned int best = 0;
	uint32_t rule;
	int err;

	if (!lb)
		return -ENOENT;
	for (unsigned int i = 1; i < lb->nq; i++)
		if (lb->rules[i] < lb->rules[best])
			best = i;
	if (c->nlf == c->caplf) {
		unsigned int cap = c->caplf ? 2 * c->caplf : 16;
		struct local_flow *v = realloc(c->lf, cap * sizeof(*v));

		if (!v)
			return devmem_fail(-ENOMEM, "rdpm: out of memory");
		c->lf = v;
		c->caplf = cap;
	}
	t.queue = lb->q[best];
	err = devmem_nic_flow_add(lb->nic, flow, &t, &rule);
	if (err)
		return err;
	lb->rules[best]++;
	c->lf[c->nlf] = (struct local_flow){ c->next_flow++, handle, rule, best };
	*flow_id = c->lf[c->nlf++].id;
	*queue = t.queue;
	return 0;
}

static void local_flow_del(struct rdpm_client *c, unsigned int i)
{
	struct local_binding *lb = &c->lb[c->lf[i].handle - 1];

	devmem_nic_flow_del(lb->nic, c->lf[i].rule);
	lb->rules[c->lf[i].qi]--;
	c->lf[i] = c->lf[--c->nlf];
}

/* ------------------------------------------------------------------- API */

/* A REGISTER or JOIN reply's buffer, in @out. */
static int fill_buffer(struct rdpm_buffer *out, uint32_t handle, uint32_t dmabuf_id,
		       uint32_t nqueues, const uint32_t *queues)
{
	if (!nqueues || nqueues > RDPM_MAX_QUEUES)
		return devmem_fail(-EPROTO, "rdpmd: reply with %u queues", nqueues);
	out->handle = handle;
	out->dmabuf_id = dmabuf_id;
	out->nqueues = nqueues;
	for (unsigned int i = 0; i < RDPM_QUEUES_MAX; i++)
		out->queues[i] = i < nqueues ? queues[i] : 0;
	return 0;
}

DEVMEM_EXPORT int rdpm_register_buffer(struct rdpm_client *c, const char *ifname,
				       struct devmem_mem *mem, unsigned int nqueues,
				       struct rdpm_buffer *out)
{
	return rdpm_register_buffer_page_size(c, ifname, mem, nqueues, 0, out);
}

DEVMEM_EXPORT int rdpm_register_buffer_page_size(struct rdpm_client *c, const char *ifname,
						 struct devmem_mem *mem, unsigned int nqueues,
						 uint32_t page_size, struct rdpm_buffer *out)
{
	struct rdpm_register_reply r;
	struct rdpm_register req;
	int err;

	memset(&req, 0, sizeof(req));
	if (!c || !ifname || !mem || !out)
		return devmem_fail(-EINVAL, "rdpm_register_buffer: NULL argument");
	if (page_size & (page_size - 1))
		return devmem_fail(-EINVAL, "rdpm_register_buffer: page size %u is not a power of "
				   "two", page_size);
	if (!ifname[0] || strlen(ifname) >= sizeof(req.ifname))
		return devmem_fail(-EINVAL, "rdpm_register_buffer: bad interface name");
	if (nqueues > RDPM_QUEUES_MAX)
		return devmem_fail(-EINVAL, "rdpm_register_buffer: at most %d queues",
				   RDPM_QUEUES_MAX);
	if (c->fd < 0)
		return local_register(c, ifname, mem, nqueues, page_size, out);
	memcpy(req.ifname, ifname, strlen(ifname));
	req.nqueues = nqueues;
	if (page_size)
		req.flags = (uint32_t)__builtin_ctz(page_size);
	err = xfer(c, RDPM_REGISTER, &req, sizeof(req), devmem_mem_fd(mem), &r, sizeof(r));
	if (err)
		return err;
	return fill_buffer(out, r.handle, r.dmabuf_id, r.nqueues, r.queues);
}

/* In-process, a share is a buffer of the process's own. */
static int local_join(struct rdpm_client *c, const char *ifname, size_t bytes, uint32_t page_size,
		      struct devmem_mem **mem, struct rdpm_buffer *out)
{
	/* Buffers over a page need chunks that size, which a heap's are. */
	int err = page_size > (uint32_t)sysconf(_SC_PAGESIZE) ?
		  devmem_mem_heap(mem, NULL, bytes) : devmem_mem_udmabuf(mem, bytes, 0);

	if (!err)
		err = local_register(c, ifname, *mem, 0, page_size, out);
	if (err) {
		devmem_mem_free(*mem);
		*mem = NULL;
	}
	return err;
}

DEVMEM_EXPORT int rdpm_join_shared(struct rdpm_client *c, const char *ifname, size_t bytes,
				   uint32_t page_size, struct devmem_mem **mem,
				   struct rdpm_buffer *out)
{
	struct rdpm_join_reply r;
	struct rdpm_join req;
	int err, fd;

	memset(&req, 0, sizeof(req));
	if (!c || !ifname || !mem || !out)
		return devmem_fail(-EINVAL, "rdpm_join_shared: NULL argument");
	if (!bytes)
		return devmem_fail(-EINVAL, "rdpm_join_shared: a share of 0 bytes");
	if (page_size & (page_size - 1))
		return devmem_fail(-EINVAL, "rdpm_join_shared: page size %u is not a power of "
				   "two", page_size);
	if (!ifname[0] || strlen(ifname) >= sizeof(req.ifname))
		return devmem_fail(-EINVAL, "rdpm_join_shared: bad interface name");
	if (c->fd < 0)
		return local_join(c, ifname, bytes, page_size, mem, out);
	memcpy(req.ifname, ifname, strlen(ifname));
	req.bytes = bytes;
	if (page_size)
		req.flags = (uint32_t)__builtin_ctz(page_size);
	err = xfer(c, RDPM_JOIN, &req, sizeof(req), -1, &r, sizeof(r));
	fd = c->passed_fd;
	c->passed_fd = -1;
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (fd < 0)
		err = devmem_fail(-EPROTO, "rdpmd: JOIN reply without the dma-buf");
	else
		err = fill_buffer(out, r.handle, r.dmabuf_id, r.nqueues, r.queues);
	if (!err)
		err = devmem_mem_import_mapped(mem, fd);
	if (fd >= 0)
		close(fd);
	if (err) {
		struct rdpm_unregister u = { r.handle };

		xfer(c, RDPM_UNREGISTER, &u, sizeof(u), -1, NULL, 0);	/* the share back */
		return err;
	}
	return 0;
}

DEVMEM_EXPORT int rdpm_steer(struct rdpm_client *c, uint32_t handle, const struct devmem_flow *flow,
			     unsigned int *queue, uint32_t *flow_id)
{
	struct rdpm_steer req = { .handle = handle };
	struct rdpm_steer_reply r;
	int err;

	if (!c || !flow || !queue || !flow_id)
		return devmem_fail(-EINVAL, "rdpm_steer: NULL argument");
	if (c->fd < 0)
		return local_steer(c, handle, flow, queue, flow_id);
	req.family = flow->family;
	memcpy(req.src, flow->src, 16);
	memcpy(req.dst, flow->dst, 16);
	req.sport = flow->sport;
	req.dport = flow->dport;
	err = xfer(c, RDPM_STEER, &req, sizeof(req), -1, &r, sizeof(r));
	if (err)
		return err;
	*queue = r.queue;
	*flow_id = r.flow;
	return 0;
}

/* In-process: the flow of TCP socket @sock, as rdpmd reads it (no owner
 * check: the caller has CAP_NET_ADMIN). */
static int local_socket_flow(int sock, struct devmem_flow *f)
{
	struct sockaddr_storage l = { 0 }, p = { 0 };
	socklen_t ll = sizeof(l), pl = sizeof(p);
	int listening = 0;
	socklen_t al = sizeof(listening);

	memset(f, 0, sizeof(*f));
	if (getsockname(sock, (struct sockaddr *)&l, &ll))
		return devmem_fail_errno(-errno, "rdpm_steer_socket: getsockname");
	if (getsockopt(sock, SOL_SOCKET, SO_ACCEPTCONN, &listening, &al))
		return devmem_fail_errno(-errno, "rdpm_steer_socket: not a socket");
	if (!listening && getpeername(sock, (struct sockaddr *)&p, &pl))
		return devmem_fail_errno(-errno, "rdpm_steer_socket: the socket neither listens "
					 "nor is connected");
	f->family = l.ss_family;
	if (l.ss_family == AF_INET6) {
		memcpy(f->dst, &((struct sockaddr_in6 *)&l)->sin6_addr, 16);
		f->dport = ntohs(((struct sockaddr_in6 *)&l)->sin6_port);
		memcpy(f->src, &((struct sockaddr_in6 *)&p)->sin6_addr, 16);
		f->sport = ntohs(((struct sockaddr_in6 *)&p)->sin6_port);
	} else if (l.ss_family == AF_INET) {
		memcpy(f->dst, &((struct sockaddr_in *)&l)->sin_addr, 4);
		f->dport = ntohs(((struct sockaddr_in *)&l)->sin_port);
		memcpy(f->src, &((struct sockaddr_in *)&p)->sin_addr, 4);
		f->sport = ntohs(((struct sockaddr_in *)&p)->sin_port);
	} else {
		return devmem_fail(-ENOTSOCK, "rdpm_steer_socket: not a TCP/IP socket");
	}
	return 0;
}

DEVMEM_EXPORT int rdpm_steer_socket(struct rdpm_client *c, uint32_t handle, int sock,
				    const struct devmem_flow *flow, unsigned int *queue,
				    uint32_t *flow_id)
{
	struct rdpm_steer req = { .handle = handle };
	struct rdpm_steer_reply r;
	struct devmem_flow own;
	int err;

	if (!c || !queue || !flow_id)
		return devmem_fail(-EINVAL, "rdpm_steer_socket: NULL argument");
	if (sock < 0)
		return devmem_fail(-EBADF, "rdpm_steer_socket: no socket");
	if (c->fd < 0) {
		if (!flow) {
			err = local_socket_flow(sock, &own);
			if (err)
				return err;
			flow = &own;
		}
		return local_steer(c, handle, flow, queue, flow_id);
	}
	if (flow) {
		req.family = flow->family;
		memcpy(req.src, flow->src, 16);
		memcpy(req.dst, flow->dst, 16);
		req.sport = flow->sport;
		req.dport = flow->dport;
	}
	err = xfer(c, RDPM_STEER, &req, sizeof(req), sock, &r, sizeof(r));
	if (err)
		return err;
	*queue = r.queue;
	*flow_id = r.flow;
	return 0;
}

DEVMEM_EXPORT int rdpm_unsteer(struct rdpm_client *c, uint32_t flow_id)
{
	struct rdpm_unsteer req = { flow_id };

	if (!c)
		return devmem_fail(-EINVAL, "rdpm_unsteer: client is NULL");
	if (c->fd >= 0)
		return xfer(c, RDPM_UNSTEER, &req, sizeof(req), -1, NULL, 0);
	for (unsigned int i = 0; i < c->nlf; i++) {
		if (c->lf[i].id == flow_id) {
			local_flow_del(c, i);
			return 0;
		}
	}
	return devmem_fail(-ENOENT, "rdpm: no flow %u", flow_id);
}

DEVMEM_EXPORT int rdpm_limit_window(struct rdpm_client *c, uint32_t handle, int sock,
				    size_t bytes)
{
	struct rdpm_window req = { .handle = handle, .bytes = bytes };
	struct rdpm_window_reply r;
	int err;

	if (!c)
		return devmem_fail(-EINVAL, "rdpm_limit_window: client is NULL");
	if (c->fd < 0) {
		struct local_binding *lb = local_binding(c, handle);
		size_t size = lb ? devmem_mem_size(devmem_binding_mem(lb->b)) : 0;

		if (!lb)
			return -ENOENT;
		/* what rdpmd would refuse */
		if (bytes > size)
			return devmem_fail(-EINVAL, "rdpm: a share of %zu bytes is more than the "
					   "%zu-byte dma-buf of buffer %u", bytes, size, handle);
		return devmem_rx_limit_window(sock, bytes);
	}
	err = xfer(c, RDPM_WINDOW, &req, sizeof(req), sock, &r, sizeof(r));
	return err ? err : r.window;
}

DEVMEM_EXPORT int rdpm_unregister(struct rdpm_client *c, uint32_t handle)
{
	struct rdpm_unregister req = { handle };
	struct local_binding *lb;

	if (!c)
		return devmem_fail(-EINVAL, "rdpm_unregister: client is NULL");
	if (c->fd >= 0)
		return xfer(c, RDPM_UNREGISTER, &req, sizeof(req), -1, NULL, 0);
	lb = local_binding(c, handle);
	if (!lb)
		return -ENOENT;
	for (unsigned int i = c->nlf; i-- > 0;)
		if (c->lf[i].handle == handle)
			local_flow_del(c, i);
	local_unbind(lb);
	return 0;
}

DEVMEM_EXPORT int rdpm_next_event(struct rdpm_client *c, struct rdpm_event_info *ev,
				  int timeout_ms)
{
	char buf[RDPM_MAX_MSG];
	struct rdpm_hdr h;
	int err;

	if (!c || !ev)
		return devmem_fail(-EINVAL, "rdpm_next_event: NULL argument");
	while (!c->nev && c->fd >= 0) {
		err = xfer_recv(c, buf, sizeof(buf), &h, timeout_ms);
		if (err == -ETIMEDOUT || err == -EAGAIN)
			return 0;
		if (err < 0)
			return err;
		/* A reply nobody waits for (cannot happen with this API): dropped. */
		if (err == 1 && !c->nev)
			continue;
	}
	if (!c->nev)
		return 0;
	*ev = c->ev[0];
	memmove(c->ev, c->ev + 1, --c->nev * sizeof(c->ev[0]));
	return 1;
}

/* ------------------------------------------------------------------ admin */

static int need_daemon(const struct rdpm_client *c, const char *what)
{
	if (!c)
		return devmem_fail(-EINVAL, "rdpm_%s: client is NULL", what);
	if (c->fd < 0)
		return devmem_fail(-ENOTCONN, "rdpm_%s: no rdpmd at %s (is it running?)", what,
				   c->path);
	return 0;
}

DEVMEM_EXPORT int rdpm_status(struct rdpm_client *c, bool json, char **out)
{
	struct rdpm_status req = { json ? RDPM_STATUS_JSON : 0 };
	size_t len;
	char *buf;
	int err;

	err = need_daemon(c, "status");
	if (err)
		return err;
	if (!out)
		return devmem_fail(-EINVAL, "rdpm_status: out is NULL");
	buf = malloc(RDPM_MAX_STATUS);
	if (!buf)
		return devmem_fail(-ENOMEM, "rdpm_status: out of memory");
	err = xfer_buf(c, RDPM_STATUS, &req, sizeof(req), -1, buf, RDPM_MAX_STATUS, &len);
	if (!err && (!len || buf[len - 1]))
		err = devmem_fail(-EPROTO, "rdpmd: malformed status reply");
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return 0;
}

DEVMEM_EXPORT int rdpm_drain(struct rdpm_client *c, const char *ifname)
{
	struct rdpm_drain req;
	int err = need_daemon(c, "drain");

	if (err)
		return err;
	memset(&req, 0, sizeof(req));
	if (!ifname || !ifname[0] || strlen(ifname) >= sizeof(req.ifname))
		return devmem_fail(-EINVAL, "rdpm_drain: bad interface name");
	memcpy(req.ifname, ifname, strlen(ifname));
	return xfer(c, RDPM_DRAIN, &req, sizeof(req), -1, NULL, 0);
}

DEVMEM_EXPORT int rdpm_reload(struct rdpm_client *c)
{
	int err = need_daemon(c, "reload");

	return err ? err : xfer(c, RDPM_RELOAD, NULL, 0, -1, NULL, 0);
}

DEVMEM_EXPORT void rdpm_close(struct rdpm_client *c)
{
	if (!c)
		return;
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	if (c->fd >= 0) {
		/* rdpmd releases everything of ours when the socket closes. */
		close(c->fd);
	} else {
		while (c->nlf)
			local_flow_del(c, c->nlf - 1);
		for (int i = 0; i < LOCAL_MAX; i++)
			if (c->lb[i].nic)
				local_unbind(&c->lb[i]);
	}
	free(c->lf);
	free(c);
}
