// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One interface prepared for devmem: header split, channels, the ntuple
 * feature and RSS through ethtool netlink, flow rules through SIOCETHTOOL
 * (they have no netlink yet), queues and their counters through netdev
 * netlink. Every change records its undo; devmem_nic_restore() replays
 * them newest first so that dependent state goes away before what it
 * depends on (rules before contexts, contexts before channels).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "devtcp/nl_numbers.h"

struct devmem_nic {
	char name[IF_NAMESIZE];
	int ifindex;
	struct devmem_nl *nl;
	uint16_t ethtool, netdev;	/* generic netlink family ids */
	int ioctl_fd;			/* any socket, for SIOCETHTOOL */
	bool rss_ioctl;			/* no RSS_SET/RSS_CREATE_ACT netlink */
	struct devmem_undo_log undo;
};

/* ---------------------------------------------------------------- undo log */

static void undo_drop(struct devmem_undo *u)
{
	if (u->kind == DEVMEM_UNDO_RSS || u->kind == DEVMEM_UNDO_CTX_ADD)
		free(u->rss.indir);
}

int devmem_undo_push(struct devmem_undo_log *log, const struct devmem_undo *u)
{
	int err;

	if (log->n == log->cap) {
		size_t cap = log->cap ? log->cap * 2 : 8;
		struct devmem_undo *v = realloc(log->v, cap * sizeof(*v));

		if (!v) {
			if (u->kind == DEVMEM_UNDO_RSS || u->kind == DEVMEM_UNDO_CTX_ADD)
				free(u->rss.indir);
			return devmem_fail(-ENOMEM, "no memory for the undo log");
		}
		log->v = v;
		log->cap = cap;
	}
	log->v[log->n++] = *u;
	err = devmem_journal_sync(log);
	if (err)
		undo_drop(&log->v[--log->n]);
	return err;
}

void devmem_undo_pop(struct devmem_undo_log *log)
{
	undo_drop(&log->v[--log->n]);
	/* Best effort: an entry too many only restores a value twice. */
	devmem_journal_sync(log);
}

bool devmem_undo_forget(struct devmem_undo_log *log, enum devmem_undo_kind kind, uint32_t id)
{
	size_t i;

	for (i = log->n; i-- > 0;) {
		struct devmem_undo *u = &log->v[i];

		if (u->kind != kind)
			continue;
		if ((kind == DEVMEM_UNDO_CTX_DEL && u->ctx == id) ||
		    (kind == DEVMEM_UNDO_RULE_DEL && u->rule == id) ||
		    (kind == DEVMEM_UNDO_RULE_ADD && u->add.fs.location == id)) {
			undo_drop(u);
			memmove(u, u + 1, (log->n - i - 1) * sizeof(*u));
			log->n--;
			devmem_journal_sync(log);
			return true;
		}
	}
	return false;
}

int devmem_undo_run(struct devmem_undo_log *log,
		    int (*apply)(void *ctx, const struct devmem_undo *u), void *ctx)
{
	char first_msg[512] = "";
	int first = 0, err;
	size_t i, kept;

	for (i = log->n; i-- > 0;) {
		err = apply(ctx, &log->v[i]);
		log->v[i].failed = err != 0;
		if (err && !first) {
			first = err;
			snprintf(first_msg, sizeof(first_msg), "%s", devmem_last_error());
		}
	}
	/* What failed stays, in order, for a later restore to retry (after
	 * an unbind, say). */
	for (i = 0, kept = 0; i < log->n; i++) {
		if (log->v[i].failed)
			log->v[kept++] = log->v[i];
		else
			undo_drop(&log->v[i]);
	}
	log->n = kept;
	devmem_journal_sync(log);
	/* Report the first failure, not whatever later steps recorded. */
	if (first)
		devmem_fail(first, "%s", first_msg);
	return first;
}

void devmem_undo_free(struct devmem_undo_log *log)
{
	while (log->n)
		undo_drop(&log->v[--log->n]);
	free(log->v);
	log->v = NULL;
	log->cap = 0;
	/* The state file stays as it is: it lists what is still changed. */
	free(log->journal);
	log->journal = NULL;
}

/* -------------------------------------------------------------- flow specs */

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

int devmem_flow_spec(const char *ifname, const struct devmem_flow *flow,
		     const struct devmem_flow_target *target, struct ethtool_rx_flow_spec *fs,
		     uint32_t *rss_ctx)
{
	if (!flow || !target || !fs || !rss_ctx)
		return devmem_fail(-EINVAL, "%s: flow rule: flow, target and output must not be NULL",
				   ifname);
	memset(fs, 0, sizeof(*fs));
	if (flow->family == AF_INET) {
		struct ethtool_tcpip4_spec *v = &fs->h_u.tcp_ip4_spec, *m = &fs->m_u.tcp_ip4_spec;

		if (!all_zero(flow->src + 4, 12) || !all_zero(flow->dst + 4, 12))
			return devmem_fail(-EINVAL, "%s: flow rule: an AF_INET flow has its address in "
					   "the first 4 bytes of src/dst; the rest must be zero", ifname);
		fs->flow_type = TCP_V4_FLOW;
		memcpy(&v->ip4src, flow->src, 4);
		memcpy(&v->ip4dst, flow->dst, 4);
		m->ip4src = v->ip4src ? 0xffffffff : 0;
		m->ip4dst = v->ip4dst ? 0xffffffff : 0;
		v->psrc = htons(flow->sport);
		v->pdst = htons(flow->dport);
		m->psrc = flow->sport ? 0xffff : 0;
		m->pdst = flow->dport ? 0xffff : 0;
	} else if (flow->family == AF_INET6) {
		struct ethtool_tcpip6_spec *v = &fs->h_u.tcp_ip6_spec, *m = &fs->m_u.tcp_ip6_spec;

		fs->flow_type = TCP_V6_FLOW;
		memcpy(v->ip6src, flow->src, 16);
		memcpy(v->ip6dst, flow->dst, 16);
		if (!all_zero(flow->src, 16))
			memset(m->ip6src, 0xff, 16);
		if (!all_zero(flow->dst, 16))
			memset(m->ip6dst, 0xff, 16);
		v->psrc = htons(flow->sport);
		v->pdst = htons(flow->dport);
		m->psrc = flow->sport ? 0xffff : 0;
		m->pdst = flow->dport ? 0xffff : 0;
	} else {
		return devmem_fail(-EAFNOSUPPORT, "%s: flow rule: family %d is neither AF_INET nor "
				   "AF_INET6 (rules match TCP over IPv4 or IPv6)", ifname, flow->family);
	}
	/* A queue number never reaches RX_CLS_FLOW_DISC or the VF bits:
	 * ring_cookie is 64 bits, the queue 32. */
	fs->ring_cookie = target->queue;
	*rss_ctx = target->rss_ctx;
	if (target->rss_ctx)
		fs->flow_type |= FLOW_RSS;
	return 0;
}

/* ------------------------------------------------------- netlink plumbing */

