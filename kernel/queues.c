// SPDX-License-Identifier: GPL-2.0
/*
 * Queue management for the core: single RX queue restarts with new memory
 * (how the core installs and removes devmem and io_uring memory providers),
 * and a sysfs hook that restarts a queue on demand for tests.
 */
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <net/netdev_queues.h>
#include <net/netdev_rx_queue.h>
#include <net/page_pool/types.h>

#include "devtcp.h"

static int devtcp_queue_mem_alloc(struct net_device *dev, DEVTCP_QCFG void *per_queue_mem,
				  int idx)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	/* A failed channel or ring change left the device with no queues. */
	if (!priv->queues_open)
		return -ENETDOWN;
	return devtcp_rx_mem_alloc(&priv->rxq[idx], per_queue_mem, DEVTCP_QCFG_PAGE_SIZE);
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

	devtcp_napi_disable(&rxq->napi);
	/* The core frees these pools after our NAPI runs again. */
	page_pool_disable_direct_recycling(rxq->mem.hdr_pool);
	page_pool_disable_direct_recycling(rxq->mem.data_pool);
	*(struct devtcp_rx_mem *)per_queue_mem = rxq->mem;
	memset(&rxq->mem, 0, sizeof(rxq->mem));
	return 0;
}

static int devtcp_queue_start(struct net_device *dev, DEVTCP_QCFG void *per_queue_mem, int idx)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_rxq *rxq = &priv->rxq[idx];

	rxq->mem = *(struct devtcp_rx_mem *)per_queue_mem;
	rxq->restarts++;
	devtcp_rx_mem_attach(rxq);
	devtcp_napi_enable(&rxq->napi);
	local_bh_disable();
	devtcp_napi_kick(rxq);
	local_bh_enable();
	return 0;
}

/*
 * The highest RX queue from @from on with a memory provider (devmem or
 * io_uring) bound, or -1. Newer cores refuse what would break a binding
 * (header split off, fewer channels) before calling us; 6.12's does not.
 */
int devtcp_provider_queue(struct net_device *dev, u32 from)
{
	int i;

	for (i = dev->real_num_rx_queues - 1; i >= (int)from; i--) {
		const struct netdev_rx_queue *rxq = __netif_get_rx_queue(dev, i);

		if (rxq->mp_params.mp_ops || rxq->mp_params.mp_priv)
			return i;
	}
	return -1;
}

/*
 * The device that maps dma-bufs for devmem RX and TX and io_uring areas.
 * Bindings made here may outlive the module (see devtcp_exit()).
 */
static __maybe_unused struct device *devtcp_queue_get_dma_dev(struct net_device *dev, int idx)
{
	devtcp_note_provider();
	return devtcp_dma_dev();
}

#ifdef DEVTCP_HAS_RX_PAGE_SIZE
static void devtcp_default_qcfg(struct net_device *dev, struct netdev_queue_config *qcfg)
{
	qcfg->rx_page_size = PAGE_SIZE;
}

/* The page pool takes any order; a bound keeps one buffer's DMA write short. */
static int devtcp_validate_qcfg(struct net_device *dev, struct netdev_queue_config *qcfg,
				struct netlink_ext_ack *extack)
{
	if (qcfg->rx_page_size < PAGE_SIZE || qcfg->rx_page_size > DEVTCP_MAX_RX_PAGE_SIZE ||
	    !is_power_of_2(qcfg->rx_page_size)) {
		NL_SET_ERR_MSG_FMT(extack,
				   "rx-page-size %u: devtcp takes a power of two from %lu to %u",
				   qcfg->rx_page_size, PAGE_SIZE, DEVTCP_MAX_RX_PAGE_SIZE);
		return -ERANGE;
	}
	return 0;
}
#endif

const struct netdev_queue_mgmt_ops devtcp_queue_mgmt_ops = {
	.ndo_queue_mem_size	= sizeof(struct devtcp_rx_mem),
	.ndo_queue_mem_alloc	= devtcp_queue_mem_alloc,
	.ndo_queue_mem_free	= devtcp_queue_mem_free,
	.ndo_queue_start	= devtcp_queue_start,
	.ndo_queue_stop		= devtcp_queue_stop,
	DEVTCP_QUEUE_DMA_DEV(devtcp_queue_get_dma_dev)
	DEVTCP_QCFG_OPS(devtcp_default_qcfg, devtcp_validate_qcfg)
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
	devtcp_ops_lock(dev);
	if (!netif_running(dev))
		err = -ENETDOWN;
	else if (idx >= dev->real_num_rx_queues)
		err = -ERANGE;
	else
		err = devtcp_rx_queue_restart(dev, idx);
	devtcp_ops_unlock(dev);
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

