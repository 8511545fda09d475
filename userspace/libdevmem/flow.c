// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Flow rules: the ntuple spec of a TCP flow, and rules inserted and deleted
 * through SIOCETHTOOL (they have no ethtool netlink yet), each recorded in
 * the handle's undo log.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "devtcp/nl_numbers.h"

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


int devmem_rule_insert(struct devmem_nic *nic, struct ethtool_rx_flow_spec *fs,
		       uint32_t rss_ctx)
{
	struct ethtool_rxnfc cmd;
	int err;

	memset(&cmd, 0, sizeof(cmd));
	cmd.cmd = ETHTOOL_SRXCLSRLINS;
	cmd.flow_type = fs->flow_type;
	cmd.fs = *fs;
	cmd.rss_context = rss_ctx;
	err = devmem_ethtool_ioctl(nic, &cmd);
	if (!err)
		fs->location = cmd.fs.location;
	return err;
}

int devmem_rule_delete(struct devmem_nic *nic, uint32_t loc)
{
	struct ethtool_rxnfc cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.cmd = ETHTOOL_SRXCLSRLDEL;
	cmd.fs.location = loc;
	return devmem_ethtool_ioctl(nic, &cmd);
}

/* Whether the driver picks rule locations itself (RX_CLS_LOC_SPECIAL). */
static int rule_count(struct devmem_nic *nic, struct ethtool_rxnfc *cnt)
{
	int err;

	memset(cnt, 0, sizeof(*cnt));
	cnt->cmd = ETHTOOL_GRXCLSRLCNT;
	err = devmem_ethtool_ioctl(nic, cnt);
	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_GRXCLSRLCNT (ethtool -n %s)", nic->name,
					 nic->name);
	return 0;
}

/*
 * The driver's rule locations (ETHTOOL_GRXCLSRLALL), to free(). Other
 * processes (a host's other ranks) add rules meanwhile: the list is asked
 * for with room to spare, and again when it has outgrown that.
 */
static int rule_list(struct devmem_nic *nic, struct ethtool_rxnfc **out)
{
	struct ethtool_rxnfc cnt, *all;
	int err, tries = 0;

	do {
		err = rule_count(nic, &cnt);
		if (err)
			return err;
		all = calloc(1, sizeof(*all) + (cnt.rule_cnt + 64) * sizeof(uint32_t));
		if (!all)
			return devmem_fail(-ENOMEM, "%s: no memory for the rule list", nic->name);
		all->cmd = ETHTOOL_GRXCLSRLALL;
		all->rule_cnt = cnt.rule_cnt + 64;
		err = devmem_ethtool_ioctl(nic, all);
		if (err)
			free(all);
	} while (err == -EMSGSIZE && ++tries < 8);
	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_GRXCLSRLALL (ethtool -n %s)", nic->name,
					 nic->name);
	*out = all;
	return 0;
}

/* A location for a new rule: "any" where the driver picks, else the first
 * free one of its table. */
static int rule_location(struct devmem_nic *nic, uint32_t *loc)
{
	struct ethtool_rxnfc cnt, *all;
	uint32_t i, l;
	int err;

	err = rule_count(nic, &cnt);
	if (err)
		return err;
	if (cnt.data & RX_CLS_LOC_SPECIAL) {
		*loc = RX_CLS_LOC_ANY;
		return 0;
	}
	err = rule_list(nic, &all);
	if (err)
		return err;
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

/* Whether rule @got matches the frames @want does, wherever it sends them. */
static bool same_match(const struct ethtool_rx_flow_spec *got,
		       const struct ethtool_rx_flow_spec *want)
{
	const uint8_t *gh = (const uint8_t *)&got->h_u, *gm = (const uint8_t *)&got->m_u;
	const uint8_t *wh = (const uint8_t *)&want->h_u, *wm = (const uint8_t *)&want->m_u;
	const uint32_t extras = FLOW_EXT | FLOW_MAC_EXT | FLOW_RSS;

	if ((got->flow_type & ~extras) != (want->flow_type & ~extras) ||
	    (got->flow_type & (FLOW_EXT | FLOW_MAC_EXT)))
		return false;
	for (size_t i = 0; i < sizeof(got->h_u); i++)
		if (gm[i] != wm[i] || (gh[i] & gm[i]) != (wh[i] & wm[i]))
			return false;
	return true;
}

DEVMEM_EXPORT int devmem_nic_flow_find(struct devmem_nic *nic, const struct devmem_flow *flow,
				       uint32_t *rule)
{
	const struct devmem_flow_target any = { 0 };
	struct ethtool_rx_flow_spec want;
	struct ethtool_rxnfc *all, get;
	uint32_t rss_ctx, i;
	int err;

	if (!nic || !rule)
		return devmem_fail(-EINVAL, "devmem_nic_flow_find: nic and rule must not be NULL");
	err = devmem_flow_spec(nic->name, flow, &any, &want, &rss_ctx);
	if (!err)
		err = rule_list(nic, &all);
	if (err)
		return err;
	for (i = 0; i < all->rule_cnt; i++) {
		memset(&get, 0, sizeof(get));
		get.cmd = ETHTOOL_GRXCLSRULE;
		get.fs.location = all->rule_locs[i];
		if (devmem_ethtool_ioctl(nic, &get))
			continue;	/* deleted meanwhile */
		if (same_match(&get.fs, &want)) {
			*rule = all->rule_locs[i];
			free(all);
			return 0;
		}
	}
	free(all);
	return devmem_fail(-ENOENT, "%s: no flow rule matches that flow", nic->name);
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
	err = devmem_ntuple_get(nic, &ft);
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
	err = devmem_rule_insert(nic, &fs, rss_ctx);
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
		devmem_rule_delete(nic, fs.location);
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
	err = devmem_ethtool_ioctl(nic, &get);
	if (err == -ENOENT || err == -EINVAL)
		return devmem_fail(-ENOENT, "%s: no flow rule at location %u (ethtool -n %s lists "
				   "them)", nic->name, rule, nic->name);
	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_GRXCLSRULE %u", nic->name, rule);
	err = devmem_rule_delete(nic, rule);
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
