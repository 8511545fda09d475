// SPDX-License-Identifier: GPL-2.0
/* ethtool: driver info, channels, rings and header split, RSS, statistics. */
/* ntuple rules and RSS contexts are in ntuple.c. */
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/netdevice.h>
#include <net/netdev_queues.h>

#include "devtcp.h"

static void devtcp_get_drvinfo(struct net_device *dev, struct ethtool_drvinfo *info)
{
	strscpy(info->driver, "devtcp", sizeof(info->driver));
	strscpy(info->bus_info, dev_name(devtcp_dma_dev()), sizeof(info->bus_info));
}

static void devtcp_get_channels(struct net_device *dev, struct ethtool_channels *ch)
{
	ch->max_combined = dev->num_rx_queues;
	ch->combined_count = dev->real_num_rx_queues;
}

static int devtcp_set_channels(struct net_device *dev, struct ethtool_channels *ch)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	u32 old = dev->real_num_rx_queues;
	int err, q;

	/* The core has checked the range and the RSS table against the count. */
	if (ch->combined_count == old)
		return 0;
	q = devtcp_provider_queue(dev, ch->combined_count);
	if (q >= 0) {
		netdev_warn(dev, "channels: queue %d has a memory provider bound: unbind it first\n",
			    q);
		return -EBUSY;
	}
	err = devtcp_queues_restart(priv, ch->combined_count);
	if (err && dev->real_num_rx_queues != old)
		devtcp_queues_restart(priv, old);
	return err;
}

static void devtcp_get_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
				 struct kernel_ethtool_ringparam *kring,
				 struct netlink_ext_ack *extack)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	ring->rx_max_pending = DEVTCP_RING_MAX;
	ring->tx_max_pending = DEVTCP_RING_MAX;
	ring->rx_pending = priv->rx_ring_size;
	ring->tx_pending = priv->tx_ring_size;
	kring->tcp_data_split = priv->hds ? ETHTOOL_TCP_DATA_SPLIT_ENABLED :
					    ETHTOOL_TCP_DATA_SPLIT_DISABLED;
	devtcp_ring_put_hds_thresh(kring, priv->hds_thresh, DEVTCP_HDS_THRESH_MAX);
}

static int devtcp_set_ringparam(struct net_device *dev, struct ethtool_ringparam *ring,
				struct kernel_ethtool_ringparam *kring,
				struct netlink_ext_ack *extack)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	u32 old_rx = priv->rx_ring_size, old_tx = priv->tx_ring_size;
	bool hds = kring->tcp_data_split == ETHTOOL_TCP_DATA_SPLIT_ENABLED;
	u32 old_thresh = priv->hds_thresh;
	bool old_hds = priv->hds;
	int err, q;

	q = devtcp_provider_queue(dev, 0);
	if (q >= 0 && kring->tcp_data_split != ETHTOOL_TCP_DATA_SPLIT_ENABLED) {
		NL_SET_ERR_MSG_FMT(extack,
				   "queue %d has a memory provider bound, which needs header split",
				   q);
		return -EBUSY;
	}
	if (ring->rx_pending < DEVTCP_RING_MIN || ring->tx_pending < DEVTCP_RING_MIN) {
		NL_SET_ERR_MSG_FMT(extack, "ring sizes must be at least %d", DEVTCP_RING_MIN);
		return -EINVAL;
	}
	/* The core has checked the maximums and hds-thresh <= hds_thresh_max. */
	/* Nothing changes: no restart, unless the queues are down after a failed one. */
	if (ring->rx_pending == old_rx && ring->tx_pending == old_tx && hds == old_hds &&
	    devtcp_ring_hds_thresh(kring, old_thresh) == old_thresh &&
	    (priv->queues_open || !netif_running(dev)))
		return 0;
	priv->rx_ring_size = ring->rx_pending;
	priv->tx_ring_size = ring->tx_pending;
	/*
	 * "auto" leaves it to the device, which splits only when told to:
	 * binding a memory provider needs "enabled" in the core's config
	 * anyway, and the state we report must not claim a split it refuses.
	 */
	priv->hds = hds;
	priv->hds_thresh = devtcp_ring_hds_thresh(kring, old_thresh);

	err = devtcp_queues_restart(priv, dev->real_num_rx_queues);
	if (err) {
		priv->rx_ring_size = old_rx;
		priv->tx_ring_size = old_tx;
		priv->hds = old_hds;
		priv->hds_thresh = old_thresh;
		if (devtcp_queues_restart(priv, dev->real_num_rx_queues))
			NL_SET_ERR_MSG(extack,
				       "queues down: no traffic until the device is set down and up");
		else
			NL_SET_ERR_MSG(extack, "cannot restart the queues with the new rings");
	}
	return err;
}

static __maybe_unused u32 devtcp_get_rx_ring_count(struct net_device *dev)
{
	return dev->real_num_rx_queues;
}

static u32 devtcp_get_rxfh_key_size(struct net_device *dev)
{
	return DEVTCP_RSS_KEY_SIZE;
}

static u32 devtcp_get_rxfh_indir_size(struct net_device *dev)
{
	return DEVTCP_RSS_INDIR_SIZE;
}

static int devtcp_get_rxfh(struct net_device *dev, struct ethtool_rxfh_param *rxfh)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	rxfh->hfunc = ETH_RSS_HASH_TOP;
	if (rxfh->indir)
		memcpy(rxfh->indir, priv->rss.indir, sizeof(priv->rss.indir));
	if (rxfh->key)
		memcpy(rxfh->key, priv->rss.key, sizeof(priv->rss.key));
	return 0;
}

