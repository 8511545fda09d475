// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Accepting: connections taken off the listeners wait for their hello,
 * which must authenticate its opener as a process of the job before the
 * connection joins that peer; strangers, silent ones and bad hellos are
 * refused, counted and closed, and the listeners are never left.
 */
#include "btl_devtcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/util/output.h"

#include "devmem.h"

/* Connections accepted in one progress call: the listeners never leave
 * the poll set, so the rest come at the next. */
#define DEVTCP_ACCEPT_BURST (2 * DEVTCP_MAX_PENDING)

/* A connection that did not make it to a peer: closed, counted, said at
 * verbosity 1 (who can reach the port can make many). */
static void refuse(struct devtcp_module *m, struct devtcp_pending *p, const char *why)
{
	char ip[DEVTCP_ADDRSTRLEN];

	m->refused++;
	if (!inet_ntop(p->tuple.family, p->tuple.src, ip, sizeof(ip)))
		snprintf(ip, sizeof(ip), "?");
	devtcp_verbose(1, "%s: refused a connection from %s port %u: %s", m->ifname, ip,
		       ntohs(p->tuple.src_port), why);
}

static void pending_free(struct devtcp_module *m, struct devtcp_pending *p)
{
	if (p->rx)
		devmem_rx_close(p->rx);
	if (p->fd >= 0)
		close(p->fd);
	m->npending--;
	free(p);
}

static bool same_source(const struct devtcp_tuple *a, const struct devtcp_tuple *b)
{
	return a->family == b->family && !memcmp(a->src, b->src, sizeof(a->src));
}

/*
 * Whether a connection from @ss may be a peer's: it comes from an address
 * a process of the job published. Until every process of the job has an
 * endpoint (the PML adds the rest lazily in large jobs), any address may
 * be one of theirs.
 */
static bool from_job(struct devtcp_module *m, const struct sockaddr_storage *ss)
{
	uint32_t size = __atomic_load_n(&m->job_size, __ATOMIC_RELAXED);
	struct mca_btl_base_endpoint_t *ep;

	for (ep = devtcp_first_endpoint(m); ep; ep = ep->next)
		if (devtcp_from(ep->addrs, ep->naddrs, ss))
			return true;
	return !size || __atomic_load_n(&m->job_peers, __ATOMIC_RELAXED) + 1 < size;
}

/*
 * Room for one more connection without a hello (counted in npending, not
 * yet in the list): past DEVTCP_MAX_PENDING_SRC
 * from its source address, or DEVTCP_MAX_PENDING in all, the oldest (of
 * that source, or of all) is closed. A peer's hello follows its connect at
 * once and is read as soon as the connection is accepted, so only
 * connections that keep silent grow old; the listeners are never left.
 */
static void make_room(struct devtcp_module *m, const struct devtcp_tuple *t)
{
	struct devtcp_pending **pp, **oldest = NULL, **oldest_src = NULL, *p;
	unsigned int from_src = 0;

	for (pp = &m->pending; *pp; pp = &(*pp)->next) {
		if (!oldest || (*pp)->deadline < (*oldest)->deadline)
			oldest = pp;
		if (same_source(&(*pp)->tuple, t)) {
			from_src++;
			if (!oldest_src || (*pp)->deadline < (*oldest_src)->deadline)
				oldest_src = pp;
		}
	}
	if (from_src >= DEVTCP_MAX_PENDING_SRC)
		pp = oldest_src;
	else if (m->npending > DEVTCP_MAX_PENDING)	/* the new one counted */
		pp = oldest;
	else
		return;
	p = *pp;
	*pp = p->next;
	m->evicted++;
	refuse(m, p, from_src >= DEVTCP_MAX_PENDING_SRC ?
		     "evicted: too many connections without a hello from its address" :
		     "evicted: too many connections without a hello");
	pending_free(m, p);
}

static bool pending_read(struct devtcp_module *m, struct devtcp_pending *p, uint64_t now);

/* Takes the connections off a listener (at most DEVTCP_ACCEPT_BURST a
 * call, so that a stranger reconnecting at once starves no peer's
 * messages): one from an address none of the job's processes published is
 * refused at once; the others wait for their hello, which is read at once
 * if it is there. */
