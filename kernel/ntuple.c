// SPDX-License-Identifier: GPL-2.0
/*
 * ntuple flow steering (ethtool -N) and additional RSS contexts (ethtool -X
 * context N). The receiving end checks its rules before RSS: the first rule,
 * in location order, that matches a TCP or UDP frame decides its queue, its
 * RSS context, or drops it.
 *
 * Rules and contexts change under the netdev instance lock (the device has
 * queue management ops, so ethtool calls hold it) and are read by the peer's
 * xmit path on any CPU, so each change publishes a new copy with RCU and
 * frees the old one after a grace period: the fast path takes no lock.
 *
 * Rules can only be inserted while NETIF_F_NTUPLE is on, and turning it off
 * removes them all, as most NICs do. A context used by a rule cannot be
 * deleted: the core refuses with -EBUSY before calling us.
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/flow_dissector.h>

#include "devtcp.h"

struct devtcp_rule {
	struct ethtool_rx_flow_spec fs;	/* as inserted, for reporting */
	u32 rss_context;
	u32 action;			/* queue, DEVTCP_RX_DROP or DEVTCP_RX_RSS */
	/* match if (field & mask) == value; values are stored masked */
	u16 addr_type;			/* FLOW_DISSECTOR_KEY_IPV{4,6}_ADDRS */
	u8 ip_proto;
	__be32 src[4], src_m[4];
	__be32 dst[4], dst_m[4];
	__be16 sport, sport_m;
	__be16 dport, dport_m;
};

/* The published rule set, sorted by location. */
struct devtcp_ntuple {
	struct rcu_head rcu;
	u32 count;
	struct devtcp_rule rule[] __counted_by(count);
};

static bool devtcp_rule_match(const struct devtcp_rule *r, const struct flow_keys *keys,
			      const __be32 *src, const __be32 *dst)
{
	int i;

	if (r->addr_type != keys->control.addr_type || r->ip_proto != keys->basic.ip_proto)
		return false;
	if ((keys->ports.src & r->sport_m) != r->sport ||
	    (keys->ports.dst & r->dport_m) != r->dport)
		return false;
	for (i = 0; i < 4; i++)
		if ((src[i] & r->src_m[i]) != r->src[i] || (dst[i] & r->dst_m[i]) != r->dst[i])
			return false;
	return true;
}

/*
 * The verdict of @rx's rules for a dissected IP frame: a queue index,
 * DEVTCP_RX_DROP, or DEVTCP_RX_RSS with *@rss set to the table to hash with
 * (left alone when no rule matched). Called under rcu_read_lock_bh().
 */
u32 devtcp_ntuple_lookup(struct devtcp_priv *rx, const struct flow_keys *keys,
			 const struct devtcp_rss **rss)
{
	const struct devtcp_ntuple *nt = rcu_dereference_bh(rx->ntuple);
	const struct devtcp_rss_ctx *ctx;
	__be32 src[4] = {}, dst[4] = {};
	u32 i;

	if (!nt)
		return DEVTCP_RX_RSS;
	if (keys->control.addr_type == FLOW_DISSECTOR_KEY_IPV4_ADDRS) {
		src[0] = keys->addrs.v4addrs.src;
		dst[0] = keys->addrs.v4addrs.dst;
	} else {
		memcpy(src, &keys->addrs.v6addrs.src, sizeof(src));
		memcpy(dst, &keys->addrs.v6addrs.dst, sizeof(dst));
	}
	for (i = 0; i < nt->count; i++) {
		const struct devtcp_rule *r = &nt->rule[i];

		if (!devtcp_rule_match(r, keys, src, dst))
			continue;
		if (r->action == DEVTCP_RX_RSS && r->rss_context) {
			ctx = rcu_dereference_bh(rx->rss_ctx[r->rss_context]);
			/* gone only while the device is unregistered */
			if (ctx)
				*rss = &ctx->rss;
		}
		return r->action;
	}
	return DEVTCP_RX_RSS;
}

