// SPDX-License-Identifier: GPL-2.0
/*
 * rdpmd's clients: who they are and may use, their requests (HELLO,
 * REGISTER, JOIN, STEER, UNSTEER, UNREGISTER, WINDOW, STATUS, DRAIN, RELOAD)
 * and replies, and the bindings and flows they own, released when they go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "owner.h"
#include "proto.h"
#include "rdpmd.h"

/* Buffers (REGISTER and JOIN) of one uid at once. */
#define MAX_BINDINGS_PER_USER	16
/* While out of fds without a spare, the listener waits this long. */
#define LISTEN_PAUSE_MS		1000
/* Connections accepted per listener event, so that clients get a turn. */
#define ACCEPT_BATCH		32
/* A client's refusals logged in a burst, then one a second (a token bucket). */
#define CLIENT_LOG_BURST	10
#define CLIENT_LOG_PER_S	1
/* While clients wait for the closer, the loop looks again this often. */
#define CLOSER_RETRY_MS		100
/* How often the sockets that proved flows are looked at again: a rule
 * outlives its socket by at most this long. */
#define FLOW_CHECK_MS		1000
/* sock_diag requests of one re-check of socket-proved rules (round robin). */
#define FLOW_CHECKS_PER_TICK	256


struct client;

/*
 * A user's shared buffer on a NIC (JOIN): a dma-buf rdpmd allocated and
 * bound once; its members are bindings of their own that point here.
 */
struct shared {
	struct shared *next;
	struct rdpm_nic *n;
	uid_t uid;
	unsigned int shift;		/* log2 of its receive buffers (JOIN's 0 resolved) */
	struct devmem_mem *mem;
	struct devmem_binding *b;
	unsigned int nq, q[RDPM_MAX_QUEUES];
	unsigned int members;
	uint64_t admitted;		/* the members' shares */
};

/* A client's buffer: a dma-buf of its own (REGISTER) or a share (JOIN). */
struct binding {
	struct binding *next;
	uint32_t handle;
	struct client *c;
	struct rdpm_nic *n;
	struct devmem_mem *mem;		/* NULL for a share */
	struct devmem_binding *b;	/* NULL for a share */
	struct shared *sh;		/* a share: of this buffer */
	uint64_t share;
	unsigned int nq, q[RDPM_MAX_QUEUES];
	dev_t dev;
	ino_t ino;
};

struct flow {
	struct flow *next;
	uint32_t id;
	struct client *c;
	struct binding *b;
	struct devmem_flow f;
	uint32_t rule;
	unsigned int queue;
	bool proven;			/* by socket sk; else an administrator's tuple */
	struct rdpm_sock sk;
};

struct client {
	struct client *next;
	int fd;
	uint64_t since;			/* connected at (rdpm_now_ms) */
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t groups[64];
	int ngroups;
	bool hello;
	bool dead;
	bool unread;			/* not read until the closer queue has room */
	bool reading;			/* the closer helper reads its next message */
	uint64_t serial;		/* names it to the helper (rdpm_closer_read) */
	unsigned int joins;		/* shares (JOIN) held */
	struct rdpm_bucket log;		/* its refusals logged; log.missed: those not */
};


static struct client *clients;
static struct shared *shareds;
static struct binding *bindings;
static struct flow *flows;
static uint32_t next_handle = 1, next_flow = 1;
static uint64_t next_serial = 1;
static uint64_t next_flow_check;
static unsigned int nclients, nbindings;
/* Clients that died with their socket not yet handed to the closer. */
static bool close_pending;
/* Closed to accept (and close) a connection when out of fds, then reopened. */
static int spare_fd = -1;
static bool listen_paused;
static uint64_t listen_resume_at;

uint64_t rdpm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint32_t new_id(uint32_t *next)
{
	uint32_t id = (*next)++;

	if (!*next)
		*next = 1;
	return id;
}

/* A message, with file descriptor @fd attached unless it is -1. */
static void send_msg_fd(struct client *c, uint16_t type, uint32_t id, const void *body,
			size_t len, int fd)
{
	struct rdpm_hdr h = { .magic = RDPM_MAGIC, .version = RDPM_VERSION, .type = type,
			      .length = sizeof(h) + len, .id = id };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };

	if (c->dead)
		return;
	/* A client that does not read its replies loses its connection
	 * rather than stalling everyone else. */
	if (rdpm_send_fds(c->fd, iov, 2, &fd, fd >= 0, MSG_DONTWAIT) < 0) {
		static struct rdpm_bucket rl;

		rdpm_log_limited(&rl, LOG_WARNING, "client pid %d uid %u: cannot send (%m): "
				 "disconnecting", c->pid, c->uid);
		rdpmd.counters.closed_unread++;
		c->dead = true;
	}
}

static void send_msg(struct client *c, uint16_t type, uint32_t id, const void *body, size_t len)
{
	send_msg_fd(c, type, id, body, len, -1);
}

/*
 * Whether a refusal of @c may be logged now: CLIENT_LOG_BURST at once, then
 * CLIENT_LOG_PER_S a second. A client sending bad requests in a loop costs the
 * journal a line a second, and the lines left out are counted.
 */
static bool client_may_log(struct client *c)
{
	return rdpm_bucket_take(&c->log, CLIENT_LOG_BURST, CLIENT_LOG_PER_S);
}