static void put_header(struct nlmsghdr *nlh, uint16_t type, const struct devmem_nic *nic,
		       uint32_t flags)
{
	struct nlattr *nest = mnl_attr_nest_start(nlh, type);

	mnl_attr_put_u32(nlh, DM_ETHTOOL_A_HEADER_DEV_INDEX, nic->ifindex);
	if (flags)
		mnl_attr_put_u32(nlh, DM_ETHTOOL_A_HEADER_FLAGS, flags);
	mnl_attr_nest_end(nlh, nest);
}

static struct nlmsghdr *ethtool_msg(struct devmem_nic *nic, uint8_t cmd, uint16_t hdr_type,
				    bool set)
{
	struct nlmsghdr *nlh = devmem_nl_msg(nic->nl, nic->ethtool, cmd,
					     DM_ETHTOOL_FAMILY_VERSION, 0);

	/* SET requests would answer with a reply we do not read. */
	put_header(nlh, hdr_type, nic, set ? DM_ETHTOOL_FLAG_OMIT_REPLY : 0);
	return nlh;
}

struct channels {
	uint32_t combined, combined_max, rx, rx_max;
};

static int channels_cb(const struct nlmsghdr *nlh, void *data)
{
	struct channels *c = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_ETHTOOL_A_CHANNELS_COMBINED_COUNT: c->combined = mnl_attr_get_u32(a); break;
		case DM_ETHTOOL_A_CHANNELS_COMBINED_MAX: c->combined_max = mnl_attr_get_u32(a); break;
		case DM_ETHTOOL_A_CHANNELS_RX_COUNT: c->rx = mnl_attr_get_u32(a); break;
		case DM_ETHTOOL_A_CHANNELS_RX_MAX: c->rx_max = mnl_attr_get_u32(a); break;
		}
	}
	return 0;
}

static int channels_get(struct devmem_nic *nic, struct channels *c)
{
	char what[64];

	memset(c, 0, sizeof(*c));
	snprintf(what, sizeof(what), "%s: channels-get", nic->name);
	return devmem_nl_request(nic->nl, ethtool_msg(nic, DM_ETHTOOL_MSG_CHANNELS_GET,
						     DM_ETHTOOL_A_CHANNELS_HEADER, false),
				 channels_cb, c, what);
}

static int rx_queues_listed(struct devmem_nic *nic, unsigned int *count)
{
	struct devmem_queue_info q[256];
	int n = devmem_nic_queues(nic, q, 256), i;

	if (n < 0)
		return n;
	for (i = 0, *count = 0; i < n && i < 256; i++)
		*count += q[i].rx;
	return 0;
}

int devmem_nic_rx_queues(struct devmem_nic *nic, unsigned int *count)
{
	struct channels c;
	int err = channels_get(nic, &c);

	/* Drivers without channels still list their queues. */
	if (err == -EOPNOTSUPP)
		return rx_queues_listed(nic, count);
	if (!err)
		*count = c.combined + c.rx;
	return err;
}

struct rings {
	bool has_split, has_thresh;
	uint8_t split;
	uint32_t thresh, thresh_max;
};

static int rings_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rings *r = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_ETHTOOL_A_RINGS_TCP_DATA_SPLIT:
			r->split = mnl_attr_get_u8(a);
			r->has_split = true;
			break;
		case DM_ETHTOOL_A_RINGS_HDS_THRESH:
			r->thresh = mnl_attr_get_u32(a);
			r->has_thresh = true;
			break;
		case DM_ETHTOOL_A_RINGS_HDS_THRESH_MAX:
			r->thresh_max = mnl_attr_get_u32(a);
			break;
		}
	}
	return 0;
}

static int rings_get(struct devmem_nic *nic, struct rings *r)
{
	char what[64];

	memset(r, 0, sizeof(*r));
	snprintf(what, sizeof(what), "%s: rings-get", nic->name);
	return devmem_nl_request(nic->nl, ethtool_msg(nic, DM_ETHTOOL_MSG_RINGS_GET,
						     DM_ETHTOOL_A_RINGS_HEADER, false),
				 rings_cb, r, what);
}

struct feature {
	const char *name;
	bool hw, active;
};

/* Whether bitset @set lists bit @name as set (verbose bitsets). */
static bool bitset_has(const struct nlattr *set, const char *name)
{
	const struct nlattr *a, *bit, *f;
	bool nomask = false;

	mnl_attr_for_each_nested(a, set)
		if (mnl_attr_get_type(a) == DM_ETHTOOL_A_BITSET_NOMASK)
			nomask = true;
	mnl_attr_for_each_nested(a, set) {
		if (mnl_attr_get_type(a) != DM_ETHTOOL_A_BITSET_BITS)
			continue;
		mnl_attr_for_each_nested(bit, a) {
			bool match = false, value = nomask;

			mnl_attr_for_each_nested(f, bit) {
				if (mnl_attr_get_type(f) == DM_ETHTOOL_A_BITSET_BIT_NAME)
					match = !strcmp(mnl_attr_get_str(f), name);
				else if (mnl_attr_get_type(f) == DM_ETHTOOL_A_BITSET_BIT_VALUE)
					value = true;
			}
			if (match)
				return value;
		}
	}
	return false;
}

static int features_cb(const struct nlmsghdr *nlh, void *data)
{
	struct feature *ft = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(a) == DM_ETHTOOL_A_FEATURES_HW)
			ft->hw = bitset_has(a, ft->name);
		else if (mnl_attr_get_type(a) == DM_ETHTOOL_A_FEATURES_ACTIVE)
			ft->active = bitset_has(a, ft->name);
	}
	return 0;
}

/* The kernel's name; ethtool -k shows it as ntuple-filters. */
#define NTUPLE_FEATURE "rx-ntuple-filter"

static int ntuple_get(struct devmem_nic *nic, struct feature *ft)
{
	char what[64];

	memset(ft, 0, sizeof(*ft));
	ft->name = NTUPLE_FEATURE;
	snprintf(what, sizeof(what), "%s: features-get", nic->name);
	return devmem_nl_request(nic->nl, ethtool_msg(nic, DM_ETHTOOL_MSG_FEATURES_GET,
						     DM_ETHTOOL_A_FEATURES_HEADER, false),
				 features_cb, ft, what);
}

struct rss {
	uint32_t *indir;
	uint32_t size;
	bool nomem;
};

static int rss_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rss *r = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(a) != DM_ETHTOOL_A_RSS_INDIR)
			continue;
		free(r->indir);
		r->size = mnl_attr_get_payload_len(a) / sizeof(uint32_t);
		r->indir = malloc(r->size * sizeof(uint32_t) + 1);
		if (!r->indir)
			return -ENOMEM;
		memcpy(r->indir, mnl_attr_get_payload(a), r->size * sizeof(uint32_t));
	}
	return 0;
}

static int rss_get_ioctl(struct devmem_nic *nic, uint32_t ctx, struct rss *r);