static void devtcp_match_ip4(struct devtcp_rule *r, const struct ethtool_tcpip4_spec *v,
			     const struct ethtool_tcpip4_spec *m)
{
	r->addr_type = FLOW_DISSECTOR_KEY_IPV4_ADDRS;
	r->src_m[0] = m->ip4src;
	r->src[0] = v->ip4src & m->ip4src;
	r->dst_m[0] = m->ip4dst;
	r->dst[0] = v->ip4dst & m->ip4dst;
	r->sport_m = m->psrc;
	r->sport = v->psrc & m->psrc;
	r->dport_m = m->pdst;
	r->dport = v->pdst & m->pdst;
}

static void devtcp_match_ip6(struct devtcp_rule *r, const struct ethtool_tcpip6_spec *v,
			     const struct ethtool_tcpip6_spec *m)
{
	int i;

	r->addr_type = FLOW_DISSECTOR_KEY_IPV6_ADDRS;
	for (i = 0; i < 4; i++) {
		r->src_m[i] = m->ip6src[i];
		r->src[i] = v->ip6src[i] & m->ip6src[i];
		r->dst_m[i] = m->ip6dst[i];
		r->dst[i] = v->ip6dst[i] & m->ip6dst[i];
	}
	r->sport_m = m->psrc;
	r->sport = v->psrc & m->psrc;
	r->dport_m = m->pdst;
	r->dport = v->pdst & m->pdst;
}

/*
 * RSS contexts change under the core's rss_lock: from the ethtool context
 * ops (which also hold the ops lock) and when the core frees them on
 * unregister (which does not). Readers here hold one of the two.
 */
static struct devtcp_rss_ctx *devtcp_rss_ctx(struct devtcp_priv *priv, u32 i)
{
	return rcu_dereference_protected(priv->rss_ctx[i],
					 lockdep_is_held(&priv->dev->ethtool->rss_lock) ||
					 devtcp_ops_lock_held(priv->dev));
}

/* Checks a rule from ethtool and turns it into match fields and an action. */
static int devtcp_rule_parse(struct devtcp_priv *priv, const struct ethtool_rxnfc *cmd,
			     struct devtcp_rule *r)
{
	const struct ethtool_rx_flow_spec *fs = &cmd->fs;
	u32 flow = fs->flow_type & ~FLOW_RSS;
	u64 q;

	/* FLOW_EXT/FLOW_MAC_EXT (VLAN, user data, MAC) fall to the default. */
	switch (flow) {
	case TCP_V4_FLOW:
	case UDP_V4_FLOW:
		if (fs->m_u.tcp_ip4_spec.tos)
			return -EOPNOTSUPP;
		devtcp_match_ip4(r, &fs->h_u.tcp_ip4_spec, &fs->m_u.tcp_ip4_spec);
		break;
	case TCP_V6_FLOW:
	case UDP_V6_FLOW:
		if (fs->m_u.tcp_ip6_spec.tclass)
			return -EOPNOTSUPP;
		devtcp_match_ip6(r, &fs->h_u.tcp_ip6_spec, &fs->m_u.tcp_ip6_spec);
		break;
	default:
		return -EOPNOTSUPP;
	}
	r->ip_proto = flow == TCP_V4_FLOW || flow == TCP_V6_FLOW ? IPPROTO_TCP : IPPROTO_UDP;