static int reply_err(struct client *c, const struct rdpm_hdr *req, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Sends error @err with text @msg in reply to @req. */
static void send_err(struct client *c, const struct rdpm_hdr *req, int err, const char *msg)
{
	struct {
		struct rdpm_error e;
		char msg[512];
	} r = { .e = { .err = err, .request_type = req->type } };

	snprintf(r.msg, sizeof(r.msg), "%s", msg);
	send_msg(c, RDPM_ERROR, req->id, &r, sizeof(r.e) + strlen(r.msg) + 1);
}

static int reply_err(struct client *c, const struct rdpm_hdr *req, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (client_may_log(c)) {
		if (c->log.missed)
			rdpm_log(LOG_NOTICE, "client pid %d uid %u: %lu refusal(s) not logged (at "
				 "most one a second)", c->pid, c->uid, c->log.missed);
		c->log.missed = 0;
		rdpm_log(LOG_NOTICE, "client pid %d uid %u: request %u refused: %s (%s)", c->pid,
			 c->uid, req->type, msg, strerror(-err));
	}
	send_err(c, req, err, msg);
	return err;
}

static void send_event(struct client *c, uint32_t ev, uint32_t handle, const char *ifname)
{
	struct rdpm_event e = { .event = ev, .handle = handle };

	snprintf(e.ifname, sizeof(e.ifname), "%s", ifname);
	send_msg(c, RDPM_EVENT, 0, &e, sizeof(e));
}

static bool is_admin_uid(uid_t uid)
{
	return uid == 0 || rdpm_idlist_has(&rdpmd.conf.admin_users, uid);
}

static bool is_admin(const struct client *c)
{
	return is_admin_uid(c->uid);
}

static bool may_use(const struct client *c, const struct rdpm_nic_conf *nc)
{
	if (c->uid == 0 || rdpm_idlist_has(&nc->users, c->uid))
		return true;
	if (rdpm_idlist_has(&nc->groups, c->gid))
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (rdpm_idlist_has(&nc->groups, c->groups[i]))
			return true;
	return false;
}

/* Whether @c may use some NIC (or is an admin): nobody else has any
 * business with rdpmd, and must not hold connections of others. */
static bool may_use_any(const struct client *c)
{
	if (is_admin(c))
		return true;
	for (unsigned int i = 0; i < rdpmd.nnics; i++)
		if (may_use(c, &rdpmd.nics[i].conf))
			return true;
	return false;
}

static struct rdpm_nic *nic_by_name(const char *name)
{
	for (unsigned int i = 0; i < rdpmd.nnics; i++)
		if (!strcmp(rdpmd.nics[i].conf.name, name))
			return &rdpmd.nics[i];
	return NULL;
}

static void flow_remove(struct flow *f)
{
	struct flow **pp;

	for (pp = &flows; *pp != f; pp = &(*pp)->next)
		;
	*pp = f->next;
	rdpm_nic_rule_del(f->b->n, f->rule, f->queue);
	free(f);
}

/* A member leaves its shared buffer; the last one unbinds it. */
static void shared_leave(struct binding *b)
{
	struct shared *sh = b->sh, **pp;

	sh->members--;
	sh->admitted -= b->share;
	b->c->joins--;
	rdpm_log(LOG_INFO, "%s: pid %d left the shared buffer of uid %u (handle %u); %u "
		 "member(s) left", sh->n->conf.name, b->c->pid, sh->uid, b->handle, sh->members);
	if (sh->members)
		return;
	for (pp = &shareds; *pp != sh; pp = &(*pp)->next)
		;
	*pp = sh->next;
	rdpmd.ops->unbind(sh->b);
	rdpmd.ops->mem_free(sh->mem);
	for (unsigned int i = 0; i < sh->nq; i++)
		sh->n->bound[sh->q[i] - sh->n->first] = false;
	rdpm_log(LOG_INFO, "%s: the shared buffer of uid %u unbound: its last member left",
		 sh->n->conf.name, sh->uid);
	free(sh);
}

static void binding_remove(struct binding *b)
{
	struct binding **pp;
	struct flow *f, *next;

	for (f = flows; f; f = next) {
		next = f->next;
		if (f->b == b)
			flow_remove(f);
	}
	for (pp = &bindings; *pp != b; pp = &(*pp)->next)
		;
	*pp = b->next;
	nbindings--;
	if (b->sh) {
		shared_leave(b);
	} else {
		rdpmd.ops->unbind(b->b);
		rdpmd.ops->mem_free(b->mem);
		for (unsigned int i = 0; i < b->nq; i++)
			b->n->bound[b->q[i] - b->n->first] = false;
		rdpm_log(LOG_INFO, "%s: binding %u of pid %d unbound", b->n->conf.name,
			 b->handle, b->c->pid);
	}
	free(b);
}

/* Drops every binding (with its flows) of @c (NULL: everyone's) on @n
 * (NULL: all NICs); tells the clients with @event when non-zero. */
unsigned int rdpmd_drop(struct client *c, struct rdpm_nic *n, uint32_t event)
{
	struct binding *b, *next;
	unsigned int count = 0;

	for (b = bindings; b; b = next) {
		next = b->next;
		if ((c && b->c != c) || (n && b->n != n))
			continue;
		if (event)
			send_event(b->c, event, b->handle, b->n->conf.name);
		binding_remove(b);
		count++;
	}
	return count;
}

static void listener_arm(bool on);
static bool close_if_empty(int fd);

/*
 * Closes @c's connection and releases what it holds. The socket goes to the
 * closer too: fds the client sent and rdpmd never read are released
 * with it, and the last close of those may block. When the closer queue is
 * full the client stays, dead and unwatched, and is closed later (false);
 * at exit (@now) it is closed here.
 */
static bool client_close(struct client *c, bool now)
{
	struct client **pp;
	unsigned int nb;

	epoll_ctl(rdpmd.epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (close_if_empty(c->fd)) {
		/* nothing of the client's went with it */
	} else if (rdpm_closer_push(&c->fd, 1, c->uid)) {
		rdpmd.counters.fds_closed++;
	} else if (now) {
		rdpm_closer_keep(&c->fd, 1, c->uid);	/* closed by rdpmd's exit */
	} else {
		close_pending = true;
		return false;
	}
	nb = rdpmd_drop(c, NULL, 0);
	for (pp = &clients; *pp != c; pp = &(*pp)->next)
		;
	*pp = c->next;
	nclients--;
	/* An fd is free again: take the spare back, accept again. */
	if (spare_fd < 0)
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (listen_paused)
		listener_arm(true);
	if (c->log.missed)
		rdpm_log(LOG_NOTICE, "client pid %d uid %u: %lu refusal(s) not logged (at most "
			 "one a second)", c->pid, c->uid, c->log.missed);
	rdpm_log(LOG_INFO, "client pid %d uid %u disconnected; %u binding(s) released", c->pid,
		 c->uid, nb);
	free(c);
	return true;
}

/* Refuses @c, a uid that may use no NIC, with EACCES: its slot is free
 * again after this batch of events (or at once, when not admitted yet). */
static void refuse_no_access(struct client *c, uint32_t id)
{
	static struct rdpm_bucket rl;
	struct rdpm_hdr req = { .type = RDPM_HELLO, .id = id };
	char msg[160];

	rdpmd.counters.refused_no_access++;
	rdpm_log_limited(&rl, LOG_WARNING, "refusing pid %d uid %u: the uid may use no NIC of rdpmd "
		    "(users/groups) and is no admin", c->pid, c->uid);
	snprintf(msg, sizeof(msg), "uid %u may use no NIC of rdpmd (users and groups of its "
		 "NICs)", c->uid);
	send_err(c, &req, -EACCES, msg);
	c->dead = true;
}

static void do_hello(struct client *c, const struct rdpm_msg *m)
{
	struct rdpm_hello_reply r = { .version = RDPM_VERSION, .max_msg = RDPM_MAX_MSG };

	if (RDPM_VERSION < m->u.hello.min_version || RDPM_VERSION > m->u.hello.max_version) {
		reply_err(c, &m->hdr, -EPROTONOSUPPORT, "rdpmd speaks protocol version %d only, "
			  "the client %u to %u", RDPM_VERSION, m->u.hello.min_version,
			  m->u.hello.max_version);
		return;
	}
	/* Access is checked at accept; a reload may have taken it since. */
	if (!may_use_any(c)) {
		refuse_no_access(c, m->hdr.id);
		return;
	}
	c->hello = true;
	send_msg(c, RDPM_HELLO | RDPM_REPLY, m->hdr.id, &r, sizeof(r));
}

/* Refuses a dma-buf registered already (@st; NULL for a share), a buffer
 * over max_bindings (all users), or @size more bytes over the quotas of the
 * client's uid: every connection of a user counts against the same quotas,
 * so more connections get no more. A uid's shared buffer counts whole,
 * once, however many shares it has. Who else registered a dma-buf is told
 * to admins only: another tenant's existence is not a client's business. */
static int register_quota(struct client *c, const struct rdpm_msg *m, struct rdpm_nic *n,
			  const struct stat *st, uint64_t size)
{
	unsigned int nb = 0;
	uint64_t used = 0;

	for (struct binding *it = bindings; it; it = it->next) {
		if (st && !it->sh && it->dev == st->st_dev && it->ino == st->st_ino) {
			if (it->c == c)
				return reply_err(c, &m->hdr, -EEXIST, "this dma-buf is already "
						 "registered on this connection (handle %u)",
						 it->handle);
			if (is_admin(c))
				return reply_err(c, &m->hdr, -EEXIST, "this dma-buf is already "
						 "registered (handle %u of pid %d uid %u)",
						 it->handle, it->c->pid, it->c->uid);
			return reply_err(c, &m->hdr, -EEXIST, "this dma-buf is already registered");
		}
		if (it->c->uid == c->uid) {
			nb++;
			if (it->n == n && !it->sh)
				used += rdpmd.ops->mem_size(it->mem);
		}
	}
	for (struct shared *sh = shareds; sh; sh = sh->next)
		if (sh->uid == c->uid && sh->n == n)
			used += rdpmd.ops->mem_size(sh->mem);
	if (nbindings >= rdpmd.conf.max_bindings) {
		static struct rdpm_bucket rl;

		rdpmd.counters.refused_bindings++;
		rdpm_log_limited(&rl, LOG_WARNING, "refusing a buffer of pid %d uid %u: max_bindings "
			    "(%u, all users) reached", c->pid, c->uid, rdpmd.conf.max_bindings);
		return reply_err(c, &m->hdr, -EDQUOT, "rdpmd holds as many buffers as it takes "
				 "(max_bindings); try again later");
	}
	if (nb >= MAX_BINDINGS_PER_USER)
		return reply_err(c, &m->hdr, -EDQUOT, "quota: at most %d buffers per uid, uid %u "
				 "has them", MAX_BINDINGS_PER_USER, c->uid);
	if (used + size > n->conf.max_bytes)
		return reply_err(c, &m->hdr, -EDQUOT, "quota: %llu bytes already bound on %s by "
				 "uid %u, %llu more exceed max_bytes %llu (per uid)",
				 (unsigned long long)used, n->conf.name, c->uid,
				 (unsigned long long)size, (unsigned long long)n->conf.max_bytes);
	return 0;
}

/* Picks the free reserved queues the request wants, in @b. */
static int register_queues(struct client *c, const struct rdpm_msg *m, struct rdpm_nic *n,
			   struct binding *b)
{
	unsigned int want = m->u.reg.nqueues ? m->u.reg.nqueues :
			    n->conf.queues_per_binding ? n->conf.queues_per_binding :
			    n->conf.reserve;

	for (unsigned int i = 0; i < n->conf.reserve && b->nq < want; i++)
		if (!n->bound[i])
			b->q[b->nq++] = n->first + i;
	if (b->nq < want)
		return reply_err(c, &m->hdr, -EBUSY, "%s: %u reserved queue(s) wanted, %u of %u "
				 "free (others are bound to other buffers)", n->conf.name, want,
				 b->nq, n->conf.reserve);
	return 0;
}

/* Binds @b's dma-buf to its queues and replies with the binding. */
static int register_bind(struct client *c, const struct rdpm_msg *m, struct rdpm_nic *n,
			 struct binding *b, const struct stat *st)
{
	struct rdpm_register_reply r = { 0 };
	unsigned int shift = m->u.reg.flags & RDPM_REGISTER_PAGE_SHIFT;
	int err = rdpmd.ops->bind_rx(&b->b, n->nic, b->mem, b->q, b->nq,
				     shift ? 1u << shift : 0);

	if (err)
		return reply_err(c, &m->hdr, err, "%s", rdpmd.ops->last_error());
	for (unsigned int i = 0; i < b->nq; i++)
		n->bound[b->q[i] - n->first] = true;
	b->handle = new_id(&next_handle);
	b->c = c;
	b->n = n;
	b->dev = st->st_dev;
	b->ino = st->st_ino;
	b->next = bindings;
	bindings = b;
	nbindings++;
	r.handle = b->handle;
	r.dmabuf_id = rdpmd.ops->binding_id(b->b);
	r.nqueues = b->nq;
	memcpy(r.queues, b->q, sizeof(r.queues));
	rdpm_log(LOG_INFO, "%s: pid %d uid %u bound %llu bytes as dmabuf %u to queue(s) %u-%u "
		 "(handle %u, %u-byte buffers)", n->conf.name, c->pid, c->uid,
		 (unsigned long long)rdpmd.ops->mem_size(b->mem), r.dmabuf_id, b->q[0],
		 b->q[b->nq - 1], b->handle, rdpmd.ops->binding_page_size(b->b));
	send_msg(c, RDPM_REGISTER | RDPM_REPLY, m->hdr.id, &r, sizeof(r));
	return 0;
}

static void do_register(struct client *c, const struct rdpm_msg *m, int fd)
{
	char why[160];
	const char *ifname = m->u.reg.ifname;
	struct rdpm_nic *n = nic_by_name(ifname);
	struct binding *b;
	struct stat st;
	int err;

	if (!n)
		return (void)reply_err(c, &m->hdr, -ENODEV, "%s is not a NIC rdpmd manages "
					"(see its configuration)", ifname);
	if (!may_use(c, &n->conf))
		return (void)reply_err(c, &m->hdr, -EACCES, "uid %u may not use %s (users/groups "
					"of [nic %s] in %s)", c->uid, ifname, ifname,
					rdpmd.conf_path);
	err = rdpmd.ops->dmabuf_check(fd, why, sizeof(why));
	if (err)
		return (void)reply_err(c, &m->hdr, err, "%s", why);
	/* A dma-buf: fstat does not leave its in-kernel file system. */
	if (fstat(fd, &st))
		return (void)reply_err(c, &m->hdr, -errno, "fstat of the dma-buf: %m");
	b = calloc(1, sizeof(*b));
	if (!b)
		return (void)reply_err(c, &m->hdr, -ENOMEM, "out of memory");
	/* The request is checked before the NIC's state: bad input gets the
	 * same answer whatever the NIC is doing. */
	err = rdpmd.ops->mem_import(&b->mem, fd);
	if (err) {
		free(b);
		return (void)reply_err(c, &m->hdr, err, "%s", rdpmd.ops->last_error());
	}
	if (!n->nic)
		err = reply_err(c, &m->hdr, -ENODEV, "%s is absent or could not be set up (see "
				"rdpmd's log)", ifname);
	else if (!n->up)
		err = reply_err(c, &m->hdr, -ENETDOWN, "%s is down", ifname);
	else
		err = register_quota(c, m, n, &st, rdpmd.ops->mem_size(b->mem));
	if (!err)
		err = register_queues(c, m, n, b);
	if (!err)
		err = register_bind(c, m, n, b, &st);
	if (err) {
		rdpmd.ops->mem_free(b->mem);
		free(b);
	}
}

/* A uid has one shared buffer per NIC. */
static struct shared *shared_find(const struct rdpm_nic *n, uid_t uid)
{
	for (struct shared *sh = shareds; sh; sh = sh->next)
		if (sh->n == n && sh->uid == uid)
			return sh;
	return NULL;
}

/* The user's shared buffer on @n, with buffers of 2^@shift bytes when
 * made and bound at the first use; NULL after an error reply. */
static struct shared *shared_get(struct client *c, const struct rdpm_msg *m,
				 struct rdpm_nic *n, unsigned int shift)
{
	unsigned int want = n->conf.queues_per_binding ? n->conf.queues_per_binding :
			    n->conf.reserve;
	struct shared *sh;
	int err;

	sh = shared_find(n, c->uid);
	if (sh)
		return sh;
	sh = calloc(1, sizeof(*sh));
	if (!sh) {
		reply_err(c, &m->hdr, -ENOMEM, "out of memory");
		return NULL;
	}
	for (unsigned int i = 0; i < n->conf.reserve && sh->nq < want; i++)
		if (!n->bound[i])
			sh->q[sh->nq++] = n->first + i;
	if (sh->nq < want) {
		reply_err(c, &m->hdr, -EBUSY, "%s: a shared buffer wants %u reserved queue(s), "
			  "%u of %u are free (others are bound to other buffers)", n->conf.name,
			  want, sh->nq, n->conf.reserve);
		free(sh);
		return NULL;
	}
	err = rdpmd.ops->mem_shared(&sh->mem, n->conf.shared_bytes, shift);
	if (!err)
		err = rdpmd.ops->bind_rx(&sh->b, n->nic, sh->mem, sh->q, sh->nq, 1u << shift);
	if (err) {
		reply_err(c, &m->hdr, err, "the shared buffer of %llu bytes (shared_bytes of "
			  "[nic %s]): %s", (unsigned long long)n->conf.shared_bytes, n->conf.name,
			  rdpmd.ops->last_error());
		rdpmd.ops->mem_free(sh->mem);
		free(sh);
		return NULL;
	}
	for (unsigned int i = 0; i < sh->nq; i++)
		n->bound[sh->q[i] - n->first] = true;
	sh->n = n;
	sh->uid = c->uid;
	sh->shift = shift;
	sh->next = shareds;
	shareds = sh;
	rdpm_log(LOG_INFO, "%s: shared buffer of uid %u: %zu bytes bound as dmabuf %u to "
		 "queue(s) %u-%u, %u-byte buffers", n->conf.name, c->uid,
		 rdpmd.ops->mem_size(sh->mem), rdpmd.ops->binding_id(sh->b), sh->q[0],
		 sh->q[sh->nq - 1], rdpmd.ops->binding_page_size(sh->b));
	return sh;
}

/* log2 of the system page size: what a JOIN's page shift 0 stands for. */
static unsigned int page_shift(void)
{
	return (unsigned int)__builtin_ctzl((unsigned long)sysconf(_SC_PAGESIZE));
}

/*
 * Refuses a JOIN over the quotas on shares: each JOIN passes the client
 * another fd of the shared dma-buf, so a loop of them would pin fds and
 * memory without end. At most max_joins_per_client of one connection and
 * max_joins_per_user of one uid at once; a share counts until it leaves
 * (UNREGISTER, disconnect).
 */
static int join_quota(struct client *c, const struct rdpm_msg *m)
{
	unsigned int mine = 0;

	if (c->joins >= rdpmd.conf.max_joins_per_client) {
		rdpmd.counters.refused_joins++;
		return reply_err(c, &m->hdr, -EDQUOT, "quota: this connection holds %u shares, "
				 "max_joins_per_client", c->joins);
	}
	for (struct client *o = clients; o; o = o->next)
		if (o->uid == c->uid)
			mine += o->joins;
	if (mine >= rdpmd.conf.max_joins_per_user) {
		rdpmd.counters.refused_joins++;
		return reply_err(c, &m->hdr, -EDQUOT, "quota: uid %u holds %u shares, "
				 "max_joins_per_user", c->uid, mine);
	}
	return 0;
}

/*
 * A share of the user's shared buffer on a NIC: the ranks of a job on one
 * host receive into one dma-buf bound once, instead of one binding (and
 * reserved queue) each. Shares are admitted while they fit in the buffer.
 * Page shift 0 means the system page size: it and log2 of the page size
 * name the same buffer.
 */
static void do_join(struct client *c, const struct rdpm_msg *m)
{
	const struct rdpm_join *j = &m->u.join;
	unsigned int shift = j->flags & RDPM_REGISTER_PAGE_SHIFT;
	struct rdpm_nic *n = nic_by_name(j->ifname);
	struct rdpm_join_reply r;
	struct shared *sh;
	struct binding *b;

	if (!shift)
		shift = page_shift();
	if (shift < page_shift())
		return (void)reply_err(c, &m->hdr, -EINVAL, "JOIN: receive buffers of 2^%u bytes "
					"are smaller than the %ld-byte page", shift,
					sysconf(_SC_PAGESIZE));

	if (!n)
		return (void)reply_err(c, &m->hdr, -ENODEV, "%s is not a NIC rdpmd manages "
					"(see its configuration)", j->ifname);
	if (!may_use(c, &n->conf))
		return (void)reply_err(c, &m->hdr, -EACCES, "uid %u may not use %s (users/groups "
					"of [nic %s] in %s)", c->uid, j->ifname, j->ifname,
					rdpmd.conf_path);
	if (!n->conf.shared_bytes)
		return (void)reply_err(c, &m->hdr, -EOPNOTSUPP, "%s has no shared buffers "
					"(shared_bytes 0 in [nic %s])", j->ifname, j->ifname);
	if (j->bytes > n->conf.shared_bytes)
		return (void)reply_err(c, &m->hdr, -EINVAL, "a share of %llu bytes is more than "
					"the %llu-byte shared buffer (shared_bytes of [nic %s])",
					(unsigned long long)j->bytes,
					(unsigned long long)n->conf.shared_bytes, j->ifname);
	if (!n->nic)
		return (void)reply_err(c, &m->hdr, -ENODEV, "%s is absent or could not be set "
					"up (see rdpmd's log)", j->ifname);
	if (!n->up)
		return (void)reply_err(c, &m->hdr, -ENETDOWN, "%s is down", j->ifname);
	sh = shared_find(n, c->uid);
	if (sh && sh->shift != shift)
		return (void)reply_err(c, &m->hdr, -EEXIST, "the shared buffer of uid %u on %s "
					"has receive buffers of 2^%u bytes, not 2^%u (one shared "
					"buffer per uid and NIC)", c->uid, j->ifname, sh->shift,
					shift);
	/* The first share makes the buffer: the uid is charged all of it. */
	if (join_quota(c, m) || register_quota(c, m, n, NULL, sh ? 0 : n->conf.shared_bytes))
		return;
	if (sh && sh->admitted + j->bytes > rdpmd.ops->mem_size(sh->mem))
		return (void)reply_err(c, &m->hdr, -EDQUOT, "the shared buffer of uid %u on %s "
					"holds %zu bytes, %llu of them shared by %u client(s): "
					"%llu more do not fit", c->uid, j->ifname,
					rdpmd.ops->mem_size(sh->mem), (unsigned long long)sh->admitted,
					sh->members, (unsigned long long)j->bytes);
	b = calloc(1, sizeof(*b));
	if (!b)
		return (void)reply_err(c, &m->hdr, -ENOMEM, "out of memory");
	sh = shared_get(c, m, n, shift);
	if (!sh)
		return free(b);
	sh->members++;
	sh->admitted += j->bytes;
	c->joins++;
	nbindings++;
	b->sh = sh;
	b->share = j->bytes;
	b->nq = sh->nq;
	memcpy(b->q, sh->q, sizeof(b->q));
	b->handle = new_id(&next_handle);
	b->c = c;
	b->n = n;
	b->next = bindings;
	bindings = b;
	rdpm_log(LOG_INFO, "%s: pid %d uid %u joined the shared buffer, dmabuf %u (handle %u, "
		 "share %llu bytes; %u member(s))", n->conf.name, c->pid, c->uid,
		 rdpmd.ops->binding_id(sh->b), b->handle, (unsigned long long)b->share, sh->members);
	r = (struct rdpm_join_reply){ .handle = b->handle,
				      .dmabuf_id = rdpmd.ops->binding_id(sh->b),
				      .nqueues = b->nq, .members = sh->members,
				      .size = rdpmd.ops->mem_size(sh->mem) };
	memcpy(r.queues, b->q, sizeof(r.queues));
	send_msg_fd(c, RDPM_JOIN | RDPM_REPLY, m->hdr.id, &r, sizeof(r),
		    rdpmd.ops->mem_fd(sh->mem));
}

static struct binding *own_binding(struct client *c, uint32_t handle)
{
	for (struct binding *b = bindings; b; b = b->next)
		if (b->handle == handle && b->c == c)
			return b;
	return NULL;
}

/*
 * The flow a STEER asks for on NIC @n, in @out: read from the socket @fd
 * the client passed (its own: owner.c; *@sk then says how to find it
 * again), or as given by an administrator without one. 0, or the error
 * reply's -errno.
 */
static int steer_flow(struct client *c, const struct rdpm_msg *m, int fd,
		      const struct rdpm_nic *n, struct devmem_flow *out, struct rdpm_sock *sk)
{
	const struct rdpm_steer *s = &m->u.steer;
	const char *reason;
	char why[200];
	int err;

	if (fd < 0) {
		if (!is_admin(c))
			return reply_err(c, &m->hdr, -EPERM, "STEER without a socket: only "
					 "administrators (uid 0, admin_users) steer a tuple as "
					 "given; pass the TCP socket that owns the flow");
		*out = (struct devmem_flow){ .family = s->family, .sport = s->sport,
					     .dport = s->dport };
		memcpy(out->src, s->src, 16);
		memcpy(out->dst, s->dst, 16);
		return 0;
	}
	err = rdpm_sock_read(fd, c->uid, sk, why, sizeof(why));
	if (err)
		return reply_err(c, &m->hdr, err, "STEER: %s", why);
	err = rdpm_sock_flow(sk, s, out, &reason);
	if (err)
		return reply_err(c, &m->hdr, err, "STEER: %s", reason);
	err = rdpm_flow_on_nic(sk, out, n->ifindex, n->conf.name, why, sizeof(why));
	if (err)
		return reply_err(c, &m->hdr, err, "STEER: %s", why);
	return 0;
}

/*
 * Whether @f may be steered for @c: not a rule already, and overlapping no
 * rule of another uid, which would take (or lose) packets of that user's
 * flows. Whose the other rule is, only an administrator is told.
 */
static int steer_conflict(struct client *c, const struct rdpm_msg *m, const struct rdpm_nic *n,
			  const struct devmem_flow *f)
{
	for (struct flow *o = flows; o; o = o->next) {
		if (o->b->n != n)
			continue;
		if (o->c->uid == c->uid && !memcmp(&o->f, f, sizeof(*f)))
			return reply_err(c, &m->hdr, -EADDRINUSE, "this flow is already steered%s "
					 "(flow %u)", o->c == c ? "" : " by another client of "
					 "this uid", o->id);
		if (o->c->uid != c->uid && rdpm_flows_overlap(&o->f, f)) {
			if (is_admin(c))
				return reply_err(c, &m->hdr, -EADDRINUSE, "this flow overlaps flow "
						 "%u of uid %u (pid %d) on %s", o->id,
						 o->c->uid, o->c->pid, n->conf.name);
			return reply_err(c, &m->hdr, -EADDRINUSE, "this flow overlaps a flow "
					 "another user steers on %s", n->conf.name);
		}
	}
	return 0;
}

/* STEER: the socket attached (@fd; -1: none) proves the flow is the
 * client's. rdpmd keeps no client fd: client_read closes it. */
static void do_steer(struct client *c, const struct rdpm_msg *m, int fd)
{
	const struct rdpm_steer *s = &m->u.steer;
	struct binding *b = own_binding(c, s->handle);
	struct rdpm_steer_reply r;
	unsigned int count = 0, proven = 0, best;
	struct devmem_flow want;
	struct rdpm_sock sk;
	struct flow *f;
	int err;

	if (!b)
		return (void)reply_err(c, &m->hdr, -ENOENT, "no buffer with handle %u of this "
					"client (REGISTER one first)", s->handle);
	if (steer_flow(c, m, fd, b->n, &want, &sk))
		return;
	if (want.dport < 1024 && c->uid != 0 &&
	    !rdpm_idlist_has(&b->n->conf.low_port_users, c->uid))
		return (void)reply_err(c, &m->hdr, -EACCES, "uid %u may not steer port %u (below "
					"1024: low_port_users of [nic %s])", c->uid, want.dport,
					b->n->conf.name);
	if (steer_conflict(c, m, b->n, &want))
		return;
	for (struct flow *o = flows; o; o = o->next) {
		if (o->c->uid == c->uid && o->b->n == b->n)
			count++;
		proven += o->proven;
	}
	if (fd >= 0 && proven >= rdpmd.conf.max_proven_flows) {
		static struct rdpm_bucket rl;

		rdpm_log_limited(&rl, LOG_WARNING, "refusing a STEER of pid %d uid %u: "
				 "max_proven_flows (%u, all users) reached", c->pid, c->uid,
				 rdpmd.conf.max_proven_flows);
		return (void)reply_err(c, &m->hdr, -EDQUOT, "rdpmd re-checks as many sockets as "
					"it takes (max_proven_flows); try again later");
	}
	if (count >= b->n->conf.max_rules)
		return (void)reply_err(c, &m->hdr, -EDQUOT, "quota: %u flow rules on %s of uid "
					"%u, the most max_rules allows (per uid)", count,
					b->n->conf.name, c->uid);
	f = calloc(1, sizeof(*f));
	if (!f)
		return (void)reply_err(c, &m->hdr, -ENOMEM, "out of memory");
	f->f = want;
	f->proven = fd >= 0;
	if (f->proven)		/* padding too: flows_check compares whole records */
		memcpy(&f->sk, &sk, sizeof(sk));
	/* The least-loaded queue of the binding. */
	best = b->q[0];
	for (unsigned int i = 1; i < b->nq; i++)
		if (b->n->rules[b->q[i] - b->n->first] < b->n->rules[best - b->n->first])
			best = b->q[i];
	err = rdpm_nic_rule_add(b->n, &f->f, best, &f->rule);
	if (err) {
		free(f);
		return (void)reply_err(c, &m->hdr, err, "%s", devmem_last_error());
	}
	f->id = new_id(&next_flow);
	f->c = c;
	f->b = b;
	f->queue = best;
	f->next = flows;
	flows = f;
	r.flow = f->id;
	r.queue = best;
	send_msg(c, RDPM_STEER | RDPM_REPLY, m->hdr.id, &r, sizeof(r));
}

static void do_unsteer(struct client *c, const struct rdpm_msg *m)
{
	for (struct flow *f = flows; f; f = f->next) {
		if (f->id == m->u.unsteer.flow && f->c == c) {
			flow_remove(f);
			send_msg(c, RDPM_UNSTEER | RDPM_REPLY, m->hdr.id, NULL, 0);
			return;
		}
	}
	reply_err(c, &m->hdr, -ENOENT, "no flow %u of this client", m->u.unsteer.flow);
}

/*
 * The receive window of a client's socket: an unprivileged client cannot
 * raise its receive buffer past net.core.rmem_max, which then bounds the
 * window far below what its dma-buf holds. The share is the client's own
 * memory, within max_bytes.
 */
static void do_window(struct client *c, const struct rdpm_msg *m, int fd)
{
	const struct rdpm_window *w = &m->u.window;
	struct binding *b = own_binding(c, w->handle);
	struct rdpm_window_reply r = { 0 };
	int proto = 0, type = 0, ret;
	socklen_t len = sizeof(proto);

	if (!b)
		return (void)reply_err(c, &m->hdr, -ENOENT, "no buffer with handle %u of this "
					"client", w->handle);
	if (b->sh && w->bytes > b->share)
		return (void)reply_err(c, &m->hdr, -EINVAL, "a share of %llu bytes is more than "
					"the %llu bytes of the shared buffer that JOIN admitted "
					"(handle %u)", (unsigned long long)w->bytes,
					(unsigned long long)b->share, w->handle);
	if (!b->sh && w->bytes > rdpmd.ops->mem_size(b->mem))
		return (void)reply_err(c, &m->hdr, -EINVAL, "a share of %llu bytes is more than "
					"the %zu-byte dma-buf of buffer %u",
					(unsigned long long)w->bytes, rdpmd.ops->mem_size(b->mem),
					w->handle);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    proto != IPPROTO_TCP || type != SOCK_STREAM)
		return (void)reply_err(c, &m->hdr, -ENOTSOCK, "WINDOW: the file descriptor "
					"attached is not a TCP socket");
	ret = devmem_rx_limit_window(fd, w->bytes);
	if (ret < 0)
		return (void)reply_err(c, &m->hdr, ret, "%s", devmem_last_error());
	r.window = ret;
	send_msg(c, RDPM_WINDOW | RDPM_REPLY, m->hdr.id, &r, sizeof(r));
}

static void do_unregister(struct client *c, const struct rdpm_msg *m)
{
	struct binding *b = own_binding(c, m->u.unreg.handle);

	if (!b)
		return (void)reply_err(c, &m->hdr, -ENOENT, "no buffer with handle %u of this "
					"client", m->u.unreg.handle);
	binding_remove(b);
	send_msg(c, RDPM_UNREGISTER | RDPM_REPLY, m->hdr.id, NULL, 0);
}

/* A growing text buffer for STATUS. */
struct buf {
	char *p;
	size_t n, cap;
	bool full;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->n)
		b->full = true;
	else
		b->n += n;
}

