// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Peers: the connections we open to send to a peer, the ones a peer opened
 * to send to us, and moving bytes on both without ever blocking (progress).
 */
#include "btl_devtcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opal/util/output.h"

#include "devmem.h"

/* A message's header part is at most this much bigger than the largest send. */
#define DEVTCP_CTRL_SLACK 4096
/* A connector gives the TCP handshake this many times
 * btl_devtcp_connect_timeout: time for a few SYN retries. */
#define DEVTCP_CONNECT_TRIES 5
/* Messages taken from one peer in one progress call, so no peer starves. */
#define DEVTCP_RX_BURST 16
/* A put from a devmem link is read and handed back in batches of this many
 * bytes at most. */
#define DEVTCP_PUT_BATCH (256 * 1024)

static bool same_name(const opal_process_name_t *a, const opal_process_name_t *b)
{
	return a->jobid == b->jobid && a->vpid == b->vpid;
}

static struct mca_btl_base_endpoint_t *endpoint_find(struct devtcp_module *m,
						      const opal_process_name_t *name)
{
	struct mca_btl_base_endpoint_t *ep;

	for (ep = devtcp_first_endpoint(m); ep; ep = ep->next)
		if (same_name(&ep->name, name))
			return ep;
	return NULL;
}

static int module_index(struct devtcp_module *m)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;

	for (int i = 0; i < c->num_modules; i++)
		if (c->modules[i] == m)
			return i;
	return 0;
}

/* A peer's secret and addresses from its modex blob; false when the blob
 * is none or malformed. */
static bool modex_parse(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
			const unsigned char *blob, size_t size)
{
	int k;

	if (!blob || size < DEVTCP_MODEX_MIN ||
	    (size - DEVTCP_KEY_LEN) % sizeof(struct devtcp_addr) != 0 ||
	    (size - DEVTCP_KEY_LEN) / sizeof(struct devtcp_addr) > DEVTCP_MAX_IFS)
		return false;
	memcpy(ep->key, blob, DEVTCP_KEY_LEN);
	ep->naddrs = (size - DEVTCP_KEY_LEN) / sizeof(struct devtcp_addr);
	memcpy(ep->addrs, blob + DEVTCP_KEY_LEN, ep->naddrs * sizeof(struct devtcp_addr));
	k = devtcp_match_peer(&m->addr, module_index(m), ep->addrs, ep->naddrs);
	if (k >= 0) {
		ep->addr = ep->addrs[k];
		ep->have_addr = true;
	}
	return true;
}

static struct mca_btl_base_endpoint_t *endpoint_new(opal_proc_t *proc,
						     const opal_process_name_t *name)
{
	struct mca_btl_base_endpoint_t *ep = calloc(1, sizeof(*ep));
	int i;

	if (!ep)
		return NULL;
	ep->proc = proc;
	ep->name = *name;
	ep->ctrl_fd = ep->rx_ctrl_fd = -1;
	for (i = 0; i < DEVTCP_MAX_LINKS; i++)
		ep->data_fd[i] = ep->rx_data_fd[i] = -1;
	pthread_mutex_init(&ep->send_lock, NULL);
	return ep;
}

/* Adds ep to the module's peers, unless a racing twin made it first: then
 * ep goes and the twin is returned. */
static struct mca_btl_base_endpoint_t *endpoint_add(struct devtcp_module *m,
						     struct mca_btl_base_endpoint_t *ep)
{
	struct mca_btl_base_endpoint_t *twin;

	pthread_mutex_lock(&m->ep_lock);
	twin = endpoint_find(m, &ep->name);
	if (!twin) {
		if (ep->name.jobid == OPAL_PROC_MY_NAME.jobid)
			__atomic_fetch_add(&m->job_peers, 1, __ATOMIC_RELAXED);
		ep->next = m->endpoints;
		__atomic_store_n(&m->endpoints, ep, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&m->ep_lock);
	if (twin) {
		pthread_mutex_destroy(&ep->send_lock);
		free(ep);
		ep = twin;
	}
	return ep;
}

/* The peer's endpoint, made on first use by add_procs. Made outside
 * ep_lock, since the modex may wait for the peer. */
struct mca_btl_base_endpoint_t *devtcp_endpoint_get(struct devtcp_module *m, opal_proc_t *proc)
{
	struct mca_btl_base_endpoint_t *ep = endpoint_find(m, &proc->proc_name);
	unsigned char *blob = NULL;
	size_t size = 0;
	int rc;