	if (fs->ring_cookie == RX_CLS_FLOW_DISC) {
		if (fs->flow_type & FLOW_RSS)
			return -EINVAL;
		r->action = DEVTCP_RX_DROP;
	} else if (fs->flow_type & FLOW_RSS) {
		/* No queue offset on top of the context (no cap_rss_rxnfc_adds). */
		if (fs->ring_cookie || cmd->rss_context >= DEVTCP_RSS_MAX_CTX)
			return -EINVAL;
		if (cmd->rss_context && !devtcp_rss_ctx(priv, cmd->rss_context))
			return -EINVAL;
		r->action = DEVTCP_RX_RSS;
		r->rss_context = cmd->rss_context;
	} else {
		q = ethtool_get_flow_spec_ring(fs->ring_cookie);
		if (ethtool_get_flow_spec_ring_vf(fs->ring_cookie) ||
		    q >= priv->dev->real_num_rx_queues)
			return -EINVAL;
		r->action = q;
	}
	r->fs = *fs;
	return 0;
}

/* The location for RX_CLS_LOC_ANY/FIRST/LAST, or -ENOSPC when full. */
static int devtcp_ntuple_free_loc(const struct devtcp_ntuple *nt, u32 special)
{
	int n = nt ? nt->count : 0;
	int loc, i;

	if (special == RX_CLS_LOC_LAST) {
		loc = DEVTCP_MAX_NTUPLE - 1;
		for (i = n - 1; i >= 0 && nt->rule[i].fs.location == loc; i--)
			loc--;
		return loc >= 0 ? loc : -ENOSPC;
	}
	loc = 0;
	for (i = 0; i < n && nt->rule[i].fs.location == loc; i++)
		loc++;
	return loc < DEVTCP_MAX_NTUPLE ? loc : -ENOSPC;
}

/* Publishes @nt (NULL for no rules) and frees the previous set after readers. */
static void devtcp_ntuple_publish(struct devtcp_priv *priv, struct devtcp_ntuple *nt)
{
	struct devtcp_ntuple *old = devtcp_ops_dereference(priv->ntuple, priv->dev);

	rcu_assign_pointer(priv->ntuple, nt);
	if (old)
		kvfree_rcu(old, rcu);
}

static int devtcp_ntuple_insert(struct devtcp_priv *priv, struct ethtool_rxnfc *cmd)
{
	const struct devtcp_ntuple *old = devtcp_ops_dereference(priv->ntuple, priv->dev);
	u32 i, j, n = old ? old->count : 0, loc = cmd->fs.location;
	struct devtcp_rule *rule;
	struct devtcp_ntuple *nt;
	bool replace = false;
	int err;

	if (!(priv->dev->features & NETIF_F_NTUPLE))
		return -EOPNOTSUPP;
	if (loc == RX_CLS_LOC_ANY || loc == RX_CLS_LOC_FIRST || loc == RX_CLS_LOC_LAST) {
		err = devtcp_ntuple_free_loc(old, loc);
		if (err < 0)
			return err;
		loc = err;
	} else if (loc >= DEVTCP_MAX_NTUPLE) {
		return -EINVAL;
	}
	for (i = 0; i < n; i++)
		replace |= old->rule[i].fs.location == loc;

	nt = kvzalloc_flex(*nt, rule, n + !replace);
	if (!nt)
		return -ENOMEM;
	/* kvzalloc_flex() sets the count only with compiler counted_by support */
	nt->count = n + !replace;
	/* Keep the set sorted: rules before @loc, the new rule, the rest. */
	for (i = 0, j = 0; i < n && old->rule[i].fs.location < loc; i++)
		nt->rule[j++] = old->rule[i];
	rule = &nt->rule[j++];
	if (replace)
		i++;
	for (; i < n; i++)
		nt->rule[j++] = old->rule[i];

	cmd->fs.location = loc;
	err = devtcp_rule_parse(priv, cmd, rule);
	if (err) {
		kvfree(nt);
		return err;
	}
	devtcp_ntuple_publish(priv, nt);
	return 0;
}

