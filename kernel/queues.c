// SPDX-License-Identifier: GPL-2.0
/*
 * Queue management for the core: single RX queue restarts with new memory
 * (how the core installs and removes devmem and io_uring memory providers),
 * per-queue statistics for the netdev netlink family, and a sysfs hook that
 * restarts a queue on demand for tests.
 */
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <net/netdev_lock.h>
#include <net/netdev_queues.h>
#include <net/netdev_rx_queue.h>
#include <net/page_pool/types.h>

#include "devtcp.h"

static int devtcp_queue_mem_alloc(struct net_device *dev, struct netdev_queue_config *qcfg,
				  void *per_queue_mem, int idx)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	return devtcp_rx_mem_alloc(&priv->rxq[idx], per_queue_mem);
}

static void devtcp_queue_mem_free(struct net_device *dev, void *per_queue_mem)
{
	devtcp_rx_mem_free(per_queue_mem);
}

/*
 * Stopping a queue parks its NAPI and hands its memory back to the core.
 * Frames keep waiting on the wire ring (the sender is flow controlled) and
 * are received into the new memory once the queue starts again.
 */
static int devtcp_queue_stop(struct net_device *dev, void *per_queue_mem, int idx)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rxq *rxq = &priv->rxq[idx];

	napi_disable_locked(&rxq->napi);
	/* The core frees these pools after our NAPI runs again. */
	page_pool_disable_direct_recycling(rxq->mem.hdr_pool);
	page_pool_disable_direct_recycling(rxq->mem.data_pool);
	*(struct devtcp_rx_mem *)per_queue_mem = rxq->mem;
	memset(&rxq->mem, 0, sizeof(rxq->mem));
	return 0;
}

static int devtcp_queue_start(struct net_device *dev, struct netdev_queue_config *qcfg,
			      void *per_queue_mem, int idx)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rxq *rxq = &priv->rxq[idx];

	rxq->mem = *(struct devtcp_rx_mem *)per_queue_mem;
	rxq->restarts++;
	napi_enable_locked(&rxq->napi);
	local_bh_disable();
	napi_schedule(&rxq->napi);
	local_bh_enable();
	return 0;
}

const struct netdev_queue_mgmt_ops devtcp_queue_mgmt_ops = {
	.ndo_queue_mem_size	= sizeof(struct devtcp_rx_mem),
	.ndo_queue_mem_alloc	= devtcp_queue_mem_alloc,
	.ndo_queue_mem_free	= devtcp_queue_mem_free,
	.ndo_queue_start	= devtcp_queue_start,
	.ndo_queue_stop		= devtcp_queue_stop,
};

static void devtcp_rxq_read(struct devtcp_rxq *rxq, struct netdev_queue_stats_rx *rx)
{
	struct devtcp_rxq_stats *s = &rxq->stats;
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&s->syncp);
		rx->packets = s->packets;
		rx->bytes = s->bytes;
		rx->alloc_fail = s->alloc_fail;
	} while (u64_stats_fetch_retry(&s->syncp, start));
}

static void devtcp_txq_read(struct devtcp_txq *txq, struct netdev_queue_stats_tx *tx)
{
	struct devtcp_txq_stats *s = &txq->stats;
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&s->syncp);
		tx->packets = s->packets;
		tx->bytes = s->bytes;
		tx->hw_drops = s->dropped;
		tx->stop = s->stopped;
	} while (u64_stats_fetch_retry(&s->syncp, start));
}

static void devtcp_get_queue_stats_rx(struct net_device *dev, int idx,
				      struct netdev_queue_stats_rx *rx)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	devtcp_rxq_read(&priv->rxq[idx], rx);
}

static void devtcp_get_queue_stats_tx(struct net_device *dev, int idx,
				      struct netdev_queue_stats_tx *tx)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	devtcp_txq_read(&priv->txq[idx], tx);
}

/* Counters of queues that channel changes have switched off. */
static void devtcp_get_base_stats(struct net_device *dev, struct netdev_queue_stats_rx *rx,
				  struct netdev_queue_stats_tx *tx)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct netdev_queue_stats_rx r;
	struct netdev_queue_stats_tx t;
	int i;

	rx->packets = 0;
	rx->bytes = 0;
	rx->alloc_fail = 0;
	for (i = dev->real_num_rx_queues; i < dev->num_rx_queues; i++) {
		devtcp_rxq_read(&priv->rxq[i], &r);
		rx->packets += r.packets;
		rx->bytes += r.bytes;
		rx->alloc_fail += r.alloc_fail;
	}
	tx->packets = 0;
	tx->bytes = 0;
	tx->hw_drops = 0;
	tx->stop = 0;
	for (i = dev->real_num_tx_queues; i < dev->num_tx_queues; i++) {
		devtcp_txq_read(&priv->txq[i], &t);
		tx->packets += t.packets;
		tx->bytes += t.bytes;
		tx->hw_drops += t.hw_drops;
		tx->stop += t.stop;
	}
}

const struct netdev_stat_ops devtcp_stat_ops = {
	.get_queue_stats_rx	= devtcp_get_queue_stats_rx,
	.get_queue_stats_tx	= devtcp_get_queue_stats_tx,
	.get_base_stats		= devtcp_get_base_stats,
};

/*
 * /sys/class/net/DEV/devtcp/restart_rx_queue: writing a queue index restarts
 * that queue through the core, as binding a memory provider does.
 */
static ssize_t restart_rx_queue_store(struct device *d, struct device_attribute *attr,
				      const char *buf, size_t count)
{
	struct net_device *dev = to_net_dev(d);
	unsigned int idx;
	int err;

	err = kstrtouint(buf, 0, &idx);
	if (err)
		return err;
	/* sysfs removal waits for us under RTNL: never block on it here. */
	if (!rtnl_trylock())
		return restart_syscall();
	netdev_lock(dev);
	if (!netif_running(dev))
		err = -ENETDOWN;
	else if (idx >= dev->real_num_rx_queues)
		err = -ERANGE;
	else
		err = netdev_rx_queue_restart(dev, idx);
	netdev_unlock(dev);
	rtnl_unlock();
	return err ?: count;
}
static DEVICE_ATTR_WO(restart_rx_queue);

static struct attribute *devtcp_sysfs_attrs[] = {
	&dev_attr_restart_rx_queue.attr,
	NULL,
};

const struct attribute_group devtcp_sysfs_group = {
	.name	= "devtcp",
	.attrs	= devtcp_sysfs_attrs,
};

MODULE_IMPORT_NS("NETDEV_INTERNAL");