	if (ep)
		return ep;
	ep = endpoint_new(proc, &proc->proc_name);
	if (!ep)
		return NULL;
	OPAL_MODEX_RECV(rc, &mca_btl_devtcp_component.super.btl_version, &proc->proc_name,
			(void **)&blob, &size);
	if (rc == OPAL_SUCCESS)
		modex_parse(m, ep, blob, size);
	free(blob);
	return endpoint_add(m, ep);
}

/* Whether @name is a process of this job (its size, where known). */
static bool in_job(struct devtcp_module *m, const opal_process_name_t *name)
{
	uint32_t size = __atomic_load_n(&m->job_size, __ATOMIC_RELAXED);

	return name->jobid == OPAL_PROC_MY_NAME.jobid && (!size || name->vpid < size);
}

/*
 * The peer a hello names, if the connection comes from one of its
 * published addresses. A process the PML has not added yet (it sent
 * first) gets its endpoint here, from modex data this process holds or,
 * for a process of this job, fetches; nothing is kept for a process whose
 * addresses the connection does not come from.
 */
struct mca_btl_base_endpoint_t *devtcp_endpoint_for_hello(struct devtcp_module *m,
							  const opal_process_name_t *name,
							  const struct sockaddr_storage *from)
{
	struct mca_btl_base_endpoint_t *ep = endpoint_find(m, name);
	opal_process_name_t me = OPAL_PROC_MY_NAME;
	unsigned char *blob = NULL;
	opal_proc_t *proc;
	size_t size = 0;
	bool ok;

	if (ep || same_name(name, &me))
		return ep && devtcp_from(ep->addrs, ep->naddrs, from) ? ep : NULL;
	ep = endpoint_new(NULL, name);
	if (!ep)
		return NULL;
	ok = devtcp_modex_recv_now(&mca_btl_devtcp_component.super.btl_version, name,
				   (void **)&blob, &size) == OPAL_SUCCESS && blob;
	if (!ok && in_job(m, name)) {
		/* A process on another node whose data the runtime has not
		 * fetched yet (it fetches on demand): the hello's MAC already
		 * proved a member of this job sent it, so wait for the fetch. */
		opal_process_name_t peer = *name;
		int rc;

		free(blob);
		blob = NULL;
		OPAL_MODEX_RECV(rc, &mca_btl_devtcp_component.super.btl_version, &peer,
				(void **)&blob, &size);
		ok = rc == OPAL_SUCCESS && blob;
	}
	ok = ok && modex_parse(m, ep, blob, size) && devtcp_from(ep->addrs, ep->naddrs, from);
	free(blob);
	proc = ok ? opal_proc_for_name(*name) : NULL;
	if (!proc) {
		pthread_mutex_destroy(&ep->send_lock);
		free(ep);
		return NULL;
	}
	ep->proc = proc;
	return endpoint_add(m, ep);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void devtcp_endpoint_free(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep)
{
	struct mca_btl_base_endpoint_t **p;
	int i;

	for (p = &m->endpoints; *p; p = &(*p)->next)
		if (*p == ep) {
			*p = ep->next;
			break;
		}
	devtcp_endpoint_bye(ep);
	close_fd(&ep->ctrl_fd);
	close_fd(&ep->rx_ctrl_fd);
	for (i = 0; i < DEVTCP_MAX_LINKS; i++) {
		if (ep->rx_devmem[i]) {
			devtcp_devmem_unlink(m, ep->rx_data_fd[i]);
			if (ep->gpu)	/* its kernels done with what it holds */
				devmem_rx_unpack_wait(ep->rx_devmem[i]);
			devmem_rx_close(ep->rx_devmem[i]);
		}
		close_fd(&ep->data_fd[i]);
		close_fd(&ep->rx_data_fd[i]);
	}
	if (ep->rx_put_reg)	/* a put that never finished */
		devtcp_region_unpin(m, ep->rx_put_reg);
	devtcp_gpu_free(ep);
	free(ep->rx_frags);
	free(ep->rx_bounce);
	free(ep->cb);
	while (ep->sendq) {
		struct devtcp_frag *f = ep->sendq;

		ep->sendq = f->next;
		OBJ_DESTRUCT(&f->base);
		free(f);
	}
	devtcp_ctrl_free(&ep->crx);
	free(ep->rx_data);
	pthread_mutex_destroy(&ep->send_lock);
	free(ep);
}

/* The peer is gone or speaks nonsense: the PML ends the job. */
static void fail_peer(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
		      const char *what, int err)
{
	char info[256], ip[DEVTCP_ADDRSTRLEN];

	if (ep->failed)
		return;
	ep->failed = true;
	snprintf(info, sizeof(info), "btl:devtcp: peer %u.%u (%s port %u): %s%s%s", ep->name.jobid,
		 ep->name.vpid, devtcp_ntop(&ep->addr, ip), ntohs(ep->addr.ctrl_port), what,
		 err ? ": " : "", err ? strerror(err) : "");
	opal_output(0, "%s", info);
	if (m->error_cb)
		m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->proc, info);
}

/* libdevmem refused a fragment of a data link (devmem_rx_set_buffer: not
 * in this rank's dma-buf) and handed its tokens back: the peer goes. */
static void fail_peer_refused(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep)
{
	char what[384];

	snprintf(what, sizeof(what), "devmem: a fragment outside this rank's dma-buf was "
		 "refused (%s)", devmem_last_error());
	fail_peer(m, ep, what, 0);
}

/* Something every peer depends on broke: the job cannot go on. */
static void fail_all(struct devtcp_module *m, const char *what)
{
	struct mca_btl_base_endpoint_t *ep;

	for (ep = devtcp_first_endpoint(m); ep; ep = ep->next)
		fail_peer(m, ep, what, 0);
	if (!devtcp_first_endpoint(m) && m->error_cb)
		m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL, (char *)what);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* A peer host that dies without a reset fails the connection within
 * btl_devtcp_peer_timeout seconds, idle (keepalive) or sending (the user
 * timeout), instead of hanging the job. */
void devtcp_set_peer_timeout(int fd)
{
	int t = mca_btl_devtcp_component.peer_timeout, one = 1, cnt = 3;
	int idle = t / 2 ? t / 2 : 1, intvl = t / 6 ? t / 6 : 1;
	unsigned int ms = (unsigned int)t * 1000;

	if (t <= 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

/*
 * connect() within @secs seconds rather than the kernel's two minutes of
 * SYN retries: send_lock is held meanwhile, and a peer that cannot be
 * reached in that time is failed. 0, or -1 with errno (ETIMEDOUT).
 */
static int connect_within(int fd, const struct sockaddr *to, socklen_t len, int secs)
{
	int flags = fcntl(fd, F_GETFL), err = 0;
	uint64_t deadline = devtcp_now_ms() + 1000ull * secs;
	socklen_t err_len = sizeof(err);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -1;
	if (connect(fd, to, len) < 0) {
		if (errno != EINPROGRESS)
			return -1;
		for (;;) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			uint64_t now = devtcp_now_ms();
			int n;

			if (now >= deadline) {
				errno = ETIMEDOUT;
				return -1;
			}
			n = poll(&p, 1, (int)(deadline - now));
			if (n > 0)
				break;
			if (n < 0 && errno != EINTR)
				return -1;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) < 0)
			return -1;
		if (err) {
			errno = err;
			return -1;
		}
	}
	/* the hello goes out whole, as before: blocking until the socket takes it */
	return fcntl(fd, F_SETFL, flags);
}

/*
 * A connection to the peer, from our published address (the peer checks
 * it), opened with a hello that names us and the peer and proves that we
 * know the peer's secret for this very connection: its MAC covers both
 * ends' addresses and ports, so that it is worth nothing on another.
 */
static int open_link(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep, uint16_t port,
		     uint8_t kind, uint8_t index)
{
	struct sockaddr_storage ss, me_ss, src;
	socklen_t len = devtcp_sockaddr(&ep->addr, port, &ss);
	socklen_t me_len = devtcp_sockaddr(&m->addr, 0, &me_ss), src_len = sizeof(src);
	opal_process_name_t me = OPAL_PROC_MY_NAME;
	struct devtcp_hello hello = {
		.magic = htonl(DEVTCP_HELLO_MAGIC), .version = htons(DEVTCP_WIRE_VERSION),
		.kind = kind, .index = index, .jobid = htonl(me.jobid), .vpid = htonl(me.vpid),
		.to_jobid = htonl(ep->name.jobid), .to_vpid = htonl(ep->name.vpid),
	};
	struct devtcp_tuple t;
	int fd, one = 1;

	fd = socket(ep->addr.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (devtcp_random(hello.nonce, sizeof(hello.nonce), "a hello's nonce") < 0 ||
	    bind(fd, (struct sockaddr *)&me_ss, me_len) < 0 ||
	    connect_within(fd, (struct sockaddr *)&ss, len,
			   DEVTCP_CONNECT_TRIES * mca_btl_devtcp_component.connect_timeout) < 0 ||
	    getsockname(fd, (struct sockaddr *)&src, &src_len) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	devtcp_tuple(&t, &src, &ss);
	devtcp_hello_mac(ep->key, &hello, &t, hello.mac);
	devtcp_set_peer_timeout(fd);
	if (write_all(fd, &hello, sizeof(hello)) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	/* Every message ends a burst of writes: Nagle would hold its tail
	 * back for an ACK, on the data links as on the control one. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Our connections to the peer, opened at the first send. The data links
 * first: the peer reads a message's payload from its link right after the
 * message's header, so the link must exist by then. */
static int connect_peer(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep)
{
	int i, links = mca_btl_devtcp_component.data_links;
	char ip[DEVTCP_ADDRSTRLEN];

	for (i = 0; i < links; i++) {
		ep->data_fd[i] = open_link(m, ep, ep->addr.data_port, DEVTCP_LINK_DATA, i);
		if (ep->data_fd[i] < 0) {
			fail_peer(m, ep, "cannot open a data connection", errno);
			return OPAL_ERR_UNREACH;
		}
	}
	ep->ctrl_fd = open_link(m, ep, ep->addr.ctrl_port, DEVTCP_LINK_CTRL, 0);
	if (ep->ctrl_fd < 0) {
		fail_peer(m, ep, "cannot open the control connection", errno);
		return OPAL_ERR_UNREACH;
	}
	devtcp_verbose(10, "connected to %u.%u at %s", ep->name.jobid, ep->name.vpid,
		       devtcp_ntop(&ep->addr, ip));
	return OPAL_SUCCESS;
}

/* Lays out a descriptor for the wire: the PML header (and small payloads)
 * on the control connection, a large payload on a data link; a put's
 * destination on the control connection, its bytes on a data link. */
static void frag_layout(struct devtcp_frag *f, int *next_link)
{
	size_t total = f->segs[0].seg_len, head = total;
	char *data = NULL;
	size_t data_len = 0;

	if (f->put_done) {
		f->iov[0] = (struct iovec){ &f->frame, sizeof(f->frame) };
		f->iov[1] = (struct iovec){ &f->put, sizeof(f->put) };
		f->iov_count = 2;
		f->iov_done = 0;
		f->frame.flags = DEVTCP_FRAME_PUT;
		f->frame.ctrl_len = sizeof(f->put);
		f->frame.data_len = total;
		f->frame.link = 0;
		if (total) {
			f->frame.link = *next_link;
			*next_link = (*next_link + 1) % mca_btl_devtcp_component.data_links;
		}
		f->data = (struct iovec){ f->segs[0].seg_addr.pval, total };
		return;
	}
	if (f->base.des_segment_count == 2) {
		data = f->segs[1].seg_addr.pval;
		data_len = f->segs[1].seg_len;
	} else if (f->reserve && total > f->reserve) {
		head = f->reserve;
		data = (char *)f->segs[0].seg_addr.pval + head;
		data_len = total - head;
	}
	f->iov_count = 0;
	f->iov_done = 0;
	f->iov[f->iov_count++] = (struct iovec){ &f->frame, sizeof(f->frame) };
	f->iov[f->iov_count++] = (struct iovec){ f->segs[0].seg_addr.pval, head };
	if (data_len && data_len < (size_t)mca_btl_devtcp_component.data_min) {
		f->iov[f->iov_count++] = (struct iovec){ data, data_len };
		data_len = 0;
	}
	f->frame.flags = 0;
	f->frame.ctrl_len = 0;
	for (int i = 1; i < f->iov_count; i++)
		f->frame.ctrl_len += f->iov[i].iov_len;
	f->frame.data_len = data_len;
	f->frame.link = 0;
	if (data_len) {
		f->frame.link = *next_link;
		*next_link = (*next_link + 1) % mca_btl_devtcp_component.data_links;
	}
	f->data = (struct iovec){ data, data_len };
}

/* Writes what the sockets take of the queue's head; 1 when it is all out,
 * 0 when a socket is full, -1 on error (errno). */
static int frag_push(struct mca_btl_base_endpoint_t *ep, struct devtcp_frag *f)
{
	while (f->iov_done < f->iov_count) {
		ssize_t n = writev(ep->ctrl_fd, f->iov + f->iov_done, f->iov_count - f->iov_done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		while (n > 0 && f->iov_done < f->iov_count) {
			struct iovec *v = &f->iov[f->iov_done];

			if ((size_t)n >= v->iov_len) {
				n -= v->iov_len;
				v->iov_len = 0;
				f->iov_done++;
			} else {
				v->iov_base = (char *)v->iov_base + n;
				v->iov_len -= n;
				n = 0;
			}
		}
	}
	while (f->data.iov_len) {
		ssize_t n = send(ep->data_fd[f->frame.link], f->data.iov_base, f->data.iov_len,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		f->data.iov_base = (char *)f->data.iov_base + n;
		f->data.iov_len -= n;
	}
	return 1;
}

static void frag_done(struct devtcp_module *m, struct devtcp_frag *f, int status, bool always)
{
	bool own = f->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;

	if (always || (f->base.des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK))
		f->base.des_cbfunc(&m->super, f->ep, &f->base, status);
	if (own) {
		OBJ_DESTRUCT(&f->base);
		free(f);
	}
}

/* Sends queued descriptors until a socket fills, unless another thread is
 * at it; the finished ones are then handed back, without the lock. */
static int send_progress(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep)
{
	struct devtcp_frag *done = NULL, **tail = &done, *f;
	int n = 0;

	if (pthread_mutex_trylock(&ep->send_lock))
		return 0;
	while ((f = ep->sendq) && !ep->failed) {
		int rc = frag_push(ep, f);

		if (rc == 0)
			break;
		if (rc < 0) {
			fail_peer(m, ep, "send failed", errno);
			break;
		}
		ep->sendq = f->next;
		if (!ep->sendq) {
			ep->sendq_tail = NULL;
			__atomic_fetch_sub(&m->sending, 1, __ATOMIC_RELAXED);
		}
		f->next = NULL;
		*tail = f;
		tail = &f->next;
	}
	pthread_mutex_unlock(&ep->send_lock);
	while ((f = done)) {
		done = f->next;
		frag_done(m, f, OPAL_SUCCESS, true);
		n++;
	}
	return n;
}

int devtcp_endpoint_send(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
			 struct devtcp_frag *f)
{
	int rc = OPAL_SUCCESS;

	pthread_mutex_lock(&ep->send_lock);
	if (ep->failed || (ep->ctrl_fd < 0 && connect_peer(m, ep) != OPAL_SUCCESS)) {
		rc = OPAL_ERR_UNREACH;
		goto out;
	}
	frag_layout(f, &ep->next_link);
	__atomic_fetch_add(&m->tx_msgs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->tx_bytes, f->frame.ctrl_len + f->frame.data_len, __ATOMIC_RELAXED);
	if (!ep->sendq) {
		rc = frag_push(ep, f);
		if (rc < 0) {
			fail_peer(m, ep, "send failed", errno);
			rc = OPAL_ERR_UNREACH;
			goto out;
		}
		if (rc == 1)
			goto out;
	}
	f->next = NULL;
	if (ep->sendq_tail) {
		ep->sendq_tail->next = f;
	} else {
		ep->sendq = f;
		__atomic_fetch_add(&m->sending, 1, __ATOMIC_RELAXED);
	}
	ep->sendq_tail = f;
	rc = OPAL_SUCCESS;
out:
	pthread_mutex_unlock(&ep->send_lock);
	if (rc == 1)
		frag_done(m, f, OPAL_SUCCESS, false);
	return rc;
}

/* Tells the peer that EOF on our connections is the end, not a death. The
 * socket stays non-blocking: a peer that reads nothing any more (stuck, or
 * gone without a reset) gets a second to take the frame, not finalize's
 * whole life. */
void devtcp_endpoint_bye(struct mca_btl_base_endpoint_t *ep)
{
	struct devtcp_frame bye = { .flags = DEVTCP_FRAME_BYE };
	char ip[DEVTCP_ADDRSTRLEN];
	size_t done = 0;
	int err = 0;

	pthread_mutex_lock(&ep->send_lock);
	if (ep->ctrl_fd < 0 || ep->failed || ep->sendq || ep->said_bye) {
		pthread_mutex_unlock(&ep->send_lock);
		return;
	}
	ep->said_bye = true;	/* del_procs, then finalize: once is enough */
	for (int waited = 0; done < sizeof(bye) && waited <= 1000; waited += 10) {
		struct pollfd p = { .fd = ep->ctrl_fd, .events = POLLOUT };
		ssize_t n = send(ep->ctrl_fd, (char *)&bye + done, sizeof(bye) - done,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			done += (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			err = errno;
			break;
		} else if (done < sizeof(bye)) {
			poll(&p, 1, 10);
		}
	}
	pthread_mutex_unlock(&ep->send_lock);
	if (err)
		devtcp_verbose(1, "peer %s: end-of-job frame not sent: %s",
			       devtcp_ntop(&ep->addr, ip), strerror(err));
	else if (done < sizeof(bye))
		devtcp_verbose(1, "peer %s did not take the end-of-job frame within 1 s",
			       devtcp_ntop(&ep->addr, ip));
}

/* One recv: the bytes (> 0), 0 when nothing is there yet, -1 on an error
 * or at EOF (errno 0). */
static ssize_t recv_once(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = recv(fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n == 0)
		errno = 0;
	return n ? n : -1;
}

/* Reads into buf until want bytes are there; 1 done, 0 later, -1 error or
 * EOF (errno 0). */
int devtcp_read_some(int fd, void *buf, size_t want, size_t *done)
{
	while (*done < want) {
		ssize_t n = recv_once(fd, (char *)buf + *done, want - *done);

		if (n <= 0)
			return (int)n;
		*done += n;
	}
	return 1;
}

/* The control connection is read in chunks: one recv brings in many frames
 * and small messages, instead of two recvs per message. */
#define DEVTCP_CTRL_BUF 65536

static bool ctrl_buffered(const struct mca_btl_base_endpoint_t *ep)
{
	return ep->cb_end > ep->cb_start;
}

/* devtcp_read_some() of the control connection (ctx: the endpoint), through its
 * buffer: devtcp_ctrl_step's reader. */
static int ctrl_read(void *ctx, void *dst, size_t want, size_t *done)
{
	struct mca_btl_base_endpoint_t *ep = ctx;

	while (*done < want) {
		size_t have = ep->cb_end - ep->cb_start;
		ssize_t n;

		if (have) {
			n = have < want - *done ? have : want - *done;
			memcpy((char *)dst + *done, ep->cb + ep->cb_start, n);
			ep->cb_start += n;
			*done += n;
			continue;
		}
		ep->cb_start = ep->cb_end = 0;
		if (want - *done >= DEVTCP_CTRL_BUF)	/* a big one goes straight in */
			return devtcp_read_some(ep->rx_ctrl_fd, dst, want, done);
		if (!ep->cb && !(ep->cb = malloc(DEVTCP_CTRL_BUF))) {
			errno = ENOMEM;
			return -1;
		}
		n = recv_once(ep->rx_ctrl_fd, ep->cb, DEVTCP_CTRL_BUF);
		if (n <= 0)
			return (int)n;
		ep->cb_end = n;
	}
	return 1;
}

static int grow(unsigned char **buf, size_t *cap, size_t want)
{
	unsigned char *p;

	if (*cap >= want)
		return 0;
	p = realloc(*buf, want);
	if (!p)
		return -1;
	*buf = p;
	*cap = want;
	return 0;
}

/* Doubles the room for fragments (256 to start); -1 (ENOMEM) when it
 * cannot. */
static int more_frags(struct mca_btl_base_endpoint_t *ep)
{
	unsigned int cap = ep->rx_frags_cap ? 2 * ep->rx_frags_cap : 256;
	struct devmem_frag *f = realloc(ep->rx_frags, cap * sizeof(*f));

	if (!f) {
		errno = ENOMEM;
		return -1;
	}
	ep->rx_frags = f;
	ep->rx_frags_cap = cap;
	return 0;
}

/* What a devmem_rx_recv_upto() result means to a reading loop: 1 go on
 * (its bytes counted in), 0 later, -1 error (errno; 0 for EOF). */
static int took(struct mca_btl_base_endpoint_t *ep, ssize_t n)
{
	if (n == -EAGAIN)
		return 0;
	if (n <= 0) {
		errno = n ? -n : 0;
		return -1;
	}
	ep->rx_done += n;
	return 1;
}

/* A message's payload from a devmem link, as fragments: dma-buf pieces as
 * they landed, linear pieces copied into rx_data. 1 when all data_len bytes
 * are in, 0 later, -1 on error (errno; 0 for EOF). */
static int read_devmem(struct mca_btl_base_endpoint_t *ep, struct devmem_rx *rx, size_t len)
{
	while (ep->rx_done < len) {
		unsigned int got = 0;
		ssize_t n;
		int rc;

		if (ep->rx_nfrags == ep->rx_frags_cap && more_frags(ep) < 0)
			return -1;
		n = devmem_rx_recv_upto(rx, len - ep->rx_done, MSG_DONTWAIT,
					ep->rx_frags + ep->rx_nfrags,
					ep->rx_frags_cap - ep->rx_nfrags, &got,
					ep->rx_data + ep->rx_linear, len - ep->rx_linear);
		for (unsigned int i = 0; i < got; i++)
			if (!ep->rx_frags[ep->rx_nfrags + i].dmabuf_id)
				ep->rx_linear += ep->rx_frags[ep->rx_nfrags + i].len;
		ep->rx_nfrags += got;
		rc = took(ep, n);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

/* Where a fragment's bytes are in our address space. */
static const void *frag_addr(struct devtcp_module *m, const struct devmem_frag *f)
{
	return f->dmabuf_id ? devtcp_devmem_at(m, f) : f->linear;
}

/*
 * A put's bytes from a devmem link, straight into their destination: each
 * batch of fragments is copied there (the copy the PML makes of a message
 * it reads in place) and handed back to the kernel at once, so a put of any
 * size streams through the dma-buf. 1 when all len bytes are in, 0 later,
 * -1 on error (errno; 0 for EOF).
 */
static int put_devmem(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
		      struct devmem_rx *rx, unsigned char *dst, size_t len)
{
	if (!ep->rx_frags_cap && more_frags(ep) < 0)
		return -1;
	while (ep->rx_done < len) {
		size_t at = ep->rx_done, want = len - at;
		unsigned int got = 0, i;
		ssize_t n;
		int rc, err = 0;

		if (want > ep->rx_data_cap)	/* its linear pieces fit rx_data */
			want = ep->rx_data_cap;
		n = devmem_rx_recv_upto(rx, want, MSG_DONTWAIT, ep->rx_frags, ep->rx_frags_cap,
					&got, ep->rx_data, ep->rx_data_cap);
		for (i = 0; i < got; i++) {
			const struct devmem_frag *f = &ep->rx_frags[i];

			if (dst)	/* NULL: its region went, the bytes are dropped */
				memcpy(dst + at, frag_addr(m, f), f->len);
			at += f->len;
			if (f->dmabuf_id)
				m->bytes_put += f->len;
			else
				m->bytes_linear += f->len;
			err |= devmem_rx_release(rx, f);
		}
		if ((got && devmem_rx_flush(rx) < 0) || err) {
			errno = EIO;
			return -1;
		}
		rc = took(ep, n);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

/* devtcp_read_some() of len bytes that go nowhere, through buf (cap bytes). */
static int drop_some(int fd, unsigned char *buf, size_t cap, size_t want, size_t *done)
{
	while (*done < want) {
		ssize_t n = recv_once(fd, buf, want - *done < cap ? want - *done : cap);

		if (n <= 0)
			return (int)n;
		*done += n;
	}
	return 1;
}

/*
 * What there is of a put's bytes, into its region while that is
 * registered; the PML may deregister it meanwhile (from another thread),
 * and then the rest is read and dropped. 1 when all are in, 0 later, -1
 * on error (errno; 0 for EOF).
 */
static int put_recv(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep, bool gpu)
{
	const struct devtcp_frame *fr = &ep->crx.frame;
	struct devmem_rx *rx = ep->rx_devmem[fr->link];
	int fd = ep->rx_data_fd[fr->link], rc;
	bool mine = devtcp_region_write_begin(m, ep->rx_put_reg);
	unsigned char *dst = mine ? ep->rx_put : NULL;

	if (gpu)
		rc = devtcp_gpu_recv(m, ep, rx, dst, fr->data_len);
	else if (rx)
		rc = put_devmem(m, ep, rx, dst, fr->data_len);
	else if (dst)
		rc = devtcp_read_some(fd, dst, fr->data_len, &ep->rx_done);
	else
		rc = drop_some(fd, ep->rx_data, ep->rx_data_cap, fr->data_len, &ep->rx_done);
	if (mine)
		devtcp_region_write_end(m, ep->rx_put_reg);
	return rc;
}

/*
 * Hands a devmem message to the PML: its header, then the payload's pieces
 * in place (adjacent ones merged). A descriptor holds MCA_BTL_DES_MAX_SEGMENTS
 * segments: a payload in more pieces is copied into rx_data first. Then the
 * pieces go back to the kernel.
 */
static void deliver_devmem(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
			   struct devmem_rx *rx)
{
	mca_btl_base_segment_t segs[MCA_BTL_DES_MAX_SEGMENTS];
	struct devtcp_frame *fr = &ep->crx.frame;
	size_t n = 1, i, dma = 0;
	int err = 0;

	segs[0] = (mca_btl_base_segment_t){ .seg_addr.pval = ep->crx.ctrl, .seg_len = fr->ctrl_len };
	for (i = 0; i < ep->rx_nfrags && n <= MCA_BTL_DES_MAX_SEGMENTS; i++) {
		const char *p = frag_addr(m, &ep->rx_frags[i]);
		mca_btl_base_segment_t *last = &segs[n - 1];

		if (ep->rx_frags[i].dmabuf_id)
			dma += ep->rx_frags[i].len;
		if (n > 1 && (const char *)last->seg_addr.pval + last->seg_len == p) {
			last->seg_len += ep->rx_frags[i].len;
			continue;
		}
		if (n == MCA_BTL_DES_MAX_SEGMENTS) {
			n++;
			break;
		}
		segs[n++] = (mca_btl_base_segment_t){ .seg_addr.pval = (void *)p,
						      .seg_len = ep->rx_frags[i].len };
	}
	if (n > MCA_BTL_DES_MAX_SEGMENTS) {
		/* too many pieces: one copy, in order (linear pieces already
		 * sit in rx_data, so gather into a second buffer) */
		size_t at = 0;

		if (grow(&ep->rx_bounce, &ep->rx_bounce_cap, fr->data_len) < 0) {
			fail_peer(m, ep, "out of memory", ENOMEM);
			return;
		}
		dma = 0;
		for (i = 0; i < ep->rx_nfrags; i++) {
			memcpy(ep->rx_bounce + at, frag_addr(m, &ep->rx_frags[i]), ep->rx_frags[i].len);
			at += ep->rx_frags[i].len;
			if (ep->rx_frags[i].dmabuf_id)
				m->bytes_bounced += ep->rx_frags[i].len;
		}
		segs[1] = (mca_btl_base_segment_t){ .seg_addr.pval = ep->rx_bounce, .seg_len = at };
		n = 2;
	}
	m->bytes_inplace += dma;
	m->bytes_linear += ep->rx_linear;
	m->rx_msgs++;
	m->rx_bytes += fr->ctrl_len + fr->data_len;
	devtcp_deliver(&m->super, ep, fr->tag, segs, n);
	for (i = 0; i < ep->rx_nfrags; i++)
		err |= devmem_rx_release(rx, &ep->rx_frags[i]);
	if (devmem_rx_flush(rx) < 0 || err)
		fail_peer(m, ep, "cannot hand the dma-buf's buffers back", EIO);
	ep->rx_nfrags = 0;
	ep->rx_linear = 0;
}

/* Whether the PML receives messages of this tag: no callback, no message. */
static bool tag_registered(uint8_t tag)
{
	return mca_btl_base_active_message_trigger[tag].cbfunc != NULL;
}

/* A frame or put the peer had no business sending: it is failed. */
static void refuse_frame(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
			 enum devtcp_verdict v)
{
	const struct devtcp_frame *fr = &ep->crx.frame;
	char what[200];

	snprintf(what, sizeof(what), "refused a message: %s (tag 0x%02x, flags 0x%02x, link %u, "
		 "control %u bytes, payload %llu bytes)", devtcp_verdict_str(v), fr->tag, fr->flags,
		 fr->link, fr->ctrl_len, (unsigned long long)fr->data_len);
	fail_peer(m, ep, what, 0);
}

/* Takes whole messages from the peer's connections to us and hands them to
 * the PML; returns how many. */
static int recv_progress(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep)
{
	struct devtcp_frame *fr = &ep->crx.frame;
	size_t max = m->super.btl_max_send_size;
	const struct devtcp_limits limits = {
		.max_ctrl = max + DEVTCP_CTRL_SLACK, .max_data = max,
		.data_links = mca_btl_devtcp_component.data_links, .tag_ok = tag_registered,
	};
	enum devtcp_verdict v = DEVTCP_OK;
	enum devtcp_ctrl_event ev;
	int delivered = 0, rc = 0;
	bool put, gpu;

	while (!ep->failed && ep->rx_ctrl_fd >= 0 && delivered < DEVTCP_RX_BURST) {
		switch (ep->rx_state) {
		case RX_FRAME:
			ev = devtcp_ctrl_step(&ep->crx, &limits, ctrl_read, ep, &v);
			if (ev == DEVTCP_CTRL_ERROR && errno == 0 && !ep->crx.in_ctrl &&
			    !ep->crx.done && ep->rx_bye) {
				close_fd(&ep->rx_ctrl_fd);
				return delivered;
			}
			rc = ev == DEVTCP_CTRL_ERROR ? -1 : 0;
			if (ev <= DEVTCP_CTRL_LATER)
				break;
			if (ev == DEVTCP_CTRL_REFUSED) {
				refuse_frame(m, ep, v);
				return delivered;
			}
			if (ev == DEVTCP_CTRL_BYE) {
				ep->rx_bye = true;
				continue;
			}
			put = ev == DEVTCP_CTRL_PUT;
			/* a put's bytes go to their destination; only the
			 * linear pieces of a batch (put_devmem) pass rx_data */
			if (grow(&ep->rx_data, &ep->rx_data_cap,
				 put && fr->data_len > DEVTCP_PUT_BATCH ? DEVTCP_PUT_BATCH
									: fr->data_len) < 0) {
				fail_peer(m, ep, "out of memory", ENOMEM);
				return delivered;
			}
			if (put) {
				struct devtcp_put p;
				struct devtcp_region r;
				struct devtcp_reg *reg;

				/* only into what we registered for this peer,
				 * which stays until the put is in */
				memcpy(&p, ep->crx.ctrl, sizeof(p));
				reg = devtcp_region_pin(m, ep, p.handle, &r);
				v = devtcp_put_check(&p, fr->data_len, reg ? &r : NULL);
				if (v != DEVTCP_OK) {
					if (reg)
						devtcp_region_unpin(m, reg);
					refuse_frame(m, ep, v);
					return delivered;
				}
				ep->rx_put = (unsigned char *)(uintptr_t)p.to;
				ep->rx_put_reg = reg;
				ep->rx_state = RX_DATA;
				continue;
			}
			if (fr->data_len) {
				ep->rx_state = RX_DATA;
				continue;
			}
			goto deliver;
		case RX_DATA:
			if (ep->rx_data_fd[fr->link] < 0) {
				/* its connection is still being accepted (or
				 * never comes: check_deadlines) */
				if (!ep->rx_link_wait)
					ep->rx_link_wait = devtcp_now_ms();
				return delivered;
			}
			ep->rx_link_wait = 0;
			put = fr->flags & DEVTCP_FRAME_PUT;
			gpu = ep->rx_devmem[fr->link] && devtcp_devmem_on_gpu(m);
			if (put) {
				rc = put_recv(m, ep, gpu);
				goto put_read;
			}
			if (gpu)
				rc = devtcp_gpu_recv(m, ep, ep->rx_devmem[fr->link], ep->rx_data,
						     fr->data_len);
			else if (ep->rx_devmem[fr->link])
				rc = read_devmem(ep, ep->rx_devmem[fr->link], fr->data_len);
			else
				rc = devtcp_read_some(ep->rx_data_fd[fr->link], ep->rx_data, fr->data_len,
					       &ep->rx_done);
put_read:
			if (rc <= 0)
				break;
			ep->rx_done = 0;
			ep->rx_state = RX_FRAME;
			if (put) {
				devtcp_region_unpin(m, ep->rx_put_reg);
				ep->rx_put_reg = NULL;
				/* a put is silent here: ob1's FIN comes next */
				if (!ep->rx_devmem[fr->link])
					m->bytes_linear += fr->data_len;
				m->rx_msgs++;
				m->rx_bytes += fr->ctrl_len + fr->data_len;
				m->rx_puts++;
				m->rx_put_bytes += fr->data_len;
				ep->rx_put = NULL;
				delivered++;
				continue;
			}
			if (gpu)	/* in rx_data: bytes_gpu counted them */
				goto deliver;
			if (ep->rx_devmem[fr->link]) {
				deliver_devmem(m, ep, ep->rx_devmem[fr->link]);
				delivered++;
				continue;
			}
			m->bytes_linear += fr->data_len;
			goto deliver;
		}
		if (rc < 0 && errno == EBADMSG)
			fail_peer_refused(m, ep);
		else if (rc < 0)
			fail_peer(m, ep, errno ? "receive failed" : "connection closed mid-job",
				  errno);
		return delivered;
deliver:
		{
			mca_btl_base_segment_t segs[2] = {
				{ .seg_addr.pval = ep->crx.ctrl, .seg_len = fr->ctrl_len },
				{ .seg_addr.pval = ep->rx_data, .seg_len = fr->data_len },
			};

			m->rx_msgs++;
			m->rx_bytes += fr->ctrl_len + fr->data_len;
			devtcp_deliver(&m->super, ep, fr->tag, segs, fr->data_len ? 2 : 1);
			delivered++;
		}
	}
	return delivered;
}

/* Once a second: connections past their hello deadline are closed, and a
 * peer whose message waits for a data link that does not come is failed
 * (twice the deadline: the link may wait in the backlog behind others). */
static void check_deadlines(struct devtcp_module *m, uint64_t now)
{
	uint64_t wait = 2000ull * mca_btl_devtcp_component.connect_timeout;
	struct mca_btl_base_endpoint_t *ep;

	if (now < m->next_check)
		return;
	m->next_check = now + 1000;
	devtcp_pending_progress(m, now);
	for (ep = devtcp_first_endpoint(m); ep; ep = ep->next)
		if (ep->rx_link_wait && now - ep->rx_link_wait > wait && !ep->failed) {
			char what[128];

			snprintf(what, sizeof(what), "its message's data link %u did not connect "
				 "within %d s (btl_devtcp_connect_timeout)", ep->crx.frame.link,
				 2 * mca_btl_devtcp_component.connect_timeout);
			fail_peer(m, ep, what, 0);
		}
}

/* One poll over every socket that can have something for us: the
 * listeners, connections still saying hello, and each peer's control
 * connection (or the data link its current message waits on). m->pep[i]
 * is the peer of m->pfd[i]. */
static size_t poll_set(struct devtcp_module *m)
{
	struct mca_btl_base_endpoint_t *ep;
	struct devtcp_pending *p;
	size_t n = 3, want = 3;

	for (p = m->pending; p; p = p->next)
		want++;
	for (ep = devtcp_first_endpoint(m); ep; ep = ep->next)
		want++;
	if (want > m->pfd_cap) {
		struct pollfd *pfd = realloc(m->pfd, want * 2 * sizeof(*pfd));
		struct mca_btl_base_endpoint_t **pep;

		if (!pfd)
			return 0;
		m->pfd = pfd;
		pep = realloc(m->pep, want * 2 * sizeof(*pep));
		if (!pep)
			return 0;
		m->pep = pep;
		m->pfd_cap = want * 2;
	}
	m->pfd[0] = (struct pollfd){ .fd = m->ctrl_listen, .events = POLLIN };
	m->pfd[1] = (struct pollfd){ .fd = m->data_listen, .events = POLLIN };
	m->pfd[2] = (struct pollfd){ .fd = devtcp_devmem_fd(m), .events = POLLIN };
	m->pep[0] = m->pep[1] = m->pep[2] = NULL;
	for (p = m->pending; p; p = p->next) {
		m->pep[n] = NULL;
		m->pfd[n++] = (struct pollfd){ .fd = p->fd, .events = POLLIN };
	}
	for (ep = devtcp_first_endpoint(m); ep; ep = ep->next) {
		int fd = ep->rx_state == RX_DATA ? ep->rx_data_fd[ep->crx.frame.link] : ep->rx_ctrl_fd;

		if (fd < 0 || ep->failed)
			continue;
		m->pep[n] = ep;
		m->pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	return n;
}

/* Everything on the receive side; the caller holds rx_lock. */
static int recv_all(struct devtcp_module *m)
{
	struct mca_btl_base_endpoint_t *ep;
	bool hello = false;
	size_t n, i;
	int events = 0;

	check_deadlines(m, devtcp_now_ms());
	n = poll_set(m);
	if (!n)
		return 0;
	/* Messages already in a control buffer need no readiness. */
	for (ep = devtcp_first_endpoint(m); ep; ep = ep->next)
		if (ctrl_buffered(ep) && ep->rx_state != RX_DATA && !ep->failed)
			events += recv_progress(m, ep);
	if (poll(m->pfd, n, 0) <= 0)
		return events;
	for (i = 3; i < n; i++)
		if (m->pfd[i].revents && !m->pep[i])
			hello = true;
	if (m->pfd[2].revents && devtcp_devmem_events(m) < 0)
		fail_all(m, "the dma-buf's binding is gone");
	/* hellos first, so that a flood of new connections evicts none that
	 * has one waiting */
	if (hello)
		devtcp_pending_progress(m, devtcp_now_ms());
	if (m->pfd[0].revents)
		devtcp_accept_all(m, m->ctrl_listen);
	if (m->pfd[1].revents)
		devtcp_accept_all(m, m->data_listen);
	/* Endpoints are freed only at finalize, so m->pep stays valid. */
	for (i = 3; i < n; i++)
		if (m->pfd[i].revents && m->pep[i])
			events += recv_progress(m, m->pep[i]);
	return events;
}

int devtcp_progress_module(struct devtcp_module *m)
{
	struct mca_btl_base_endpoint_t *ep;
	int events = 0;

	if (__atomic_load_n(&m->sending, __ATOMIC_RELAXED))
		for (ep = devtcp_first_endpoint(m); ep; ep = ep->next)
			events += send_progress(m, ep);
	/* One thread receives at a time; the others have nothing to wait for. */
	if (pthread_mutex_trylock(&m->rx_lock))
		return events;
	events += recv_all(m);
	pthread_mutex_unlock(&m->rx_lock);
	return events;
}
