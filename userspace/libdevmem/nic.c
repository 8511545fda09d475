// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One interface prepared for devmem: open and close, its state, header
 * split, channels and the ntuple feature through ethtool netlink (RSS in
 * rss.c, flow rules in flow.c). Every change records its undo (undo.c);
 * devmem_nic_restore() replays them newest first so that dependent state
 * goes away before what it depends on (rules before contexts, contexts
 * before channels).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "internal.h"
#include "devtcp/nl_numbers.h"

static void put_header(struct nlmsghdr *nlh, uint16_t type, const struct devmem_nic *nic,
		       uint32_t flags)
{
	struct nlattr *nest = mnl_attr_nest_start(nlh, type);

	mnl_attr_put_u32(nlh, DM_ETHTOOL_A_HEADER_DEV_INDEX, nic->ifindex);
	if (flags)
		mnl_attr_put_u32(nlh, DM_ETHTOOL_A_HEADER_FLAGS, flags);
	mnl_attr_nest_end(nlh, nest);
}

struct nlmsghdr *devmem_ethtool_msg(struct devmem_nic *nic, uint8_t cmd, uint16_t hdr_type,
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
	return devmem_nl_request(nic->nl, devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_CHANNELS_GET,
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
	return devmem_nl_request(nic->nl, devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_RINGS_GET,
						     DM_ETHTOOL_A_RINGS_HEADER, false),
				 rings_cb, r, what);
}

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

int devmem_ntuple_get(struct devmem_nic *nic, struct feature *ft)
{
	char what[64];

	memset(ft, 0, sizeof(*ft));
	ft->name = NTUPLE_FEATURE;
	snprintf(what, sizeof(what), "%s: features-get", nic->name);
	return devmem_nl_request(nic->nl, devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_FEATURES_GET,
						     DM_ETHTOOL_A_FEATURES_HEADER, false),
				 features_cb, ft, what);
}

int devmem_ethtool_ioctl(struct devmem_nic *nic, void *cmd)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, nic->name, sizeof(ifr.ifr_name));
	ifr.ifr_data = cmd;
	return ioctl(nic->ioctl_fd, SIOCETHTOOL, &ifr) ? -errno : 0;
}

/* ETHTOOL_GRSSH: the sizes first, then the table. */
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
		err = devmem_ntuple_get(nic, &ft);
	if (err == -EOPNOTSUPP)
		err = 0;
	if (!err)
		err = devmem_rss_get(nic, 0, &rss);
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

static int rings_set(struct devmem_nic *nic, uint8_t split, bool set_thresh, uint32_t thresh,
		     const char *what)
{
	struct nlmsghdr *nlh = devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_RINGS_SET,
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
	struct nlmsghdr *nlh = devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_CHANNELS_SET,
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
	struct nlmsghdr *nlh = devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_FEATURES_SET,
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
	err = devmem_ntuple_get(nic, &ft);
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
		err = devmem_ntuple_get(nic, &ft);
	if (!err && ft.active != on)
		err = devmem_fail(-EIO, "%s: the kernel accepted ntuple-filters %s but kept it %s",
				  nic->name, on ? "on" : "off", ft.active ? "on" : "off");
	if (err && devmem_ntuple_get(nic, &ft) == 0 && ft.active == u.ntuple)
		devmem_undo_pop(&nic->undo);
	return err;
}

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
		return devmem_rss_set(nic, u->rss.indir, u->rss.reset ? 0 : u->rss.size, what);
	case DEVMEM_UNDO_CTX_DEL:
		snprintf(what, sizeof(what), "%s: restore: delete RSS context %u", nic->name,
			 u->ctx);
		return devmem_rss_ctx_delete(nic, u->ctx, what);
	case DEVMEM_UNDO_CTX_ADD: {
		uint32_t id;

		snprintf(what, sizeof(what), "%s: restore: re-create RSS context %u", nic->name,
			 u->rss.ctx);
		err = devmem_rss_ctx_create(nic, u->rss.ctx, u->rss.indir, u->rss.size, &id, what);
		if (!err && id != u->rss.ctx) {
			/* Only ethtool netlink lets us choose the id. */
			devmem_rss_ctx_delete(nic, id, what);
			return devmem_fail(-EOPNOTSUPP, "%s: restore: RSS context %u cannot be "
					   "re-created with its id through the ioctl (got %u)",
					   nic->name, u->rss.ctx, id);
		}
		return err;
	}
	case DEVMEM_UNDO_RULE_DEL:
		err = devmem_rule_delete(nic, u->rule);
		/* Turning ntuple off removes every rule: already undone. */
		if (err == -ENOENT)
			return 0;
		return err ? devmem_fail_errno(err, "%s: restore: delete flow rule %u", nic->name,
					       u->rule) : 0;
	case DEVMEM_UNDO_RULE_ADD:
		fs = u->add.fs;
		err = devmem_rule_insert(nic, &fs, u->add.rss_ctx);
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