/* The refusal counters, for admins. */
static void status_counters(struct buf *o, bool json)
{
	const struct rdpm_counters *k = &rdpmd.counters;
	const struct {
		const char *name;
		uint64_t v;
	} cs[] = {
		{ "refused_max_clients", k->refused_max_clients },
		{ "refused_per_user", k->refused_per_user },
		{ "refused_no_fds", k->refused_no_fds },
		{ "refused_no_creds", k->refused_no_creds },
		{ "hello_timeouts", k->hello_timeouts },
		{ "closed_unread", k->closed_unread },
		{ "closed_empty", k->closed_empty },
		{ "fds_refused", k->fds_refused },
		{ "listener_paused", k->listener_paused },
		{ "refused_preauth", k->refused_preauth },
		{ "preauth_evicted", k->preauth_evicted },
		{ "refused_no_access", k->refused_no_access },
		{ "refused_bindings", k->refused_bindings },
		{ "refused_joins", k->refused_joins },
		{ "closer_full", k->closer_full },
		{ "closer_struck", k->closer_struck },
		{ "fds_kept", k->fds_kept },
		{ "fds_closed", k->fds_closed },
		{ "closer_pending", rdpm_closer_pending() },
		{ "closer_inflight", rdpm_closer_inflight() },
		{ "closer_kills", rdpm_closer_kills() },
		{ "log_dropped", rdpm_log_dropped() },
		{ "log_suppressed", rdpm_log_suppressed() },
	};

	bprintf(o, json ? ", \"counters\": {" : "counters:\n");
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
		bprintf(o, json ? "%s\"%s\": %llu" : "%s  %s %llu\n", json && i ? ", " : "",
			cs[i].name, (unsigned long long)cs[i].v);
	bprintf(o, json ? "}" : "");
}