/* The main table (ctx 0) or a context's; the caller frees r->indir. */
static int rss_get(struct devmem_nic *nic, uint32_t ctx, struct rss *r)
{
	struct nlmsghdr *nlh;
	char what[80];
	int err;

	memset(r, 0, sizeof(*r));
	if (nic->rss_ioctl)
		return rss_get_ioctl(nic, ctx, r);
	snprintf(what, sizeof(what), "%s: rss-get context %u", nic->name, ctx);
	nlh = ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_GET, DM_ETHTOOL_A_RSS_HEADER, false);
	if (ctx)
		mnl_attr_put_u32(nlh, DM_ETHTOOL_A_RSS_CONTEXT, ctx);
	err = devmem_nl_request(nic->nl, nlh, rss_cb, r, what);
	if (err == -ENOMEM)
		devmem_fail(err, "%s: no memory for the RSS table", nic->name);
	if (err == -EOPNOTSUPP && !ctx)
		devmem_fail(err, "%s: the driver has no RSS (ethtool -x %s fails too)", nic->name,
			    nic->name);
	if (err) {
		free(r->indir);
		r->indir = NULL;
	}
	return err;
}

/* ------------------------------------------------------------------ ioctls */

static int ethtool_ioctl(struct devmem_nic *nic, void *cmd)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, nic->name, sizeof(ifr.ifr_name));
	ifr.ifr_data = cmd;
	return ioctl(nic->ioctl_fd, SIOCETHTOOL, &ifr) ? -errno : 0;
}

/* ETHTOOL_GRSSH: the sizes first, then the table. */
static int rss_get_ioctl(struct devmem_nic *nic, uint32_t ctx, struct rss *r)
{
	struct ethtool_rxfh head = { .cmd = ETHTOOL_GRSSH, .rss_context = ctx }, *full;
	int err = ethtool_ioctl(nic, &head);

	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_GRSSH context %u (ethtool -x %s)",
					 nic->name, ctx, nic->name);
	full = calloc(1, sizeof(*full) + (head.indir_size + head.key_size + 4) * 4);
	if (!full)
		return devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	*full = head;
	err = ethtool_ioctl(nic, full);
	if (!err) {
		r->size = full->indir_size;
		r->indir = malloc(r->size * sizeof(uint32_t) + 1);
		if (r->indir)
			memcpy(r->indir, full->rss_config, r->size * sizeof(uint32_t));
		else
			err = devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	} else {
		devmem_fail_errno(err, "%s: ETHTOOL_GRSSH context %u", nic->name, ctx);
	}
	free(full);
	return err;
}

/*
 * ETHTOOL_SRSSH: @size entries of @indir for context *@ctx; size 0 resets
 * the main table or deletes a context; ETH_RXFH_CONTEXT_ALLOC in *@ctx
 * creates one and returns its id there. Returns -errno, recording nothing.
 */
static int rss_set_ioctl(struct devmem_nic *nic, uint32_t *ctx, const uint32_t *indir,
			 uint32_t size)
{
	struct ethtool_rxfh *rxfh = calloc(1, sizeof(*rxfh) + size * sizeof(uint32_t));
	int err;

	if (!rxfh)
		return -ENOMEM;
	rxfh->cmd = ETHTOOL_SRSSH;
	rxfh->rss_context = *ctx;
	rxfh->indir_size = size;
	if (size)
		memcpy(rxfh->rss_config, indir, size * sizeof(uint32_t));
	/* Since 6.8 this byte is input_xfrm: RXH_XFRM_NO_CHANGE. Before, it
	 * was reserved and had to be 0. */
	rxfh->rsvd8[0] = 0xff;
	err = ethtool_ioctl(nic, rxfh);
	if (err == -EINVAL) {
		rxfh->rsvd8[0] = 0;
		err = ethtool_ioctl(nic, rxfh);
	}
	if (!err)
		*ctx = rxfh->rss_context;
	free(rxfh);
	return err;
}

void devmem_nic_rss_use_ioctl(struct devmem_nic *nic)
{
	nic->rss_ioctl = true;
}

/* ------------------------------------------------------------- open/close */

struct devmem_nic *devmem_nic_alloc(const char *ifname, int ifindex)
{
	struct devmem_nic *nic = calloc(1, sizeof(*nic));

	if (!nic)
		return NULL;
	snprintf(nic->name, sizeof(nic->name), "%s", ifname);
	nic->ifindex = ifindex;
	nic->ioctl_fd = -1;
	return nic;
}

static void nic_free(struct devmem_nic *nic)
{
	devmem_undo_free(&nic->undo);
	devmem_nl_close(nic->nl);
	if (nic->ioctl_fd >= 0)
		close(nic->ioctl_fd);
	free(nic);
}

DEVMEM_EXPORT int devmem_nic_open(struct devmem_nic **out, const char *ifname)
{
	struct devmem_nic *nic;
	unsigned int ifindex;
	uint64_t ops = 0;
	int err;

	if (!out || !ifname || !ifname[0])
		return devmem_fail(-EINVAL, "devmem_nic_open: no interface name");
	if (strlen(ifname) >= IF_NAMESIZE)
		return devmem_fail(-EINVAL, "%s: interface names have at most %d characters",
				   ifname, IF_NAMESIZE - 1);
	ifindex = if_nametoindex(ifname);
	if (!ifindex)
		return devmem_fail(-ENODEV, "%s: no such interface in this network namespace "
				   "(ip link shows those there are)", ifname);
	nic = devmem_nic_alloc(ifname, ifindex);
	if (!nic)
		return devmem_fail(-ENOMEM, "%s: no memory", ifname);
	err = devmem_nl_open(&nic->nl, ifname);
	if (!err)
		err = devmem_nl_family(nic->nl, DM_ETHTOOL_FAMILY_NAME, &nic->ethtool, &ops, ifname);
	/* RSS_SET and RSS_CREATE_ACT came after RSS_GET: older kernels set
	 * RSS through the ioctl. */
	nic->rss_ioctl = !(ops & (1ull << DM_ETHTOOL_MSG_RSS_GET)) ||
			 !(ops & (1ull << DM_ETHTOOL_MSG_RSS_SET)) ||
			 !(ops & (1ull << DM_ETHTOOL_MSG_RSS_CREATE_ACT)) ||
			 !(ops & (1ull << DM_ETHTOOL_MSG_RSS_DELETE_ACT));
	if (!err)
		err = devmem_nl_family(nic->nl, DM_NETDEV_FAMILY_NAME, &nic->netdev, NULL, ifname);
	if (!err) {
		nic->ioctl_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (nic->ioctl_fd < 0)
			err = devmem_fail_errno(-errno, "%s: socket for SIOCETHTOOL", ifname);
	}
	if (err) {
		nic_free(nic);
		return err;
	}
	*out = nic;
	return 0;
}

DEVMEM_EXPORT void devmem_nic_close(struct devmem_nic *nic, bool restore)
{
	if (!nic)
		return;
	if (restore)
		devmem_nic_restore(nic);
	nic_free(nic);
}

DEVMEM_EXPORT const char *devmem_nic_name(const struct devmem_nic *nic)
{
	return nic->name;
}

DEVMEM_EXPORT int devmem_nic_ifindex(const struct devmem_nic *nic)
{
	return nic->ifindex;
}

