// SPDX-License-Identifier: GPL-2.0
/*
 * Counters: consistent snapshots of the per-queue counters, and the views
 * built on them (rtnl link stats, netdev netlink per-queue stats). ethtool -S
 * is in ethtool.c.
 */
#include <linux/netdevice.h>
#include <net/netdev_queues.h>

#include "devtcp.h"

void devtcp_rxq_stats_read(const struct devtcp_rxq *rxq, struct devtcp_rxq_stats *out)
{
	const struct devtcp_rxq_stats *s = &rxq->stats;
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&s->syncp);
		out->packets = s->packets;
		out->bytes = s->bytes;
		out->split_packets = s->split_packets;
		out->alloc_fail = s->alloc_fail;
		out->dma_faults = s->dma_faults;
		out->window_misses = s->window_misses;
		out->malformed = s->malformed;
		out->csum_unnecessary = s->csum_unnecessary;
		out->csum_none = s->csum_none;
		out->csum_bad = s->csum_bad;
		out->csum_drops = s->csum_drops;
		out->gro_packets = s->gro_packets;
		out->gro_wire_packets = s->gro_wire_packets;
		out->misqueued = s->misqueued;
	} while (u64_stats_fetch_retry(&s->syncp, start));
}

void devtcp_txq_stats_read(const struct devtcp_txq *txq, struct devtcp_txq_stats *out)
{
	const struct devtcp_txq_stats *s = &txq->stats;
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&s->syncp);
		out->packets = s->packets;
		out->bytes = s->bytes;
		out->dropped = s->dropped;
		out->stopped = s->stopped;
	} while (u64_stats_fetch_retry(&s->syncp, start));
	out->dropped += atomic64_read(&txq->late_drops);
}

void devtcp_get_stats64(struct net_device *dev, struct rtnl_link_stats64 *s)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rxq_stats rs;
	struct devtcp_txq_stats ts;
	int i;

	for (i = 0; i < dev->num_rx_queues; i++) {
		devtcp_rxq_stats_read(&priv->rxq[i], &rs);
		s->rx_packets += rs.packets;
		s->rx_bytes += rs.bytes;
		s->rx_dropped += rs.alloc_fail + rs.dma_faults + rs.csum_drops;
		s->rx_length_errors += rs.malformed;
		s->rx_errors += rs.malformed;
	}
	for (i = 0; i < dev->num_tx_queues; i++) {
		devtcp_txq_stats_read(&priv->txq[i], &ts);
		s->tx_packets += ts.packets;
		s->tx_bytes += ts.bytes;
		s->tx_dropped += ts.dropped;
	}
	s->rx_dropped += atomic64_read(&priv->ntuple_drops);
}

/* Sums queues [from, to) into @rx and @tx. */
static void devtcp_sum_queues(struct devtcp_priv *priv, int from, int to,
			      struct netdev_queue_stats_rx *rx, struct netdev_queue_stats_tx *tx)
{
	struct devtcp_rxq_stats rs;
	struct devtcp_txq_stats ts;
	int i;

	for (i = from; i < to; i++) {
		devtcp_rxq_stats_read(&priv->rxq[i], &rs);
		rx->packets += rs.packets;
		rx->bytes += rs.bytes;
		rx->alloc_fail += rs.alloc_fail;
		rx->hw_drops += rs.alloc_fail + rs.malformed + rs.dma_faults + rs.csum_drops;
		rx->csum_unnecessary += rs.csum_unnecessary;
		rx->csum_none += rs.csum_none;
		rx->csum_bad += rs.csum_bad;
		devtcp_txq_stats_read(&priv->txq[i], &ts);
		tx->packets += ts.packets;
		tx->bytes += ts.bytes;
		tx->hw_drops += ts.dropped;
		tx->stop += ts.stopped;
	}
}

static void devtcp_get_queue_stats_rx(struct net_device *dev, int idx,
				      struct netdev_queue_stats_rx *rx)
{
	struct netdev_queue_stats_tx unused = {};

	*rx = (struct netdev_queue_stats_rx){};
	devtcp_sum_queues(netdev_priv(dev), idx, idx + 1, rx, &unused);
}

static void devtcp_get_queue_stats_tx(struct net_device *dev, int idx,
				      struct netdev_queue_stats_tx *tx)
{
	struct netdev_queue_stats_rx unused = {};

	*tx = (struct netdev_queue_stats_tx){};
	devtcp_sum_queues(netdev_priv(dev), idx, idx + 1, &unused, tx);
}

/* Counters of queues that channel changes have switched off. */
static void devtcp_get_base_stats(struct net_device *dev, struct netdev_queue_stats_rx *rx,
				  struct netdev_queue_stats_tx *tx)
{
	*rx = (struct netdev_queue_stats_rx){};
	*tx = (struct netdev_queue_stats_tx){};
	devtcp_sum_queues(netdev_priv(dev), dev->real_num_rx_queues, dev->num_rx_queues, rx, tx);
}

const struct netdev_stat_ops devtcp_stat_ops = {
	.get_queue_stats_rx	= devtcp_get_queue_stats_rx,
	.get_queue_stats_tx	= devtcp_get_queue_stats_tx,
	.get_base_stats		= devtcp_get_base_stats,
};