/*
 * STATUS: everything for an admin (@all); for anyone else the NICs and
 * queues, but of the bindings, flows and clients only those of @uid: who
 * else uses rdpmd, with which pids and ports, is not theirs to see.
 */
static void status_text(struct buf *o, bool json, bool all, uid_t uid)
{
	unsigned int nb, nf;

	bprintf(o, json ? "{\"nics\": [" : "");
	for (unsigned int i = 0; i < rdpmd.nnics; i++) {
		struct rdpm_nic *n = &rdpmd.nics[i];

		if (json)
			bprintf(o, "%s{\"name\": \"%s\", \"present\": %s, \"up\": %s", i ? ", " : "",
				n->conf.name, n->nic ? "true" : "false", n->up ? "true" : "false");
		else
			bprintf(o, "nic %s: %s\n", n->conf.name,
				!n->nic ? "absent" : n->up ? "up" : "down");
		if (!n->nic) {
			bprintf(o, json ? "}" : "");
			continue;
		}
		if (json) {
			bprintf(o, ", \"queues\": %u, \"reserved\": [", n->queues);
			for (unsigned int q = 0; q < n->conf.reserve; q++)
				bprintf(o, "%s{\"queue\": %u, \"bound\": %s, \"flows\": %u}",
					q ? ", " : "", n->first + q, n->bound[q] ? "true" : "false",
					n->rules[q]);
			bprintf(o, "], \"rss_ctx\": %u, \"bindings\": [", n->rss_ctx);
		} else {
			bprintf(o, "  reserved queues %u-%u (RSS context %u)\n", n->first,
				n->queues - 1, n->rss_ctx);
			for (unsigned int q = 0; q < n->conf.reserve; q++)
				bprintf(o, "  queue %u: %s, %u flow(s)\n", n->first + q,
					n->bound[q] ? "bound" : "free", n->rules[q]);
		}
		nb = 0;
		for (struct binding *b = bindings; b; b = b->next) {
			if (b->n != n || (!all && b->c->uid != uid))
				continue;
			struct devmem_binding *db = b->sh ? b->sh->b : b->b;
			uint64_t bytes = b->sh ? b->share : rdpmd.ops->mem_size(b->mem);

			if (json) {
				bprintf(o, "%s{\"handle\": %u, \"pid\": %d, \"uid\": %u, "
					"\"dmabuf_id\": %u, \"bytes\": %llu, \"shared\": %s, "
					"\"page_size\": %u, \"queues\": [",
					nb ? ", " : "", b->handle, b->c->pid, b->c->uid,
					rdpmd.ops->binding_id(db), (unsigned long long)bytes,
					b->sh ? "true" : "false", rdpmd.ops->binding_page_size(db));
				for (unsigned int q = 0; q < b->nq; q++)
					bprintf(o, "%s%u", q ? ", " : "", b->q[q]);
				bprintf(o, "], \"flows\": [");
			} else {
				bprintf(o, "  binding %u: pid %d uid %u dmabuf %u, %llu bytes%s in "
					"%u-byte buffers, queues", b->handle, b->c->pid, b->c->uid,
					rdpmd.ops->binding_id(db), (unsigned long long)bytes,
					b->sh ? " (a share of the user's shared buffer)" : "",
					rdpmd.ops->binding_page_size(db));
				for (unsigned int q = 0; q < b->nq; q++)
					bprintf(o, " %u", b->q[q]);
				bprintf(o, "\n");
			}
			nf = 0;
			for (struct flow *f = flows; f; f = f->next) {
				if (f->b != b)
					continue;
				if (json)
					bprintf(o, "%s{\"flow\": %u, \"queue\": %u, \"rule\": %u, "
						"\"dport\": %u, \"sport\": %u, \"family\": %d}",
						nf ? ", " : "", f->id, f->queue, f->rule,
						f->f.dport, f->f.sport, f->f.family);
				else
					bprintf(o, "    flow %u: tcp%d port %u -> queue %u (rule %u)\n",
						f->id, f->f.family == AF_INET ? 4 : 6, f->f.dport,
						f->queue, f->rule);
				nf++;
			}
			bprintf(o, json ? "]}" : "");
			nb++;
		}
		bprintf(o, json ? "]}" : "");
	}
	bprintf(o, json ? "], \"clients\": [" : "clients:\n");
	nb = 0;
	for (struct client *c = clients; c; c = c->next) {
		if (!all && c->uid != uid)
			continue;
		bprintf(o, json ? "%s{\"pid\": %d, \"uid\": %u, \"hello\": %s}" :
			"%s  pid %d uid %u%s\n", json && nb ? ", " : "", c->pid, c->uid,
			json ? (c->hello ? "true" : "false") : (c->hello ? "" : " (no HELLO yet)"));
		nb++;
	}
	bprintf(o, json ? "]" : "");
	if (all)
		status_counters(o, json);
	bprintf(o, json ? "}\n" : "");
}