DEVMEM_EXPORT int devmem_nic_state(struct devmem_nic *nic, struct devmem_nic_state *out)
{
	struct channels c;
	struct feature ft;
	struct rings r;
	struct rss rss;
	int err;

	if (!nic || !out)
		return devmem_fail(-EINVAL, "devmem_nic_state: nic and out must not be NULL");
	/* What the driver lacks reads as zero / off. */
	err = channels_get(nic, &c);
	if (err == -EOPNOTSUPP) {
		memset(&c, 0, sizeof(c));
		err = rx_queues_listed(nic, &c.rx);
		c.rx_max = c.rx;
	}
	if (!err)
		err = rings_get(nic, &r);
	if (err == -EOPNOTSUPP)
		err = 0;
	if (!err)
		err = ntuple_get(nic, &ft);
	if (err == -EOPNOTSUPP)
		err = 0;
	if (!err)
		err = rss_get(nic, 0, &rss);
	if (err == -EOPNOTSUPP)
		err = 0;
	if (err)
		return err;
	free(rss.indir);
	memset(out, 0, sizeof(*out));
	out->rx_queues = c.combined + c.rx;
	out->max_queues = c.combined_max + c.rx_max;
	out->header_split = r.split == DM_ETHTOOL_TCP_DATA_SPLIT_ENABLED;
	out->hds_thresh = r.thresh;
	out->hds_thresh_max = r.thresh_max;
	out->ntuple = ft.active;
	out->rss_indir_size = rss.size;
	return 0;
}

/* ---------------------------------------------------------------- setters */

static int rings_set(struct devmem_nic *nic, uint8_t split, bool set_thresh, uint32_t thresh,
		     const char *what)
{
	struct nlmsghdr *nlh = ethtool_msg(nic, DM_ETHTOOL_MSG_RINGS_SET,
					   DM_ETHTOOL_A_RINGS_HEADER, true);

	/* UNKNOWN ("auto") was never reported by this device: leave it. */
	if (split != DM_ETHTOOL_TCP_DATA_SPLIT_UNKNOWN)
		mnl_attr_put_u8(nlh, DM_ETHTOOL_A_RINGS_TCP_DATA_SPLIT, split);
	if (set_thresh)
		mnl_attr_put_u32(nlh, DM_ETHTOOL_A_RINGS_HDS_THRESH, thresh);
	return devmem_nl_request(nic->nl, nlh, NULL, NULL, what);
}

/* hds-thresh before the first change through @nic: what "off" goes back to. */
static bool original_thresh(const struct devmem_nic *nic, uint32_t *thresh)
{
	size_t i;

	for (i = 0; i < nic->undo.n; i++) {
		if (nic->undo.v[i].kind == DEVMEM_UNDO_RINGS) {
			*thresh = nic->undo.v[i].rings.hds_thresh;
			return true;
		}
	}
	return false;
}

DEVMEM_EXPORT int devmem_nic_set_header_split(struct devmem_nic *nic, bool on)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_RINGS };
	uint32_t thresh;
	struct rings r;
	char what[160];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_set_header_split: nic is NULL");
	err = rings_get(nic, &r);
	if (err && err != -EOPNOTSUPP)
		return err;
	if (err || !r.has_split || r.split == DM_ETHTOOL_TCP_DATA_SPLIT_UNKNOWN)
		return devmem_fail(-EOPNOTSUPP, "%s: the driver has no header split (tcp-data-split "
				   "is not in ethtool -g %s): devmem RX needs a NIC that splits "
				   "headers from payload", nic->name, nic->name);
	if (on) {
		thresh = 0;
		if (r.split == DM_ETHTOOL_TCP_DATA_SPLIT_ENABLED && (!r.has_thresh || !r.thresh))
			return 0;
	} else {
		if (!original_thresh(nic, &thresh))
			thresh = r.thresh;
		if (r.split == DM_ETHTOOL_TCP_DATA_SPLIT_DISABLED && thresh == r.thresh)
			return 0;
	}
	u.rings.data_split = r.split;
	u.rings.hds_thresh = r.thresh;
	u.rings.has_thresh = r.has_thresh;
	err = devmem_undo_push(&nic->undo, &u);
	if (err)
		return err;
	snprintf(what, sizeof(what), "%s: rings-set tcp-data-split %s hds-thresh %u "
		 "(ethtool -G %s tcp-data-split %s hds-thresh %u)", nic->name, on ? "on" : "off",
		 thresh, nic->name, on ? "on" : "off", thresh);
	err = rings_set(nic, on ? DM_ETHTOOL_TCP_DATA_SPLIT_ENABLED :
			DM_ETHTOOL_TCP_DATA_SPLIT_DISABLED, r.has_thresh, thresh, what);
	if (err) {
		devmem_undo_pop(&nic->undo);
		if (!on && strstr(devmem_nl_ext(nic->nl)->msg, "memory provider"))
			devmem_fail(err, "%s: cannot turn header split off while a dma-buf or "
				    "io_uring zcrx is bound to one of its queues: unbind first (%s)",
				    nic->name, devmem_nl_ext(nic->nl)->msg);
	}
	return err;
}

static int channels_set(struct devmem_nic *nic, uint32_t count, const char *what)
{
	struct nlmsghdr *nlh = ethtool_msg(nic, DM_ETHTOOL_MSG_CHANNELS_SET,
					   DM_ETHTOOL_A_CHANNELS_HEADER, true);

	mnl_attr_put_u32(nlh, DM_ETHTOOL_A_CHANNELS_COMBINED_COUNT, count);
	return devmem_nl_request(nic->nl, nlh, NULL, NULL, what);
}

DEVMEM_EXPORT int devmem_nic_set_queues(struct devmem_nic *nic, unsigned int count)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_CHANNELS };
	struct channels c;
	char what[128];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_set_queues: nic is NULL");
	if (!count)
		return devmem_fail(-EINVAL, "%s: 0 queues: a device needs at least one", nic->name);
	err = channels_get(nic, &c);
	if (err && err != -EOPNOTSUPP)
		return err;
	if (err || !c.combined_max)
		return devmem_fail(-EOPNOTSUPP, "%s: the driver has no combined channels "
				   "(ethtool -l %s): set its RX queues another way", nic->name,
				   nic->name);
	if (count > c.combined_max)
		return devmem_fail(-EINVAL, "%s: %u queues requested, the device has at most %u "
				   "(ethtool -l %s)", nic->name, count, c.combined_max, nic->name);
	if (count == c.combined)
		return 0;
	u.channels = c.combined;
	err = devmem_undo_push(&nic->undo, &u);
	if (err)
		return err;
	snprintf(what, sizeof(what), "%s: set %u queues (ethtool -L %s combined %u)",
		 nic->name, count, nic->name, count);
	err = channels_set(nic, count, what);
	if (err)
		devmem_undo_pop(&nic->undo);
	return err;
}

static int ntuple_set(struct devmem_nic *nic, bool on, const char *what)
{
	struct nlmsghdr *nlh = ethtool_msg(nic, DM_ETHTOOL_MSG_FEATURES_SET,
					   DM_ETHTOOL_A_FEATURES_HEADER, true);
	struct nlattr *set, *bits, *bit;

	/* A value/mask bitset: only the bit named is changed. */
	set = mnl_attr_nest_start(nlh, DM_ETHTOOL_A_FEATURES_WANTED);
	bits = mnl_attr_nest_start(nlh, DM_ETHTOOL_A_BITSET_BITS);
	bit = mnl_attr_nest_start(nlh, DM_ETHTOOL_A_BITSET_BITS_BIT);
	mnl_attr_put_strz(nlh, DM_ETHTOOL_A_BITSET_BIT_NAME, NTUPLE_FEATURE);
	if (on)
		mnl_attr_put(nlh, DM_ETHTOOL_A_BITSET_BIT_VALUE, 0, NULL);
	mnl_attr_nest_end(nlh, bit);
	mnl_attr_nest_end(nlh, bits);
	mnl_attr_nest_end(nlh, set);
	return devmem_nl_request(nic->nl, nlh, NULL, NULL, what);
}