static int devtcp_set_rxfh(struct net_device *dev, struct ethtool_rxfh_param *rxfh,
			   struct netlink_ext_ack *extack)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	int i;

	if (rxfh->hfunc != ETH_RSS_HASH_NO_CHANGE && rxfh->hfunc != ETH_RSS_HASH_TOP) {
		NL_SET_ERR_MSG(extack, "devtcp hashes with Toeplitz only");
		return -EOPNOTSUPP;
	}
	/* The core has checked every entry against the channel count. */
	if (rxfh->indir)
		for (i = 0; i < DEVTCP_RSS_INDIR_SIZE; i++)
			WRITE_ONCE(priv->rss.indir[i], rxfh->indir[i]);
	if (rxfh->key)
		memcpy(priv->rss.key, rxfh->key, sizeof(priv->rss.key));
	return 0;
}

static const char devtcp_rxq_stat_names[][ETH_GSTRING_LEN] = {
	"packets", "bytes", "split_packets", "alloc_fail", "restarts", "dma_faults",
	"malformed", "csum_unnecessary", "csum_none", "csum_bad", "csum_drops", "gro_packets",
	"gro_wire_packets", "misqueued", "window_misses",
};

static const char devtcp_txq_stat_names[][ETH_GSTRING_LEN] = {
	"packets", "bytes", "dropped", "stopped",
};

#define DEVTCP_RXQ_STATS ARRAY_SIZE(devtcp_rxq_stat_names)
#define DEVTCP_TXQ_STATS ARRAY_SIZE(devtcp_txq_stat_names)

static int devtcp_get_sset_count(struct net_device *dev, int sset)
{
	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return dev->real_num_rx_queues * DEVTCP_RXQ_STATS +
	       dev->real_num_tx_queues * DEVTCP_TXQ_STATS + 1 + DEVTCP_FAULT_NSTATS;
}

static void devtcp_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	int q, i;

	if (sset != ETH_SS_STATS)
		return;
	for (q = 0; q < dev->real_num_rx_queues; q++)
		for (i = 0; i < DEVTCP_RXQ_STATS; i++)
			ethtool_sprintf(&data, "rx%d_%s", q, devtcp_rxq_stat_names[i]);
	for (q = 0; q < dev->real_num_tx_queues; q++)
		for (i = 0; i < DEVTCP_TXQ_STATS; i++)
			ethtool_sprintf(&data, "tx%d_%s", q, devtcp_txq_stat_names[i]);
	ethtool_puts(&data, "rx_ntuple_drops");
	for (i = 0; i < DEVTCP_FAULT_NSTATS; i++)
		ethtool_puts(&data, devtcp_fault_stat_names[i]);
}

static void devtcp_get_ethtool_stats(struct net_device *dev, struct ethtool_stats *stats,
				     u64 *data)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rxq_stats rs;
	struct devtcp_txq_stats ts;
	int q;

	for (q = 0; q < dev->real_num_rx_queues; q++) {
		devtcp_rxq_stats_read(&priv->rxq[q], &rs);
		*data++ = rs.packets;
		*data++ = rs.bytes;
		*data++ = rs.split_packets;
		*data++ = rs.alloc_fail;
		*data++ = priv->rxq[q].restarts;
		*data++ = rs.dma_faults;
		*data++ = rs.malformed;
		*data++ = rs.csum_unnecessary;
		*data++ = rs.csum_none;
		*data++ = rs.csum_bad;
		*data++ = rs.csum_drops;
		*data++ = rs.gro_packets;
		*data++ = rs.gro_wire_packets;
		*data++ = rs.misqueued;
		*data++ = rs.window_misses;
	}
	for (q = 0; q < dev->real_num_tx_queues; q++) {
		devtcp_txq_stats_read(&priv->txq[q], &ts);
		*data++ = ts.packets;
		*data++ = ts.bytes;
		*data++ = ts.dropped;
		*data++ = ts.stopped;
	}
	*data++ = atomic64_read(&priv->ntuple_drops);
	for (q = 0; q < DEVTCP_FAULT_NSTATS; q++)
		*data++ = atomic64_read(&priv->fault.stats[q]);
}

const struct ethtool_ops devtcp_ethtool_ops = {
	/* Changing queue counts regrafts the mq qdisc, which needs RTNL. */
	DEVTCP_ETHTOOL_NEEDS_RTNL(ETHTOOL_OP_NEEDS_RTNL_SCHANNELS |
				  ETHTOOL_OP_NEEDS_RTNL_SRINGPARAM)
	.supported_ring_params	= ETHTOOL_RING_USE_TCP_DATA_SPLIT |
				  DEVTCP_RING_USE_HDS_THRS,
	.rxfh_per_ctx_key	= 1,
	.rxfh_max_num_contexts	= DEVTCP_RSS_MAX_CTX,
	.get_drvinfo		= devtcp_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_channels		= devtcp_get_channels,
	.set_channels		= devtcp_set_channels,
	.get_ringparam		= devtcp_get_ringparam,
	.set_ringparam		= devtcp_set_ringparam,
	DEVTCP_ETHTOOL_RX_RING_COUNT(devtcp_get_rx_ring_count)
	.get_rxfh_key_size	= devtcp_get_rxfh_key_size,
	.get_rxfh_indir_size	= devtcp_get_rxfh_indir_size,
	.get_rxfh		= devtcp_get_rxfh,
	.set_rxfh		= devtcp_set_rxfh,
	.get_rxnfc		= devtcp_get_rxnfc,
	.set_rxnfc		= devtcp_set_rxnfc,
	.create_rxfh_context	= devtcp_create_rxfh_context,
	.modify_rxfh_context	= devtcp_modify_rxfh_context,
	.remove_rxfh_context	= devtcp_remove_rxfh_context,
	.get_sset_count		= devtcp_get_sset_count,
	.get_strings		= devtcp_get_strings,
	.get_ethtool_stats	= devtcp_get_ethtool_stats,
};