static void do_status(struct client *c, const struct rdpm_msg *m)
{
	struct buf o = { .cap = RDPM_MAX_STATUS - sizeof(struct rdpm_hdr) };
	bool allowed = is_admin(c);

	for (unsigned int i = 0; i < rdpmd.nnics && !allowed; i++)
		allowed = may_use(c, &rdpmd.nics[i].conf);
	if (!allowed)
		return (void)reply_err(c, &m->hdr, -EACCES, "uid %u may use no NIC of rdpmd",
					c->uid);
	o.p = malloc(o.cap);
	if (!o.p)
		return (void)reply_err(c, &m->hdr, -ENOMEM, "out of memory");
	status_text(&o, m->u.status.flags & RDPM_STATUS_JSON, is_admin(c), c->uid);
	if (o.full)
		reply_err(c, &m->hdr, -EMSGSIZE, "the status is larger than RDPM_MAX_STATUS");
	else
		send_msg(c, RDPM_STATUS | RDPM_REPLY, m->hdr.id, o.p, o.n + 1);
	free(o.p);
}

static void do_drain(struct client *c, const struct rdpm_msg *m)
{
	struct rdpm_nic *n = nic_by_name(m->u.drain.ifname);
	unsigned int count;

	if (!is_admin(c))
		return (void)reply_err(c, &m->hdr, -EPERM, "draining needs uid 0 or admin_users");
	if (!n)
		return (void)reply_err(c, &m->hdr, -ENODEV, "%s is not a NIC rdpmd manages",
					m->u.drain.ifname);
	count = rdpmd_drop(NULL, n, RDPM_EV_DRAINED);
	rdpm_log(LOG_NOTICE, "%s: drained by pid %d uid %u: %u binding(s) removed",
		 n->conf.name, c->pid, c->uid, count);
	send_msg(c, RDPM_DRAIN | RDPM_REPLY, m->hdr.id, NULL, 0);
}