DEVMEM_EXPORT int devmem_nic_set_ntuple(struct devmem_nic *nic, bool on)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_NTUPLE };
	struct feature ft;
	char what[128];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_set_ntuple: nic is NULL");
	err = ntuple_get(nic, &ft);
	if (err)
		return err;
	if (ft.active == on)
		return 0;
	if (!ft.hw)
		return devmem_fail(-EOPNOTSUPP, "%s: the driver cannot switch ntuple-filters "
				   "(rx-ntuple-filter) %s (ethtool -k %s shows it [fixed])", nic->name, on ? "on" : "off",
				   nic->name);
	u.ntuple = ft.active;
	err = devmem_undo_push(&nic->undo, &u);
	if (err)
		return err;
	snprintf(what, sizeof(what), "%s: features-set rx-ntuple-filter %s (ethtool -K %s ntuple %s)",
		 nic->name, on ? "on" : "off", nic->name, on ? "on" : "off");
	err = ntuple_set(nic, on, what);
	/* The kernel may accept the request and still keep the feature. */
	if (!err)
		err = ntuple_get(nic, &ft);
	if (!err && ft.active != on)
		err = devmem_fail(-EIO, "%s: the kernel accepted ntuple-filters %s but kept it %s",
				  nic->name, on ? "on" : "off", ft.active ? "on" : "off");
	if (err && ntuple_get(nic, &ft) == 0 && ft.active == u.ntuple)
		devmem_undo_pop(&nic->undo);
	return err;
}

static int queue_range(struct devmem_nic *nic, unsigned int first, unsigned int count,
		       const char *what)
{
	unsigned int n;
	int err;

	if (!count)
		return devmem_fail(-EINVAL, "%s: %s over 0 queues: give at least one", nic->name, what);
	err = devmem_nic_rx_queues(nic, &n);
	if (err)
		return err;
	if (first >= n || count > n - first)
		return devmem_fail(-EINVAL, "%s: %s over queues %u..%u: queue %u does not exist "
				   "(%u RX queues; raise the count with devmem_nic_set_queues() or "
				   "ethtool -L %s combined N)", nic->name, what, first,
				   first + count - 1, first >= n ? first : n, n, nic->name);
	return 0;
}

static int rss_set(struct devmem_nic *nic, const uint32_t *indir, uint32_t size,
		   const char *what)
{
	struct nlmsghdr *nlh;
	uint32_t ctx = 0;
	int err;

	/* An empty table puts back the driver's default (and its tracking). */
	if (nic->rss_ioctl) {
		err = rss_set_ioctl(nic, &ctx, indir, size);
		return err ? devmem_fail_errno(err, "%s (ETHTOOL_SRSSH)", what) : 0;
	}
	nlh = ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_SET, DM_ETHTOOL_A_RSS_HEADER, true);
	mnl_attr_put(nlh, DM_ETHTOOL_A_RSS_INDIR, size * sizeof(uint32_t), indir);
	return devmem_nl_request(nic->nl, nlh, NULL, NULL, what);
}

static uint32_t *spread(uint32_t size, unsigned int first, unsigned int count)
{
	uint32_t *t = malloc(size * sizeof(*t) + 1);
	uint32_t i;

	if (t)
		for (i = 0; i < size; i++)
			t[i] = first + i % count;
	return t;
}

DEVMEM_EXPORT int devmem_nic_rss_spread(struct devmem_nic *nic, unsigned int first,
					unsigned int count)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_RSS };
	unsigned int n, i;
	uint32_t *t;
	struct rss r;
	char what[160];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_rss_spread: nic is NULL");
	err = queue_range(nic, first, count, "RSS spread");
	if (!err)
		err = devmem_nic_rx_queues(nic, &n);
	if (!err)
		err = rss_get(nic, 0, &r);
	if (err)
		return err;
	if (!r.size) {
		free(r.indir);
		return devmem_fail(-EOPNOTSUPP, "%s: the driver has no RSS indirection table "
				   "(ethtool -x %s)", nic->name, nic->name);
	}
	t = spread(r.size, first, count);
	if (!t) {
		free(r.indir);
		return devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	}
	/* A table equal to the default spread goes back as "default", so the
	 * driver keeps re-spreading it when the channel count changes. */
	u.rss.reset = true;
	for (i = 0; i < r.size; i++)
		u.rss.reset &= r.indir[i] == i % n;
	u.rss.indir = r.indir;
	u.rss.size = r.size;
	err = devmem_undo_push(&nic->undo, &u);
	if (err) {
		free(t);
		return err;
	}
	snprintf(what, sizeof(what), "%s: rss-set spreading over queues %u..%u "
		 "(ethtool -X %s start %u equal %u)", nic->name, first, first + count - 1,
		 nic->name, first, count);
	err = rss_set(nic, t, r.size, what);
	free(t);
	if (err)
		devmem_undo_pop(&nic->undo);
	return err;
}

static int ctx_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr))
		if (mnl_attr_get_type(a) == DM_ETHTOOL_A_RSS_CONTEXT)
			*(uint32_t *)data = mnl_attr_get_u32(a);
	return 0;
}

static int ctx_delete(struct devmem_nic *nic, uint32_t ctx, const char *what)
{
	struct nlmsghdr *nlh;
	int err;

	if (nic->rss_ioctl) {
		err = rss_set_ioctl(nic, &ctx, NULL, 0);
		return err ? devmem_fail_errno(err, "%s (ETHTOOL_SRSSH)", what) : 0;
	}
	nlh = ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_DELETE_ACT, DM_ETHTOOL_A_RSS_HEADER, false);
	mnl_attr_put_u32(nlh, DM_ETHTOOL_A_RSS_CONTEXT, ctx);
	return devmem_nl_request(nic->nl, nlh, NULL, NULL, what);
}

/*
 * A context with table @t: id @want (0: any) where netlink lets us choose;
 * the ioctl always picks. Its id in *@id.
 */
static int ctx_create(struct devmem_nic *nic, uint32_t want, const uint32_t *t, uint32_t size,
		      uint32_t *id, const char *what)
{
	struct nlmsghdr *nlh;
	int err;

	*id = 0;
	if (nic->rss_ioctl) {
		*id = ETH_RXFH_CONTEXT_ALLOC;
		err = rss_set_ioctl(nic, id, t, size);
		return err ? devmem_fail_errno(err, "%s (ETHTOOL_SRSSH)", what) : 0;
	}
	nlh = ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_CREATE_ACT, DM_ETHTOOL_A_RSS_HEADER, false);
	if (want)
		mnl_attr_put_u32(nlh, DM_ETHTOOL_A_RSS_CONTEXT, want);
	mnl_attr_put(nlh, DM_ETHTOOL_A_RSS_INDIR, size * sizeof(uint32_t), t);
	return devmem_nl_request(nic->nl, nlh, ctx_cb, id, what);
}