static int devtcp_ntuple_delete(struct devtcp_priv *priv, u32 loc)
{
	const struct devtcp_ntuple *old = devtcp_ops_dereference(priv->ntuple, priv->dev);
	u32 i, j, n = old ? old->count : 0;
	struct devtcp_ntuple *nt;

	for (i = 0; i < n && old->rule[i].fs.location != loc; i++)
		;
	if (i == n)
		return -ENOENT;
	if (n == 1) {
		devtcp_ntuple_publish(priv, NULL);
		return 0;
	}
	nt = kvzalloc_flex(*nt, rule, n - 1);
	if (!nt)
		return -ENOMEM;
	nt->count = n - 1;
	for (i = 0, j = 0; i < n; i++)
		if (old->rule[i].fs.location != loc)
			nt->rule[j++] = old->rule[i];
	devtcp_ntuple_publish(priv, nt);
	return 0;
}

int devtcp_set_rxnfc(struct net_device *dev, struct ethtool_rxnfc *cmd)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	switch (cmd->cmd) {
	case ETHTOOL_SRXCLSRLINS:
		return devtcp_ntuple_insert(priv, cmd);
	case ETHTOOL_SRXCLSRLDEL:
		return devtcp_ntuple_delete(priv, cmd->fs.location);
	}
	return -EOPNOTSUPP;
}

static int devtcp_ntuple_get(const struct devtcp_ntuple *nt, struct ethtool_rxnfc *cmd,
			     u32 *locs)
{
	u32 i, n = nt ? nt->count : 0;

	switch (cmd->cmd) {
	case ETHTOOL_GRXCLSRLCNT:
		cmd->rule_cnt = n;
		cmd->data = DEVTCP_MAX_NTUPLE | RX_CLS_LOC_SPECIAL;
		return 0;
	case ETHTOOL_GRXCLSRULE:
		for (i = 0; i < n; i++) {
			if (nt->rule[i].fs.location != cmd->fs.location)
				continue;
			cmd->fs = nt->rule[i].fs;
			cmd->rss_context = nt->rule[i].rss_context;
			cmd->data = DEVTCP_MAX_NTUPLE;
			return 0;
		}
		return -ENOENT;
	case ETHTOOL_GRXCLSRLALL:
		cmd->data = DEVTCP_MAX_NTUPLE;
		if (cmd->rule_cnt < n)
			return -EMSGSIZE;
		for (i = 0; i < n; i++)
			locs[i] = nt->rule[i].fs.location;
		cmd->rule_cnt = n;
		return 0;
	}
	return -EOPNOTSUPP;
}

int devtcp_get_rxnfc(struct net_device *dev, struct ethtool_rxnfc *cmd, u32 *locs)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	if (cmd->cmd == ETHTOOL_GRXRINGS) {
		cmd->data = dev->real_num_rx_queues;
		return 0;
	}
	/* Readers hold the instance lock, as writers do. */
	return devtcp_ntuple_get(devtcp_ops_dereference(priv->ntuple, priv->dev), cmd, locs);
}

/* Drops every rule (ntuple turned off, device going away). */
void devtcp_ntuple_flush(struct devtcp_priv *priv)
{
	devtcp_ntuple_publish(priv, NULL);
}