int rdpmd_reload(void)
{
	struct rdpm_conf *nc = malloc(sizeof(*nc));
	char err[512];
	int ret;

	if (!nc)
		return -ENOMEM;
	ret = rdpm_conf_load(rdpmd.conf_path, nc, err, sizeof(err));
	if (!ret)
		ret = rdpm_conf_fd_budget(nc, err, sizeof(err));
	if (ret) {
		rdpm_log(LOG_ERR, "reload: %s; keeping the running configuration", err);
		free(nc);
		return ret;
	}
	/* Access lists and quotas change now; the socket, NICs and their
	 * reservations only with a restart. */
	for (unsigned int i = 0; i < rdpmd.nnics; i++) {
		const struct rdpm_nic_conf *x = rdpm_conf_nic(nc, rdpmd.nics[i].conf.name);
		struct binding *b, *next;

		if (!x) {
			rdpm_log(LOG_WARNING, "reload: [nic %s] removed: takes effect at restart",
				 rdpmd.nics[i].conf.name);
			continue;
		}
		if (x->reserve != rdpmd.nics[i].conf.reserve)
			rdpm_log(LOG_WARNING, "reload: %s: reserve changes at restart",
				 rdpmd.nics[i].conf.name);
		rdpmd.nics[i].conf.users = x->users;
		rdpmd.nics[i].conf.groups = x->groups;
		rdpmd.nics[i].conf.low_port_users = x->low_port_users;
		rdpmd.nics[i].conf.max_rules = x->max_rules;
		rdpmd.nics[i].conf.max_bytes = x->max_bytes;
		if (x->queues_per_binding <= rdpmd.nics[i].conf.reserve)
			rdpmd.nics[i].conf.queues_per_binding = x->queues_per_binding;
		for (b = bindings; b; b = next) {
			next = b->next;
			if (b->n == &rdpmd.nics[i] && !may_use(b->c, &b->n->conf)) {
				send_event(b->c, RDPM_EV_CONFIG, b->handle, b->n->conf.name);
				binding_remove(b);
			}
		}
	}
	rdpmd.conf.admin_users = nc->admin_users;
	rdpmd.conf.max_clients = nc->max_clients;
	rdpmd.conf.max_clients_per_user = nc->max_clients_per_user;
	rdpmd.conf.hello_timeout_ms = nc->hello_timeout_ms;
	rdpmd.conf.max_preauth = nc->max_preauth;
	rdpmd.conf.max_preauth_per_user = nc->max_preauth_per_user;
	rdpmd.conf.max_bindings = nc->max_bindings;
	rdpmd.conf.max_proven_flows = nc->max_proven_flows;
	rdpmd.conf.max_joins_per_client = nc->max_joins_per_client;
	rdpmd.conf.max_joins_per_user = nc->max_joins_per_user;
	rdpmd.conf.dmabuf_exporters = nc->dmabuf_exporters;
	free(nc);
	rdpm_log(LOG_NOTICE, "configuration reloaded from %s", rdpmd.conf_path);
	return 0;
}

static void do_reload(struct client *c, const struct rdpm_msg *m)
{
	if (!is_admin(c))
		return (void)reply_err(c, &m->hdr, -EPERM, "reloading needs uid 0 or admin_users");
	if (rdpmd_reload())
		return (void)reply_err(c, &m->hdr, -EINVAL, "the configuration has errors (see "
					"rdpmd's log); the running one stays");
	send_msg(c, RDPM_RELOAD | RDPM_REPLY, m->hdr.id, NULL, 0);
}

/* Connections closed before their credentials are known. */
#define UNKNOWN_UID	((uid_t)-1)

/* Hands @n fds a client of @uid passed to the closer (closer.c): rdpmd
 * never closes a client's file itself. */
static void drop_fds(const int *fds, unsigned int n, uid_t uid)
{
	if (!n)
		return;
	rdpmd.counters.fds_closed += n;
	if (!rdpm_closer_push(fds, n, uid))
		rdpm_closer_keep(fds, n, uid);
}

/*
 * Closes client socket @fd here when nothing waits in it: shut down first,
 * so that the peer cannot queue more (its sends get EPIPE), then peeked;
 * the last close of an empty unix socket releases no file of anyone's.
 * false: messages wait (with files, maybe), it is for the closer.
 */
static bool close_if_empty(int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} ctl;
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	int on = 1;
	ssize_t n;

	/* After the shutdown an empty socket reads as the end (0), and so
	 * does a 0-byte message: with SO_PASSCRED every message comes with
	 * its sender's credentials, the end with none. */
	shutdown(fd, SHUT_RDWR);
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)))
		return false;
	n = recvmsg(fd, &mh, MSG_PEEK | MSG_DONTWAIT);
	if (n != 0 || mh.msg_controllen || (mh.msg_flags & MSG_CTRUNC))
		return false;
	close(fd);
	return true;
}

/* Closes a connection refused before it was served. */
static void refuse_fd(int fd, uid_t uid)
{
	if (!close_if_empty(fd))
		drop_fds(&fd, 1, uid);
}

/* Stops reading @c while its uid has its share of the closer queue, or
 * (@busy) while the closer cannot read a message with fds for it. */