DEVMEM_EXPORT int devmem_nic_rss_ctx_add(struct devmem_nic *nic, unsigned int first,
					 unsigned int count, uint32_t *ctx)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_CTX_DEL };
	uint32_t id = 0, *t;
	struct rss r;
	char what[200];
	int err;

	if (!nic || !ctx)
		return devmem_fail(-EINVAL, "devmem_nic_rss_ctx_add: nic and ctx must not be NULL");
	err = queue_range(nic, first, count, "RSS context");
	if (!err)
		err = rss_get(nic, 0, &r);
	if (err)
		return err;
	free(r.indir);
	if (!r.size)
		return devmem_fail(-EOPNOTSUPP, "%s: the driver has no RSS indirection table "
				   "(ethtool -x %s)", nic->name, nic->name);
	t = spread(r.size, first, count);
	if (!t)
		return devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	snprintf(what, sizeof(what), "%s: rss-create-act over queues %u..%u "
		 "(ethtool -X %s context new start %u equal %u)", nic->name, first,
		 first + count - 1, nic->name, first, count);
	err = ctx_create(nic, 0, t, r.size, &id, what);
	free(t);
	if (err == -EOPNOTSUPP)
		return devmem_fail(err, "%s: the driver has no additional RSS contexts "
				   "(ethtool -X %s context new fails too)", nic->name, nic->name);
	if (err)
		return err;
	if (!id)
		return devmem_fail(-EPROTO, "%s: rss-create-act replied without a context id",
				   nic->name);
	u.ctx = id;
	err = devmem_undo_push(&nic->undo, &u);
	if (err) {
		snprintf(what, sizeof(what), "%s: delete context %u", nic->name, id);
		ctx_delete(nic, id, what);
		return devmem_fail(err, "%s: RSS context %u removed again: %s", nic->name, id,
				   devmem_last_error());
	}
	*ctx = id;
	return 0;
}

DEVMEM_EXPORT int devmem_nic_rss_ctx_del(struct devmem_nic *nic, uint32_t ctx)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_CTX_ADD };
	struct rss r = { 0 };
	char what[128];
	bool ours;
	size_t i;
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_rss_ctx_del: nic is NULL");
	if (!ctx)
		return devmem_fail(-EINVAL, "%s: RSS context 0 is the main table and cannot be "
				   "deleted (devmem_nic_rss_spread() changes it)", nic->name);
	for (i = 0, ours = false; i < nic->undo.n; i++)
		ours |= nic->undo.v[i].kind == DEVMEM_UNDO_CTX_DEL && nic->undo.v[i].ctx == ctx;
	/* A context we did not create comes back on restore: keep its table. */
	err = ours ? 0 : rss_get(nic, ctx, &r);
	if (err == -ENOENT || err == -EINVAL)
		return devmem_fail(-ENOENT, "%s: RSS context %u does not exist (ethtool -x %s "
				   "context %u)", nic->name, ctx, nic->name, ctx);
	if (err)
		return err;
	snprintf(what, sizeof(what), "%s: rss-delete-act context %u (ethtool -X %s context %u "
		 "delete)", nic->name, ctx, nic->name, ctx);
	err = ctx_delete(nic, ctx, what);
	if (err)
		free(r.indir);
	if (err == -ENOENT || (err == -EINVAL && !devmem_nl_ext(nic->nl)->msg[0]))
		return devmem_fail(err, "%s: RSS context %u does not exist (ethtool -x %s context "
				   "%u)", nic->name, ctx, nic->name, ctx);
	if (err == -EBUSY)
		return devmem_fail(err, "%s: RSS context %u is used by a flow rule: delete the "
				   "rule first (devmem_nic_flow_del, ethtool -n %s)", nic->name, ctx,
				   nic->name);
	if (err)
		return err;
	if (ours) {
		devmem_undo_forget(&nic->undo, DEVMEM_UNDO_CTX_DEL, ctx);
		return 0;
	}
	u.rss.indir = r.indir;
	u.rss.size = r.size;
	u.rss.ctx = ctx;
	err = devmem_undo_push(&nic->undo, &u);
	if (err)
		return devmem_fail(err, "%s: context %u deleted, but it cannot be restored later: %s",
				   nic->name, ctx, devmem_last_error());
	return 0;
}

/* ------------------------------------------------------------- flow rules */

static int rule_insert(struct devmem_nic *nic, struct ethtool_rx_flow_spec *fs,
		       uint32_t rss_ctx)
{
	struct ethtool_rxnfc cmd;
	int err;

	memset(&cmd, 0, sizeof(cmd));
	cmd.cmd = ETHTOOL_SRXCLSRLINS;
	cmd.flow_type = fs->flow_type;
	cmd.fs = *fs;
	cmd.rss_context = rss_ctx;
	err = ethtool_ioctl(nic, &cmd);
	if (!err)
		fs->location = cmd.fs.location;
	return err;
}

static int rule_delete(struct devmem_nic *nic, uint32_t loc)
{
	struct ethtool_rxnfc cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.cmd = ETHTOOL_SRXCLSRLDEL;
	cmd.fs.location = loc;
	return ethtool_ioctl(nic, &cmd);
}

/* A location for a new rule: "any" where the driver picks, else the first
 * free one of its table. */
static int rule_location(struct devmem_nic *nic, uint32_t *loc)
{
	struct ethtool_rxnfc cnt, *all;
	uint32_t i, l;
	int err;

	memset(&cnt, 0, sizeof(cnt));
	cnt.cmd = ETHTOOL_GRXCLSRLCNT;
	err = ethtool_ioctl(nic, &cnt);
	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_GRXCLSRLCNT (ethtool -n %s)", nic->name,
					 nic->name);
	if (cnt.data & RX_CLS_LOC_SPECIAL) {
		*loc = RX_CLS_LOC_ANY;
		return 0;
	}
	all = calloc(1, sizeof(*all) + (cnt.rule_cnt + 1) * sizeof(uint32_t));
	if (!all)
		return devmem_fail(-ENOMEM, "%s: no memory for the rule list", nic->name);
	all->cmd = ETHTOOL_GRXCLSRLALL;
	all->rule_cnt = cnt.rule_cnt;
	err = ethtool_ioctl(nic, all);
	if (err) {
		free(all);
		return devmem_fail_errno(err, "%s: ETHTOOL_GRXCLSRLALL (ethtool -n %s)", nic->name,
					 nic->name);
	}
	/* The table has all->data entries; find the lowest one not in use. */
	for (l = 0; l < all->data; l++) {
		for (i = 0; i < all->rule_cnt && all->rule_locs[i] != l; i++)
			;
		if (i == all->rule_cnt)
			break;
	}
	err = l < all->data ? 0 : devmem_fail(-ENOSPC, "%s: the flow rule table is full (%u "
					      "rules): delete some (ethtool -n %s)", nic->name,
					      all->rule_cnt, nic->name);
	free(all);
	*loc = l;
	return err;
}