static int devtcp_ctx_check(const struct ethtool_rxfh_param *rxfh,
			    struct netlink_ext_ack *extack)
{
	if (rxfh->hfunc != ETH_RSS_HASH_NO_CHANGE && rxfh->hfunc != ETH_RSS_HASH_TOP) {
		NL_SET_ERR_MSG(extack, "devtcp hashes with Toeplitz only");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Applies the parts of @rxfh that are set to @rss. */
static void devtcp_ctx_apply(struct devtcp_rss *rss, const struct ethtool_rxfh_param *rxfh)
{
	if (rxfh->indir)
		memcpy(rss->indir, rxfh->indir, sizeof(rss->indir));
	if (rxfh->key)
		memcpy(rss->key, rxfh->key, sizeof(rss->key));
}

int devtcp_create_rxfh_context(struct net_device *dev, struct ethtool_rxfh_context *ctx,
			       const struct ethtool_rxfh_param *rxfh,
			       struct netlink_ext_ack *extack)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rss_ctx *c;
	int err, i;

	err = devtcp_ctx_check(rxfh, extack);
	if (err)
		return err;
	if (WARN_ON_ONCE(!rxfh->rss_context || rxfh->rss_context >= DEVTCP_RSS_MAX_CTX))
		return -EINVAL;
	c = kzalloc_obj(*c);
	if (!c)
		return -ENOMEM;
	/* Unset parts start as a new device's would; tell the core what we chose. */
	netdev_rss_key_fill(c->rss.key, sizeof(c->rss.key));
	for (i = 0; i < DEVTCP_RSS_INDIR_SIZE; i++)
		c->rss.indir[i] = ethtool_rxfh_indir_default(i, dev->real_num_rx_queues);
	devtcp_ctx_apply(&c->rss, rxfh);
	if (!rxfh->indir)
		memcpy(ethtool_rxfh_context_indir(ctx), c->rss.indir, sizeof(c->rss.indir));
	if (!rxfh->key)
		memcpy(ethtool_rxfh_context_key(ctx), c->rss.key, sizeof(c->rss.key));
	if (rxfh->hfunc == ETH_RSS_HASH_NO_CHANGE)
		ctx->hfunc = ETH_RSS_HASH_TOP;
	rcu_assign_pointer(priv->rss_ctx[rxfh->rss_context], c);
	return 0;
}

int devtcp_modify_rxfh_context(struct net_device *dev, struct ethtool_rxfh_context *ctx,
			       const struct ethtool_rxfh_param *rxfh,
			       struct netlink_ext_ack *extack)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rss_ctx *old, *c;
	int err;

	err = devtcp_ctx_check(rxfh, extack);
	if (err)
		return err;
	if (rxfh->rss_context >= DEVTCP_RSS_MAX_CTX)
		return -EINVAL;
	old = devtcp_rss_ctx(priv, rxfh->rss_context);
	if (!old)
		return -ENOENT;
	c = kmemdup(old, sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	devtcp_ctx_apply(&c->rss, rxfh);
	rcu_assign_pointer(priv->rss_ctx[rxfh->rss_context], c);
	kfree_rcu(old, rcu);
	return 0;
}

int devtcp_remove_rxfh_context(struct net_device *dev, struct ethtool_rxfh_context *ctx,
			       u32 rss_context, struct netlink_ext_ack *extack)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rss_ctx *c;

	if (rss_context >= DEVTCP_RSS_MAX_CTX)
		return -EINVAL;
	/*
	 * A rule must not point at a context that is gone (newer cores check
	 * this before calling us); the core's cleanup on unregister goes ahead.
	 */
	if (dev->reg_state == NETREG_REGISTERED) {
		const struct devtcp_ntuple *nt = devtcp_ops_dereference(priv->ntuple, dev);
		u32 i;

		for (i = 0; nt && i < nt->count; i++) {
			if (nt->rule[i].action != DEVTCP_RX_RSS ||
			    nt->rule[i].rss_context != rss_context)
				continue;
			NL_SET_ERR_MSG_FMT(extack,
					   "RSS context %u is used by the rule at location %u",
					   rss_context, nt->rule[i].fs.location);
			return -EBUSY;
		}
	}
	c = devtcp_rss_ctx(priv, rss_context);
	RCU_INIT_POINTER(priv->rss_ctx[rss_context], NULL);
	if (c)
		kfree_rcu(c, rcu);
	return 0;
}

/* The device is going away: free the rules and any context still held. */
void devtcp_ntuple_free(struct devtcp_priv *priv)
{
	struct devtcp_rss_ctx *c;
	int i;

	devtcp_ntuple_flush(priv);
	for (i = 0; i < DEVTCP_RSS_MAX_CTX; i++) {
		c = devtcp_rss_ctx(priv, i);
		RCU_INIT_POINTER(priv->rss_ctx[i], NULL);
		if (c)
			kfree_rcu(c, rcu);
	}
}