static void client_unread(struct client *c, bool busy)
{
	static struct rdpm_bucket rl;
	struct epoll_event ev = { .events = 0, .data.ptr = c };

	rdpmd.counters.closer_full++;
	if (busy)
		rdpm_log_limited(&rl, LOG_WARNING, "the closer helper cannot take a message with "
				 "fds now (restarting, or busy): clients of uid %u wait", c->uid);
	else
		rdpm_log_limited(&rl, LOG_WARNING, "%u passed fds wait to be closed (a client's "
				 "files block their close): clients of uid %u are not read until "
				 "they are", rdpm_closer_pending(), c->uid);
	epoll_ctl(rdpmd.epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->unread = true;
}

/* Stops reading @c for a while: its uid's files stalled the closer. */
static void client_struck(struct client *c)
{
	struct epoll_event ev = { .events = 0, .data.ptr = c };

	rdpmd.counters.closer_struck++;
	epoll_ctl(rdpmd.epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->unread = true;
}

/*
 * One message of @c: recvmsg's @n and @flags, @nfds fds. @fds[i] is -1
 * where the closer helper closed an fd that was neither a dma-buf nor a
 * socket; @kind[i] says what it was. Every fd received is handed to the
 * closer once the request is done (a binding keeps a dup of its dma-buf);
 * a message with more or other fds than its type takes is refused.
 */
static void client_handle(struct client *c, const char *buf, ssize_t n, int flags, int *fds,
			  const uint8_t *kind, unsigned int nfds)
{
	bool used = false;
	struct rdpm_msg m;
	const char *why;
	int err;

	if (n <= 0) {
		/* The end of the connection, or a 0-byte message: a client of
		 * this protocol never sends one. */
		if (n == 0 && nfds) {
			static struct rdpm_bucket rl;

			rdpmd.counters.closed_empty++;
			rdpm_log_limited(&rl, LOG_NOTICE, "client pid %d uid %u: an empty message with "
				    "file descriptors (closed): disconnecting", c->pid, c->uid);
		}
		c->dead = true;
	} else if (flags & MSG_TRUNC) {
		rdpm_parse(buf, n, 0, &m, &why);
		reply_err(c, &m.hdr, -EMSGSIZE, "oversized: longer than %d bytes%s", RDPM_MAX_MSG,
			  nfds ? " (the file descriptors attached were closed)" : "");
	} else if (flags & MSG_CTRUNC) {
		/* Out of fds, the kernel could install only some (or none). */
		rdpm_parse(buf, n, 0, &m, &why);
		reply_err(c, &m.hdr, -EMFILE, "rdpmd could not take the file descriptors (out "
			  "of file descriptors); try again later");
	} else if ((err = rdpm_parse(buf, n, nfds, &m, &why))) {
		char note[64] = "";

		if (nfds)
			snprintf(note, sizeof(note), " (%u file descriptor(s) attached, all closed)",
				 nfds);
		reply_err(c, &m.hdr, err, "malformed request: %s%s", why, note);
	} else if (!c->hello && m.hdr.type != RDPM_HELLO) {
		reply_err(c, &m.hdr, -EPROTO, "out of order: HELLO must come first%s",
			  nfds ? " (the file descriptor attached was closed)" : "");
	} else if (nfds && fds[0] < 0) {
		/* What rdpmd never takes into its own fd table (closer.c). */
		if (m.hdr.type == RDPM_REGISTER)
			reply_err(c, &m.hdr, -EBADF, "the fd attached is not a dma-buf (it is %s)",
				  rdpm_fd_class_name(kind[0]));
		else
			reply_err(c, &m.hdr, -ENOTSOCK, "the file descriptor attached is not a TCP "
				  "socket (it is %s)", rdpm_fd_class_name(kind[0]));
	} else {
		switch (m.hdr.type) {
		case RDPM_HELLO: do_hello(c, &m); break;
		case RDPM_REGISTER: do_register(c, &m, fds[0]); used = true; break;
		case RDPM_STEER: do_steer(c, &m, nfds ? fds[0] : -1); used = nfds > 0; break;
		case RDPM_UNSTEER: do_unsteer(c, &m); break;
		case RDPM_UNREGISTER: do_unregister(c, &m); break;
		case RDPM_STATUS: do_status(c, &m); break;
		case RDPM_DRAIN: do_drain(c, &m); break;
		case RDPM_RELOAD: do_reload(c, &m); break;
		case RDPM_WINDOW: do_window(c, &m, fds[0]); used = true; break;
		case RDPM_JOIN: do_join(c, &m); break;
		}
	}
	if (nfds && !used)
		rdpmd.counters.fds_refused++;
	for (unsigned int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			drop_fds(&fds[i], 1, c->uid);
}

/* Reads @c in-process, with room for every fd a message can carry (the
 * fuzzer and the unit tests: RDPM_CLOSER_DIRECT). */
static void client_read_direct(struct client *c)
{
	char buf[RDPM_MAX_MSG];
	struct iovec iov = { buf, sizeof(buf) };
	int fds[RDPM_MSG_MAX_FDS], flags;
	uint8_t kind[RDPM_MSG_MAX_FDS] = { 0 };
	unsigned int nfds;
	ssize_t n = rdpm_recv_fds(c->fd, &iov, 1, fds, RDPM_MSG_MAX_FDS, &nfds, &flags,
				     MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	client_handle(c, buf, n, flags, fds, kind, nfds);
}

/*
 * The next message of @c. rdpmd takes no file of a client into its own fd
 * table but dma-bufs and sockets: even receiving one makes rdpmd's close
 * of it run the file's flush, which for a FUSE file waits for the FUSE
 * server, uninterruptibly. So it peeks without room for fds: a message
 * that carries some (MSG_CTRUNC) the closer helper reads
 * (rdpmd_client_read_done); the others it reads itself.
 */
static void client_read(struct client *c)
{
	char buf[RDPM_MAX_MSG];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (c->reading)
		return;
	if (!rdpm_closer_may_read(c->uid, is_admin(c)))
		return client_unread(c, false);
	if (rdpm_closer_direct())
		return client_read_direct(c);
	n = recvmsg(c->fd, &mh, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n >= 0 && (mh.msg_flags & MSG_CTRUNC)) {
		if (!is_admin(c) && rdpm_closer_struck(c->uid))
			return client_struck(c);
		if (!rdpm_closer_read(c->fd, c->serial, c->uid))
			return client_unread(c, true);
		/* Not watched until the answer: a hang-up is level-triggered. */
		epoll_ctl(rdpmd.epfd, EPOLL_CTL_DEL, c->fd, NULL);
		c->reading = true;
		return;
	}
	if (n >= 0) {
		mh.msg_flags = 0;
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
	}
	client_handle(c, buf, n, n < 0 ? 0 : mh.msg_flags, NULL, NULL, 0);
}

static struct client *client_by_serial(uint64_t serial)
{
	for (struct client *c = clients; c; c = c->next)
		if (c->serial == serial)
			return c;
	return NULL;
}

void rdpmd_client_read_done(uint64_t token, uid_t uid, int n, int flags, const char *data,
			    const int *fds, const uint8_t *kind, unsigned int nfds)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct client *c = client_by_serial(token);
	int mine[RDPM_MSG_MAX_FDS];

	memcpy(mine, fds, nfds * sizeof(int));
	if (!c) {
		for (unsigned int i = 0; i < nfds; i++)
			if (mine[i] >= 0)
				drop_fds(&mine[i], 1, uid);
		return;
	}
	c->reading = false;
	if (c->dead) {
		for (unsigned int i = 0; i < nfds; i++)
			if (mine[i] >= 0)
				drop_fds(&mine[i], 1, c->uid);
		return;
	}
	ev.data.ptr = c;
	if (epoll_ctl(rdpmd.epfd, EPOLL_CTL_ADD, c->fd, &ev))
		c->dead = true;
	client_handle(c, data, n < 0 ? -1 : n, flags, mine, kind, nfds);
}

void rdpmd_client_read_again(uint64_t token)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct client *c = client_by_serial(token);

	if (!c)
		return;
	c->reading = false;
	ev.data.ptr = c;
	if (!c->dead && epoll_ctl(rdpmd.epfd, EPOLL_CTL_ADD, c->fd, &ev))
		c->dead = true;
}

static void listener_arm(bool on)
{
	struct epoll_event ev = { .events = on ? EPOLLIN : 0, .data.ptr = &rdpmd.lfd };

	epoll_ctl(rdpmd.epfd, EPOLL_CTL_MOD, rdpmd.lfd, &ev);
	listen_paused = !on;
}

int rdpmd_clients_init(void)
{
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return spare_fd < 0 ? -errno : 0;
}

/*
 * accept() failed for want of fds (EMFILE, ENFILE). The pending connection
 * must not stay queued, or the level-triggered listener would wake the
 * loop again at once, for ever: the spare fd is closed to accept it, it is
 * closed (the client sees the connection end at once rather than hang),
 * and the spare is taken back. Without a spare the listener is paused
 * until a client leaves or LISTEN_PAUSE_MS pass.
 */
static void accept_no_fds(int err)
{
	static struct rdpm_bucket rl;
	struct rlimit lim = { 0 };
	int fd = -1;

	getrlimit(RLIMIT_NOFILE, &lim);
	if (spare_fd >= 0) {
		close(spare_fd);
		fd = accept4(rdpmd.lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			struct ucred cr;
			socklen_t len = sizeof(cr);

			/* whose files it may hold: SO_PEERCRED takes no fd */
			refuse_fd(fd, getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ?
				  UNKNOWN_UID : cr.uid);
		}
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0) {
		rdpmd.counters.refused_no_fds++;
		rdpm_log_limited(&rl, LOG_WARNING, "refusing a connection: out of file descriptors (%s, "
			    "RLIMIT_NOFILE %llu, %u clients): closed at once", strerror(err),
			    (unsigned long long)lim.rlim_cur, nclients);
	}
	if (spare_fd < 0) {
		rdpmd.counters.listener_paused++;
		listener_arm(false);
		listen_resume_at = rdpm_now_ms() + LISTEN_PAUSE_MS;
		rdpm_log_limited(&rl, LOG_WARNING, "out of file descriptors (%s, RLIMIT_NOFILE %llu, "
			    "%u clients): not accepting connections until one closes",
			    strerror(err), (unsigned long long)lim.rlim_cur, nclients);
	}
}

/*
 * Whether new connection @c may be served. A uid that may use no NIC is
 * told so (EACCES) and closed at once. max_clients in all, at most
 * max_clients_per_user of one uid, and at most max_preauth_per_user of one
 * uid without HELLO yet. When max_preauth connections of all uids together
 * have not said HELLO, the oldest of them is closed rather than @c refused:
 * silent connections cannot lock others out. Admins pass all of it within
 * RDPM_ADMIN_SLOTS more, so that rdpmctl works when users took every slot.
 */
static bool admit(struct client *c)
{
	static struct rdpm_bucket rl_all, rl_pre, rl_user, rl_evict;
	unsigned int extra = is_admin(c) ? RDPM_ADMIN_SLOTS : 0, mine = 0, pre = 0, mine_pre = 0;
	struct client *oldest = NULL;

	if (!may_use_any(c)) {
		refuse_no_access(c, 0);
		return false;
	}
	if (nclients >= rdpmd.conf.max_clients + extra) {
		rdpmd.counters.refused_max_clients++;
		rdpm_log_limited(&rl_all, LOG_WARNING, "refusing a connection of pid %d uid %u: "
			    "max_clients (%u%s) reached", c->pid, c->uid, rdpmd.conf.max_clients,
			    extra ? " and the admins' slots" : "");
		return false;
	}
	for (struct client *o = clients; o; o = o->next) {
		mine += o->uid == c->uid;
		if (o->hello || o->dead)
			continue;
		pre++;
		mine_pre += o->uid == c->uid;
		/* an admin's connection (rdpmctl) is never the one evicted */
		if (!is_admin(o) && (!oldest || o->since <= oldest->since))
			oldest = o;
	}
	if (!extra && mine >= rdpmd.conf.max_clients_per_user) {
		rdpmd.counters.refused_per_user++;
		rdpm_log_limited(&rl_user, LOG_WARNING, "refusing a connection of pid %d uid %u: the "
			    "uid has max_clients_per_user (%u) connections", c->pid, c->uid,
			    rdpmd.conf.max_clients_per_user);
		return false;
	}
	if (!extra && mine_pre >= rdpmd.conf.max_preauth_per_user) {
		rdpmd.counters.refused_preauth++;
		rdpm_log_limited(&rl_pre, LOG_WARNING, "refusing a connection of pid %d uid %u: the "
			    "uid has max_preauth_per_user (%u) connections without HELLO", c->pid,
			    c->uid, rdpmd.conf.max_preauth_per_user);
		return false;
	}
	if (pre >= rdpmd.conf.max_preauth + extra && oldest) {
		rdpmd.counters.preauth_evicted++;
		rdpm_log_limited(&rl_evict, LOG_WARNING, "client pid %d uid %u: closed without HELLO "
			    "after %llu ms: max_preauth (%u) connections have not said HELLO",
			    oldest->pid, oldest->uid,
			    (unsigned long long)(rdpm_now_ms() - oldest->since),
			    rdpmd.conf.max_preauth);
		oldest->dead = true;
	}
	return true;
}

bool rdpmd_client_add(int fd, const struct ucred *cr)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct client *c = calloc(1, sizeof(*c));
	socklen_t len = sizeof(c->groups);
	int force = 1 << 20;

	if (!c) {
		refuse_fd(fd, cr->uid);
		return false;
	}
	c->fd = fd;
	c->serial = next_serial++;
	c->since = rdpm_now_ms();
	c->pid = cr->pid;
	c->uid = cr->uid;
	c->gid = cr->gid;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len))
		c->ngroups = len / sizeof(gid_t);
	ev.data.ptr = c;
	if (!admit(c) || epoll_ctl(rdpmd.epfd, EPOLL_CTL_ADD, fd, &ev)) {
		/* Whatever it sent before accept goes with it, in the closer. */
		refuse_fd(fd, cr->uid);
		free(c);
		return false;
	}
	/* Room for a full STATUS reply. */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &force, sizeof(force));
	c->next = clients;
	clients = c;
	nclients++;
	rdpm_log(LOG_INFO, "client pid %d uid %u gid %u connected", c->pid, c->uid, c->gid);
	return true;
}