DEVMEM_EXPORT int devmem_nic_flow_add(struct devmem_nic *nic, const struct devmem_flow *flow,
				      const struct devmem_flow_target *target, uint32_t *rule)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_RULE_DEL };
	struct ethtool_rx_flow_spec fs;
	struct feature ft;
	uint32_t rss_ctx;
	unsigned int n;
	int err;

	if (!nic || !rule)
		return devmem_fail(-EINVAL, "devmem_nic_flow_add: nic and rule must not be NULL");
	err = devmem_flow_spec(nic->name, flow, target, &fs, &rss_ctx);
	if (err)
		return err;
	err = ntuple_get(nic, &ft);
	if (err)
		return err;
	if (!ft.active)
		return devmem_fail(-EOPNOTSUPP, "%s: ntuple filters are off: enable with "
				   "devmem_nic_set_ntuple(nic, true) (ethtool -K %s ntuple on)",
				   nic->name, nic->name);
	if (!rss_ctx) {
		err = devmem_nic_rx_queues(nic, &n);
		if (err)
			return err;
		if (target->queue >= n)
			return devmem_fail(-EINVAL, "%s: flow rule to queue %u: queue %u does not "
					   "exist (%u RX queues; raise the count with "
					   "devmem_nic_set_queues() or ethtool -L %s combined N)",
					   nic->name, target->queue, target->queue, n, nic->name);
	}
	err = rule_location(nic, &fs.location);
	if (err)
		return err;
	err = rule_insert(nic, &fs, rss_ctx);
	if (err == -EINVAL && rss_ctx)
		return devmem_fail(err, "%s: flow rule to RSS context %u (queue offset %u) refused: "
				   "the context does not exist, or the driver takes no queue offset "
				   "(use 0) (ethtool -x %s context %u)", nic->name, rss_ctx,
				   target->queue, nic->name, rss_ctx);
	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_SRXCLSRLINS of a tcp%d rule to %s %u",
					 nic->name, flow->family == AF_INET ? 4 : 6,
					 rss_ctx ? "RSS context" : "queue",
					 rss_ctx ? rss_ctx : target->queue);
	u.rule = fs.location;
	err = devmem_undo_push(&nic->undo, &u);
	if (err) {
		rule_delete(nic, fs.location);
		return devmem_fail(err, "%s: flow rule %u removed again: %s", nic->name,
				   fs.location, devmem_last_error());
	}
	*rule = fs.location;
	return 0;
}

DEVMEM_EXPORT int devmem_nic_flow_del(struct devmem_nic *nic, uint32_t rule)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_RULE_ADD };
	struct ethtool_rxnfc get;
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_flow_del: nic is NULL");
	/* Keep the rule to put it back on restore if it was not ours. */
	memset(&get, 0, sizeof(get));
	get.cmd = ETHTOOL_GRXCLSRULE;
	get.fs.location = rule;
	err = ethtool_ioctl(nic, &get);
	if (err == -ENOENT || err == -EINVAL)
		return devmem_fail(-ENOENT, "%s: no flow rule at location %u (ethtool -n %s lists "
				   "them)", nic->name, rule, nic->name);
	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_GRXCLSRULE %u", nic->name, rule);
	err = rule_delete(nic, rule);
	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_SRXCLSRLDEL %u (ethtool -N %s delete %u)",
					 nic->name, rule, nic->name, rule);
	if (devmem_undo_forget(&nic->undo, DEVMEM_UNDO_RULE_DEL, rule))
		return 0;
	u.add.fs = get.fs;
	u.add.rss_ctx = get.rss_context;
	err = devmem_undo_push(&nic->undo, &u);
	if (err)
		return devmem_fail(err, "%s: rule %u deleted, but it cannot be restored later: %s",
				   nic->name, rule, devmem_last_error());
	return 0;
}

/* ---------------------------------------------------------------- restore */

static int undo_apply(void *ctx, const struct devmem_undo *u)
{
	struct devmem_nic *nic = ctx;
	struct ethtool_rx_flow_spec fs;
	char what[160];
	int err;

	switch (u->kind) {
	case DEVMEM_UNDO_RINGS:
		snprintf(what, sizeof(what), "%s: restore: rings-set tcp-data-split %u hds-thresh %u",
			 nic->name, u->rings.data_split, u->rings.hds_thresh);
		err = rings_set(nic, u->rings.data_split, u->rings.has_thresh, u->rings.hds_thresh,
				what);
		if (err && strstr(devmem_nl_ext(nic->nl)->msg, "memory provider"))
			devmem_fail(err, "%s: restore: header split stays on while a dma-buf or "
				    "io_uring zcrx is bound to one of its queues: unbind first, "
				    "then restore (%s)", nic->name, devmem_nl_ext(nic->nl)->msg);
		return err;
	case DEVMEM_UNDO_CHANNELS:
		snprintf(what, sizeof(what), "%s: restore: %u queues (ethtool -L %s combined %u)",
			 nic->name, u->channels, nic->name, u->channels);
		return channels_set(nic, u->channels, what);
	case DEVMEM_UNDO_NTUPLE:
		snprintf(what, sizeof(what), "%s: restore: ntuple-filters %s", nic->name,
			 u->ntuple ? "on" : "off");
		return ntuple_set(nic, u->ntuple, what);
	case DEVMEM_UNDO_RSS:
		snprintf(what, sizeof(what), "%s: restore: the RSS table%s", nic->name,
			 u->rss.reset ? " (driver default)" : "");
		return rss_set(nic, u->rss.indir, u->rss.reset ? 0 : u->rss.size, what);
	case DEVMEM_UNDO_CTX_DEL:
		snprintf(what, sizeof(what), "%s: restore: delete RSS context %u", nic->name,
			 u->ctx);
		return ctx_delete(nic, u->ctx, what);
	case DEVMEM_UNDO_CTX_ADD: {
		uint32_t id;

		snprintf(what, sizeof(what), "%s: restore: re-create RSS context %u", nic->name,
			 u->rss.ctx);
		err = ctx_create(nic, u->rss.ctx, u->rss.indir, u->rss.size, &id, what);
		if (!err && id != u->rss.ctx) {
			/* Only ethtool netlink lets us choose the id. */
			ctx_delete(nic, id, what);
			return devmem_fail(-EOPNOTSUPP, "%s: restore: RSS context %u cannot be "
					   "re-created with its id through the ioctl (got %u)",
					   nic->name, u->rss.ctx, id);
		}
		return err;
	}
	case DEVMEM_UNDO_RULE_DEL:
		err = rule_delete(nic, u->rule);
		/* Turning ntuple off removes every rule: already undone. */
		if (err == -ENOENT)
			return 0;
		return err ? devmem_fail_errno(err, "%s: restore: delete flow rule %u", nic->name,
					       u->rule) : 0;
	case DEVMEM_UNDO_RULE_ADD:
		fs = u->add.fs;
		err = rule_insert(nic, &fs, u->add.rss_ctx);
		return err ? devmem_fail_errno(err, "%s: restore: re-insert flow rule %u",
					       nic->name, u->add.fs.location) : 0;
	}
	return 0;
}

DEVMEM_EXPORT int devmem_nic_restore(struct devmem_nic *nic)
{
	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_restore: nic is NULL");
	return devmem_undo_run(&nic->undo, undo_apply, nic);
}

