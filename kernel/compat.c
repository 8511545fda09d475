// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel differences that need a function body (see compat.h).
 */
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <net/netdev_queues.h>
#include <net/netdev_rx_queue.h>

#include "devtcp.h"

#ifdef DEVTCP_HAS_NEWLINK_PARAMS
int devtcp_newlink(struct net_device *dev, struct rtnl_newlink_params *params,
		   struct netlink_ext_ack *extack)
{
	return devtcp_new_pair(dev, NULL, rtnl_newlink_peer_net(params), params->tb,
			       params->data, extack);
}
#else
int devtcp_newlink(struct net *src_net, struct net_device *dev, struct nlattr *tb[],
		   struct nlattr *data[], struct netlink_ext_ack *extack)
{
	return devtcp_new_pair(dev, src_net, NULL, tb, data, extack);
}
#endif

#ifdef DEVTCP_HAS_QUEUE_RESTART_EXPORT
MODULE_IMPORT_NS("NETDEV_INTERNAL");

int devtcp_rx_queue_restart(struct net_device *dev, unsigned int idx)
{
	return netdev_rx_queue_restart(dev, idx);
}
#else
/*
 * The core's restart, which such kernels do not export: new memory first,
 * then stop and start, and the old memory back if the new will not start.
 * Under RTNL, as the core's own restarts (memory provider binding) are.
 */
int devtcp_rx_queue_restart(struct net_device *dev, unsigned int idx)
{
	const struct netdev_queue_mgmt_ops *ops = dev->queue_mgmt_ops;
	void *new_mem, *old_mem;
	int err;

	ASSERT_RTNL();
	new_mem = kvzalloc(ops->ndo_queue_mem_size, GFP_KERNEL);
	old_mem = kvzalloc(ops->ndo_queue_mem_size, GFP_KERNEL);
	err = -ENOMEM;
	if (!new_mem || !old_mem)
		goto out;
	err = ops->ndo_queue_mem_alloc(dev, new_mem, idx);
	if (err)
		goto out;
	err = ops->ndo_queue_stop(dev, old_mem, idx);
	if (err)
		goto out_free_new;
	err = ops->ndo_queue_start(dev, new_mem, idx);
	if (err) {
		if (ops->ndo_queue_start(dev, old_mem, idx))
			netdev_err(dev, "queue %u: cannot restart, not even on its old memory\n",
				   idx);
		goto out_free_new;
	}
	ops->ndo_queue_mem_free(dev, old_mem);
	goto out;

out_free_new:
	ops->ndo_queue_mem_free(dev, new_mem);
out:
	kvfree(old_mem);
	kvfree(new_mem);
	return err;
}
#endif