static void accept_one(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
		static struct rdpm_bucket rl;

		rdpmd.counters.refused_no_creds++;
		rdpm_log_limited(&rl, LOG_WARNING, "refusing a connection: no peer credentials (%m)");
		refuse_fd(fd, UNKNOWN_UID);
		return;
	}
	rdpmd_client_add(fd, &cr);
}

void rdpmd_client_accept(void)
{
	for (int i = 0; i < ACCEPT_BATCH && !listen_paused; i++) {
		int fd;

		/* Every connection ends in the closer queue: none without room. */
		if (rdpm_closer_room() < 2) {
			rdpmd.counters.closer_full++;
			listener_arm(false);
			listen_resume_at = rdpm_now_ms() + CLOSER_RETRY_MS;
			return;
		}
		fd = accept4(rdpmd.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			accept_one(fd);
		} else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			   errno == ENOMEM) {
			accept_no_fds(errno);
		} else if (errno != ECONNABORTED && errno != EINTR) {
			return;		/* EAGAIN: none left */
		}
	}
}

int rdpmd_clients_timeout(void)
{
	uint64_t now = rdpm_now_ms(), next = UINT64_MAX;

	for (struct client *c = clients; c; c = c->next)
		if (!c->hello && !c->dead && c->since + rdpmd.conf.hello_timeout_ms < next)
			next = c->since + rdpmd.conf.hello_timeout_ms;
	if (listen_paused && listen_resume_at < next)
		next = listen_resume_at;
	for (struct client *c = clients; c; c = c->next)
		if (c->unread && now + CLOSER_RETRY_MS < next)
			next = now + CLOSER_RETRY_MS;
	if (close_pending && now + CLOSER_RETRY_MS < next)
		next = now + CLOSER_RETRY_MS;
	for (struct flow *f = flows; f; f = f->next)
		if (f->proven && next_flow_check < next)
			next = next_flow_check;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : next - now > 60000 ? 60000 : (int)(next - now);
}

/*
 * Removes the rules whose socket is closed or no longer holds the flow:
 * rdpmd keeps no copy of a socket (that would keep its port open), so it
 * asks the kernel about each one by its tuple and cookie, every
 * FLOW_CHECK_MS: at most FLOW_CHECKS_PER_TICK requests, one per socket
 * however many rules it proves; the rules it did not reach come first next
 * time (the list turns). max_proven_flows bounds the rules, so each is
 * looked at within max_proven_flows / FLOW_CHECKS_PER_TICK ticks. The
 * client learns it from the next request on the flow (ENOENT).
 */
static void flows_check(uint64_t now)
{
	static struct rdpm_bucket rl, gone;
	static struct {
		struct rdpm_sock sk;
		int err;
		char why[160];
	} asked[FLOW_CHECKS_PER_TICK];
	unsigned int nasked = 0;
	struct flow *stop = NULL;

	if (now < next_flow_check)
		return;
	next_flow_check = now + FLOW_CHECK_MS;
	for (struct flow *f = flows, *next; f; f = next) {
		unsigned int i;
		int err;

		next = f->next;
		if (!f->proven)
			continue;
		for (i = 0; i < nasked && memcmp(&asked[i].sk, &f->sk, sizeof(f->sk)); i++)
			;
		if (i == nasked) {
			if (nasked == FLOW_CHECKS_PER_TICK) {
				stop = f;
				break;
			}
			memcpy(&asked[i].sk, &f->sk, sizeof(f->sk));
			asked[i].err = rdpm_sock_alive(&f->sk, asked[i].why, sizeof(asked[i].why));
			nasked++;
		}
		err = asked[i].err;
		if (err == -ENOENT || err == -ESTALE) {
			rdpm_log_limited(&gone, LOG_INFO, "client pid %d uid %u: flow %u removed "
					 "from %s: %s", f->c->pid, f->c->uid, f->id,
					 f->b->n->conf.name, asked[i].why);
			flow_remove(f);
		} else if (err) {
			/* Kept: proven at the last look; asked again next time. */
			rdpm_log_limited(&rl, LOG_WARNING, "flow %u: %s", f->id, asked[i].why);
		}
	}
	/* The list from @stop on goes first next time. */
	if (stop && stop != flows) {
		struct flow *prev = flows, *tail;

		while (prev->next != stop)
			prev = prev->next;
		for (tail = stop; tail->next; tail = tail->next)
			;
		tail->next = flows;
		flows = stop;
		prev->next = NULL;
	}
}

void rdpmd_flows_recheck(void)
{
	next_flow_check = 0;
}

void rdpmd_clients_tick(void)
{
	uint64_t now = rdpm_now_ms();

	flows_check(now);
	for (struct client *c = clients; c; c = c->next) {
		if (c->hello || c->dead || now < c->since + rdpmd.conf.hello_timeout_ms)
			continue;
		static struct rdpm_bucket rl;

		rdpmd.counters.hello_timeouts++;
		rdpm_log_limited(&rl, LOG_NOTICE, "client pid %d uid %u: no HELLO within %u ms: "
			    "disconnecting", c->pid, c->uid, rdpmd.conf.hello_timeout_ms);
		c->dead = true;
	}
	if (listen_paused && now >= listen_resume_at) {
		if (spare_fd < 0)
			spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		listener_arm(true);
	}
	/* The closer caught up: read the clients left unread again. */
	for (struct client *c = clients; c; c = c->next) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };

		if (!c->unread || c->dead || !rdpm_closer_may_read(c->uid, is_admin(c)) ||
		    !rdpm_closer_can_read() ||
		    (!is_admin(c) && rdpm_closer_struck(c->uid)))
			continue;
		c->unread = false;
		epoll_ctl(rdpmd.epfd, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

void rdpmd_client_event(void *client, uint32_t events)
{
	struct client *c = client;

	if (events & EPOLLIN)
		client_read(c);
	else
		c->dead = true;
}

void rdpmd_clients_reap(void)
{
	close_pending = false;
	for (struct client *c = clients, *next; c; c = next) {
		next = c->next;
		if (c->dead)
			client_close(c, false);
	}
}

void rdpmd_clients_close_all(void)
{
	while (clients)
		client_close(clients, true);
	if (spare_fd >= 0)
		close(spare_fd);
	spare_fd = -1;
}