int devmem_nic_undo(struct devmem_nic *nic, struct devmem_undo_log *log)
{
	return devmem_undo_run(log, undo_apply, nic);
}

struct devmem_undo_log *devmem_nic_log(struct devmem_nic *nic)
{
	return &nic->undo;
}

/* ------------------------------------------------------- queues and stats */

struct queues_dump {
	struct devmem_queue_info *out;
	unsigned int max, count;
};

static int queues_cb(const struct nlmsghdr *nlh, void *data)
{
	struct queues_dump *d = data;
	struct devmem_queue_info q = { 0 };
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_NETDEV_A_QUEUE_ID: q.id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_QUEUE_TYPE: q.rx = mnl_attr_get_u32(a) == DM_NETDEV_QUEUE_TYPE_RX; break;
		case DM_NETDEV_A_QUEUE_NAPI_ID: q.napi_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_QUEUE_DMABUF: q.dmabuf_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_QUEUE_IO_URING: q.io_uring = true; break;
		}
	}
	if (d->count < d->max)
		d->out[d->count] = q;
	d->count++;
	return 0;
}

DEVMEM_EXPORT int devmem_nic_queues(struct devmem_nic *nic, struct devmem_queue_info *out,
				    unsigned int max)
{
	struct queues_dump d = { .out = out, .max = out ? max : 0 };
	struct nlmsghdr *nlh;
	char what[64];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_queues: nic is NULL");
	nlh = devmem_nl_msg(nic->nl, nic->netdev, DM_NETDEV_CMD_QUEUE_GET,
			    DM_NETDEV_FAMILY_VERSION, NLM_F_DUMP);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_QUEUE_IFINDEX, nic->ifindex);
	snprintf(what, sizeof(what), "%s: netdev queue-get", nic->name);
	err = devmem_nl_request(nic->nl, nlh, queues_cb, &d, what);
	return err ? err : (int)d.count;
}

struct pools_dump {
	int ifindex;
	struct devmem_page_pool_info *out;
	unsigned int max, count;
};

static int pools_cb(const struct nlmsghdr *nlh, void *data)
{
	struct pools_dump *d = data;
	struct devmem_page_pool_info p = { 0 };
	const struct nlattr *a;
	int ifindex = 0;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_NETDEV_A_PAGE_POOL_ID: p.id = devmem_nl_uint(a); break;
		case DM_NETDEV_A_PAGE_POOL_IFINDEX: ifindex = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_PAGE_POOL_NAPI_ID: p.napi_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_PAGE_POOL_INFLIGHT: p.inflight = devmem_nl_uint(a); break;
		case DM_NETDEV_A_PAGE_POOL_INFLIGHT_MEM: p.inflight_mem = devmem_nl_uint(a); break;
		case DM_NETDEV_A_PAGE_POOL_DETACH_TIME: p.detached = true; break;
		case DM_NETDEV_A_PAGE_POOL_DMABUF: p.dmabuf_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_PAGE_POOL_IO_URING: p.io_uring = true; break;
		}
	}
	/* The dump lists the pools of every device. */
	if (ifindex != d->ifindex)
		return 0;
	if (d->count < d->max)
		d->out[d->count] = p;
	d->count++;
	return 0;
}

DEVMEM_EXPORT int devmem_nic_page_pools(struct devmem_nic *nic, struct devmem_page_pool_info *out,
					unsigned int max)
{
	struct pools_dump d = { .out = out, .max = out ? max : 0 };
	struct nlmsghdr *nlh;
	char what[64];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_page_pools: nic is NULL");
	d.ifindex = nic->ifindex;
	nlh = devmem_nl_msg(nic->nl, nic->netdev, DM_NETDEV_CMD_PAGE_POOL_GET,
			    DM_NETDEV_FAMILY_VERSION, NLM_F_DUMP);
	snprintf(what, sizeof(what), "%s: netdev page-pool-get", nic->name);
	err = devmem_nl_request(nic->nl, nlh, pools_cb, &d, what);
	return err ? err : (int)d.count;
}

struct qstats_dump {
	int queue;
	bool found;
	struct devmem_qstats *out;
};

static int qstats_cb(const struct nlmsghdr *nlh, void *data)
{
	struct qstats_dump *d = data;
	struct devmem_qstats s = { 0 };
	const struct nlattr *a;
	int type = -1, id = -1;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_NETDEV_A_QSTATS_QUEUE_TYPE: type = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_QUEUE_ID: id = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_RX_PACKETS: s.rx_packets = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_RX_BYTES: s.rx_bytes = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_RX_ALLOC_FAIL: s.rx_alloc_fail = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_TX_PACKETS: s.tx_packets = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_TX_BYTES: s.tx_bytes = devmem_nl_uint(a); break;
		}
	}
	if (d->queue < 0) {
		*d->out = s;
		d->found = true;
	} else if (id == d->queue && type == DM_NETDEV_QUEUE_TYPE_RX) {
		d->out->rx_packets = s.rx_packets;
		d->out->rx_bytes = s.rx_bytes;
		d->out->rx_alloc_fail = s.rx_alloc_fail;
		d->found = true;
	} else if (id == d->queue && type == DM_NETDEV_QUEUE_TYPE_TX) {
		d->out->tx_packets = s.tx_packets;
		d->out->tx_bytes = s.tx_bytes;
		d->found = true;
	}
	return 0;
}

DEVMEM_EXPORT int devmem_nic_qstats(struct devmem_nic *nic, int queue, struct devmem_qstats *out)
{
	struct devmem_qstats s = { 0 };
	struct qstats_dump d = { .queue = queue, .out = &s };
	struct nlmsghdr *nlh;
	char what[80];
	int err;

	if (!nic || !out)
		return devmem_fail(-EINVAL, "devmem_nic_qstats: nic and out must not be NULL");
	nlh = devmem_nl_msg(nic->nl, nic->netdev, DM_NETDEV_CMD_QSTATS_GET,
			    DM_NETDEV_FAMILY_VERSION, NLM_F_DUMP);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_QSTATS_IFINDEX, nic->ifindex);
	if (queue >= 0)
		mnl_attr_put_u32(nlh, DM_NETDEV_A_QSTATS_SCOPE, DM_NETDEV_QSTATS_SCOPE_QUEUE);
	snprintf(what, sizeof(what), "%s: netdev qstats-get%s", nic->name,
		 queue >= 0 ? " (scope queue)" : "");
	err = devmem_nl_request(nic->nl, nlh, qstats_cb, &d, what);
	if (err == -EOPNOTSUPP)
		return devmem_fail(err, "%s: the driver reports no queue statistics (qstats)",
				   nic->name);
	if (err)
		return err;
	if (!d.found && queue >= 0) {
		unsigned int n = 0;

		devmem_nic_rx_queues(nic, &n);
		return devmem_fail(-EINVAL, "%s: queue %d does not exist (%u RX queues; raise the "
				   "count with devmem_nic_set_queues() or ethtool -L %s combined N)",
				   nic->name, queue, n, nic->name);
	}
	if (!d.found)
		return devmem_fail(-EOPNOTSUPP, "%s: the driver reports no statistics through "
				   "netdev qstats", nic->name);
	*out = s;
	return 0;
}