void devtcp_accept_all(struct devtcp_module *m, int lfd)
{
	for (int n = 0; n < DEVTCP_ACCEPT_BURST; n++) {
		struct sockaddr_storage peer, local;
		socklen_t peer_len = sizeof(peer), local_len = sizeof(local);
		int fd = accept4(lfd, (struct sockaddr *)&peer, &peer_len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct devtcp_pending *p;
		uint64_t now = devtcp_now_ms();

		if (fd < 0)
			return;
		if (getsockname(fd, (struct sockaddr *)&local, &local_len) < 0 ||
		    peer.ss_family != m->addr.family) {
			close(fd);
			continue;
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			close(fd);
			continue;
		}
		m->npending++;
		p->fd = fd;
		p->data = lfd == m->data_listen;
		p->deadline = now + 1000ull * mca_btl_devtcp_component.connect_timeout;
		devtcp_tuple(&p->tuple, &peer, &local);
		if (!from_job(m, &peer)) {
			m->strangers++;
			refuse(m, p, "not from an address of the job's processes");
			pending_free(m, p);
			continue;
		}
		if (p->data && devtcp_devmem_accept(m, fd, &p->rx) != OPAL_SUCCESS) {
			refuse(m, p, "cannot receive it with devmem");
			pending_free(m, p);
			continue;
		}
		devtcp_set_peer_timeout(fd);
		if (pending_read(m, p, now)) {
			pending_free(m, p);
			continue;
		}
		make_room(m, &p->tuple);
		p->next = m->pending;
		m->pending = p;
	}
}

/*
 * A connection's hello: it must be meant for us and prove that its opener
 * knows our secret (which only the job's processes have, through the
 * modex), name a process of the job whose published addresses it comes
 * from, and fill a slot that was never filled. Then it is that peer's.
 */
static int hello_done(struct devtcp_module *m, struct devtcp_pending *p)
{
	struct devtcp_component *c = &mca_btl_devtcp_component;
	struct devtcp_hello *h = &p->hello;
	opal_process_name_t name, me = OPAL_PROC_MY_NAME;
	struct mca_btl_base_endpoint_t *ep;
	struct sockaddr_storage from;
	enum devtcp_verdict v;
	char why[128];
	bool *used;
	int *slot;

	v = devtcp_hello_check(h, c->data_links, me.jobid, me.vpid, c->secret, &p->tuple);
	if (v != DEVTCP_OK) {
		refuse(m, p, devtcp_verdict_str(v));
		return -1;
	}
	if ((h->kind == DEVTCP_LINK_DATA) != p->data) {
		refuse(m, p, p->data ? "a control hello on the data port"
				     : "a data link's hello on the control port");
		return -1;
	}
	name.jobid = ntohl(h->jobid);
	name.vpid = ntohl(h->vpid);
	memset(&from, 0, sizeof(from));
	from.ss_family = p->tuple.family;
	if (from.ss_family == AF_INET)
		memcpy(&((struct sockaddr_in *)&from)->sin_addr, p->tuple.src, 4);
	else
		memcpy(&((struct sockaddr_in6 *)&from)->sin6_addr, p->tuple.src, 16);
	ep = devtcp_endpoint_for_hello(m, &name, &from);
	if (!ep) {
		snprintf(why, sizeof(why), "claims to be %u.%u, whose published addresses it does "
			 "not come from", name.jobid, name.vpid);
		refuse(m, p, why);
		return -1;
	}
	used = h->kind == DEVTCP_LINK_CTRL ? &ep->rx_ctrl_used : &ep->rx_data_used[h->index];
	slot = h->kind == DEVTCP_LINK_CTRL ? &ep->rx_ctrl_fd : &ep->rx_data_fd[h->index];
	if (*used) {
		snprintf(why, sizeof(why), "a second %s connection %u of %u.%u",
			 h->kind == DEVTCP_LINK_CTRL ? "control" : "data", h->index, name.jobid,
			 name.vpid);
		refuse(m, p, why);
		return -1;
	}
	if (p->rx && devtcp_devmem_link(m, p->fd, &p->rx) != OPAL_SUCCESS) {
		refuse(m, p, "cannot set up its devmem receive");
		return -1;
	}
	*used = true;
	*slot = p->fd;
	p->fd = -1;
	if (h->kind == DEVTCP_LINK_DATA) {
		ep->rx_devmem[h->index] = p->rx;
		p->rx = NULL;
	}
	return 0;
}

/* Reads what there is of p's hello; true when p is done with (it joined
 * a peer, or was refused), false while it may still come. */
static bool pending_read(struct devtcp_module *m, struct devtcp_pending *p, uint64_t now)
{
	int rc = p->rx ? devtcp_devmem_read(m, p->rx, &p->hello, sizeof(p->hello), &p->got)
		       : devtcp_read_some(p->fd, &p->hello, sizeof(p->hello), &p->got);

	if (rc == 0 && now < p->deadline)
		return false;
	if (rc == 0) {
		m->hello_timeouts++;
		refuse(m, p, "no hello within btl_devtcp_connect_timeout");
	} else if (rc < 0) {
		refuse(m, p, errno == EBADMSG ? devmem_last_error()
			     : errno ? strerror(errno) : "closed before its hello");
	} else {
		hello_done(m, p);
	}
	return true;
}

void devtcp_pending_progress(struct devtcp_module *m, uint64_t now)
{
	struct devtcp_pending **pp = &m->pending;

	while (*pp) {
		struct devtcp_pending *p = *pp;

		if (!pending_read(m, p, now)) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		pending_free(m, p);
	}
}
