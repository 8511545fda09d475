// SPDX-License-Identifier: GPL-2.0
/*
 * The devtcp link type: creation and deletion of connected pairs through
 * rtnetlink, and the netdev operations that start and stop the queues.
 */
#include <linux/etherdevice.h>
#include <linux/rtnetlink.h>
#include <net/netdev_queues.h>
#include <net/rtnetlink.h>

#include <linux/devtcp.h>

#include "devtcp.h"

static struct rtnl_link_ops devtcp_link_ops;

static void devtcp_queues_down(struct devtcp_priv *priv)
{
	struct net_device *dev = priv->dev;
	int i;

	WRITE_ONCE(priv->up, false);
	/*
	 * No peer is still inside devtcp_start_xmit() on our wire rings,
	 * devtcp_tx_complete() on our completion rings or waking our TX
	 * queues (devtcp_rx_wake_senders() checks ->up); frames we sent
	 * before now will not be completed to the new rings.
	 */
	synchronize_net();
	netif_tx_disable(dev);
	if (!priv->queues_open)
		return;
	devtcp_fault_flush(priv);
	WRITE_ONCE(priv->gen, priv->gen + 1);
	for (i = 0; i < dev->real_num_rx_queues; i++)
		devtcp_rxq_close(&priv->rxq[i]);
	priv->queues_open = false;
}

static int devtcp_queues_up(struct devtcp_priv *priv)
{
	struct net_device *dev = priv->dev;
	int i, err;

	for (i = 0; i < dev->real_num_rx_queues; i++) {
		err = devtcp_rxq_open(&priv->rxq[i]);
		if (err)
			goto err_close;
	}
	priv->queues_open = true;
	/* Pairs with smp_load_acquire() in devtcp_tx_complete(). */
	smp_store_release(&priv->up, true);
	return 0;

err_close:
	while (i--)
		devtcp_rxq_close(&priv->rxq[i]);
	return err;
}

/*
 * Our queues run: with the peer's running too, both ends have a carrier, and
 * the peer's TX queues that waited for our wire may go again. RTNL held.
 */
static void devtcp_link_ready(struct devtcp_priv *priv)
{
	struct net_device *peer = rtnl_dereference(priv->peer);
	struct devtcp_priv *ppriv;

	if (!peer || !netif_running(peer))
		return;
	ppriv = netdev_priv(peer);
	if (!ppriv->up)
		return;
	netif_carrier_on(priv->dev);
	netif_carrier_on(peer);
	devtcp_tx_wake_waiting(ppriv);
}

/* No queues on one end: neither end has a carrier. RTNL held. */
static void devtcp_link_lost(struct devtcp_priv *priv)
{
	struct net_device *peer = rtnl_dereference(priv->peer);

	netif_carrier_off(priv->dev);
	if (peer)
		netif_carrier_off(peer);
}

/*
 * Applies a new channel count or ring layout: a running device stops its
 * queues, changes, and starts them again with fresh memory. If they cannot
 * start, the device stays up with no queues and no carrier (nothing is sent
 * or received) until it is brought down and up, or a later restart succeeds.
 */
int devtcp_queues_restart(struct devtcp_priv *priv, u32 channels)
{
	struct net_device *dev = priv->dev;
	bool running = netif_running(dev);
	int err = 0;

	if (running)
		devtcp_queues_down(priv);
	if (channels != dev->real_num_rx_queues) {
		err = netif_set_real_num_queues(dev, channels, channels);
		if (!err && !netif_is_rxfh_configured(dev))
			devtcp_rss_reset_indir(priv, channels);
	}
	if (!running)
		return err;
	/* On a failed count change, the old count is in place: reopen it. */
	if (!devtcp_queues_up(priv)) {
		netif_tx_wake_all_queues(dev);
		devtcp_link_ready(priv);
		return err;
	}
	devtcp_link_lost(priv);
	netdev_err(dev, "queues could not be restarted; the device passes no traffic until it is set down and up\n");
	return err ?: -ENOMEM;
}

static int devtcp_open(struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct net_device *peer = rtnl_dereference(priv->peer);
	int err;

	if (!peer)
		return -ENOTCONN;
	err = devtcp_queues_up(priv);
	if (err)
		return err;
	netif_tx_start_all_queues(dev);
	devtcp_link_ready(priv);
	return 0;
}

static int devtcp_stop(struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	devtcp_link_lost(priv);
	devtcp_queues_down(priv);
	return 0;
}

static int devtcp_set_features(struct net_device *dev, netdev_features_t features)
{
	/* Rules exist only while ntuple is on (see ntuple.c). */
	if ((dev->features & NETIF_F_NTUPLE) && !(features & NETIF_F_NTUPLE))
		devtcp_ntuple_flush(netdev_priv(dev));
	return 0;
}

static int devtcp_get_iflink(const struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct net_device *peer;
	int iflink;

	rcu_read_lock();
	peer = rcu_dereference(priv->peer);
	iflink = peer ? READ_ONCE(peer->ifindex) : 0;
	rcu_read_unlock();
	return iflink;
}

static int devtcp_dev_init(struct net_device *dev);
static void devtcp_dev_uninit(struct net_device *dev);

static const struct net_device_ops devtcp_netdev_ops = {
	.ndo_open		= devtcp_open,
	.ndo_stop		= devtcp_stop,
	.ndo_start_xmit		= devtcp_start_xmit,
	.ndo_get_stats64	= devtcp_get_stats64,
	.ndo_set_features	= devtcp_set_features,
	.ndo_set_mac_address	= eth_mac_addr,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_get_iflink		= devtcp_get_iflink,
	.ndo_tx_timeout		= devtcp_tx_timeout,
	.ndo_init		= devtcp_dev_init,
	.ndo_uninit		= devtcp_dev_uninit,
};

static int devtcp_dev_init(struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	int i;

	/* Deleting a pair closes both ends under both instance locks. */
	netdev_lockdep_set_classes(dev);
	priv->rxq = kvcalloc(dev->num_rx_queues, sizeof(*priv->rxq), GFP_KERNEL);
	priv->txq = kvcalloc(dev->num_tx_queues, sizeof(*priv->txq), GFP_KERNEL);
	if (!priv->rxq || !priv->txq) {
		kvfree(priv->rxq);
		kvfree(priv->txq);
		return -ENOMEM;
	}
	for (i = 0; i < dev->num_rx_queues; i++) {
		priv->rxq[i].priv = priv;
		priv->rxq[i].idx = i;
		u64_stats_init(&priv->rxq[i].stats.syncp);
	}
	for (i = 0; i < dev->num_tx_queues; i++)
		u64_stats_init(&priv->txq[i].stats.syncp);
	devtcp_fault_init_queues(priv);
	devtcp_rss_init(priv);
	return 0;
}

static void devtcp_dev_uninit(struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	/* The core calls us without the locks that guard the rules. */
	devtcp_ops_lock(dev);
	mutex_lock(&dev->ethtool->rss_lock);
	devtcp_ntuple_free(priv);
	mutex_unlock(&dev->ethtool->rss_lock);
	devtcp_ops_unlock(dev);
	kvfree(priv->rxq);
	kvfree(priv->txq);
}

static void devtcp_setup(struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);

	ether_setup(dev);
	dev->netdev_ops = &devtcp_netdev_ops;
	dev->ethtool_ops = &devtcp_ethtool_ops;
	dev->queue_mgmt_ops = &devtcp_queue_mgmt_ops;
	dev->stat_ops = &devtcp_stat_ops;
	dev->sysfs_groups[0] = &devtcp_sysfs_group;
	dev->needs_free_netdev = true;
	dev->priv_flags &= ~IFF_TX_SKB_SHARING;
	dev->priv_flags |= IFF_LIVE_ADDR_CHANGE;
	dev->lltx = false;
	/* devmem TX: the device reads dma-buf frags by DMA address (dma.c). */
	devtcp_set_netmem_tx(dev);
	dev->max_mtu = DEVTCP_MAX_MTU;

	/*
	 * The sending device fills offloaded checksums, the receiving one
	 * verifies TCP and UDP checksums (rx.c); TSO frames cross whole.
	 */
	dev->hw_features = NETIF_F_SG | NETIF_F_HW_CSUM | NETIF_F_RXCSUM |
			   NETIF_F_TSO | NETIF_F_TSO6 | NETIF_F_GRO | NETIF_F_NTUPLE;
	/* Flow steering is opt-in (ethtool -K ntuple on), as on most NICs. */
	dev->features = dev->hw_features & ~NETIF_F_NTUPLE;
	dev->vlan_features = dev->features;
	/* A TSO frame is received whole, like hardware GRO: 64 KiB at most. */
	netif_set_tso_max_size(dev, GSO_LEGACY_MAX_SIZE);

	priv->dev = dev;
	devtcp_fault_setup(priv);
	priv->rx_ring_size = DEVTCP_RING_DEFAULT;
	priv->tx_ring_size = DEVTCP_RING_DEFAULT;
	dev->tx_queue_len = DEVTCP_RING_DEFAULT;
}

static unsigned int devtcp_default_queues(void)
{
	return DEVTCP_DEFAULT_QUEUES;
}

static int devtcp_validate(struct nlattr *tb[], struct nlattr *data[],
			   struct netlink_ext_ack *extack)
{
	if (tb[IFLA_ADDRESS]) {
		if (nla_len(tb[IFLA_ADDRESS]) != ETH_ALEN) {
			NL_SET_ERR_MSG_ATTR(extack, tb[IFLA_ADDRESS], "address must be 6 bytes");
			return -EINVAL;
		}
		if (!is_valid_ether_addr(nla_data(tb[IFLA_ADDRESS]))) {
			NL_SET_ERR_MSG_ATTR(extack, tb[IFLA_ADDRESS],
					    "address is not a unicast MAC");
			return -EADDRNOTAVAIL;
		}
	}
	if (tb[IFLA_MTU] && nla_get_u32(tb[IFLA_MTU]) > DEVTCP_MAX_MTU) {
		NL_SET_ERR_MSG_ATTR(extack, tb[IFLA_MTU], "devtcp MTU is at most 9000");
		return -EINVAL;
	}
	return 0;
}

static int devtcp_check_queues(struct nlattr *tb[], struct netlink_ext_ack *extack)
{
	static const int attrs[] = { IFLA_NUM_TX_QUEUES, IFLA_NUM_RX_QUEUES };
	int i;

	for (i = 0; i < ARRAY_SIZE(attrs); i++) {
		if (tb[attrs[i]] && nla_get_u32(tb[attrs[i]]) > DEVTCP_MAX_QUEUES) {
			NL_SET_ERR_MSG_ATTR_FMT(extack, tb[attrs[i]],
						"devtcp supports at most %d queues",
						DEVTCP_MAX_QUEUES);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Queues are combined: TX queue i of one end feeds RX queue i of the other
 * and shares its state, so a device needs as many of each. Checked on the
 * device, since one attribute alone leaves the other at its default.
 */
static int devtcp_check_combined(const struct net_device *dev, struct netlink_ext_ack *extack)
{
	if (dev->num_tx_queues == dev->num_rx_queues)
		return 0;
	NL_SET_ERR_MSG_FMT(extack,
			   "devtcp queues are combined: %u TX and %u RX queues (numtxqueues must equal numrxqueues; the default is %d)",
			   dev->num_tx_queues, dev->num_rx_queues, DEVTCP_DEFAULT_QUEUES);
	return -EINVAL;
}

int devtcp_new_pair(struct net_device *dev, struct net *src_net, struct net *peer_net,
		    struct nlattr *tb[], struct nlattr *data[], struct netlink_ext_ack *extack)
{
	struct nlattr *peer_tb[IFLA_MAX + 1], **tbp = tb;
	unsigned char name_assign_type;
	struct devtcp_priv *priv, *ppriv;
	struct ifinfomsg *ifmp = NULL;
	struct net_device *peer;
	char ifname[IFNAMSIZ];
	int err;

	/*
	 * A pair pins rings and page pools no memory cgroup is charged for,
	 * and a user namespace could make any number: the host's admin makes
	 * them (and may move an end into a container).
	 */
	if (!capable(CAP_NET_ADMIN)) {
		NL_SET_ERR_MSG(extack,
			       "devtcp pairs are made by CAP_NET_ADMIN of the initial user namespace");
		return -EPERM;
	}
	err = devtcp_check_queues(tb, extack);
	if (!err)
		err = devtcp_check_combined(dev, extack);
	if (err)
		return err;
	/* Faults apply to what this end sends; the peer starts without. */
	if (data && data[IFLA_DEVTCP_FAULT]) {
		struct devtcp_fault_cfg cfg;
		bool reseed;

		err = devtcp_fault_parse(netdev_priv(dev), data[IFLA_DEVTCP_FAULT], &cfg,
					 &reseed, extack);
		if (err)
			return err;
		devtcp_fault_set(netdev_priv(dev), &cfg, reseed);
	}

	if (data && data[IFLA_DEVTCP_PEER]) {
		ifmp = nla_data(data[IFLA_DEVTCP_PEER]);
		err = rtnl_nla_parse_ifinfomsg(peer_tb, data[IFLA_DEVTCP_PEER], extack);
		if (err < 0)
			return err;
		err = devtcp_validate(peer_tb, NULL, extack);
		if (err < 0)
			return err;
		err = devtcp_check_queues(peer_tb, extack);
		if (err)
			return err;
		tbp = peer_tb;
	}

	if (ifmp && tbp[IFLA_IFNAME]) {
		nla_strscpy(ifname, tbp[IFLA_IFNAME], IFNAMSIZ);
		name_assign_type = NET_NAME_USER;
	} else {
		strscpy(ifname, "devtcp%d");
		name_assign_type = NET_NAME_ENUM;
	}

	peer_net = devtcp_peer_net_get(src_net, peer_net, tbp);
	if (IS_ERR(peer_net))
		return PTR_ERR(peer_net);
	peer = rtnl_create_link(peer_net, ifname, name_assign_type, &devtcp_link_ops,
				tbp, extack);
	put_net(peer_net);
	if (IS_ERR(peer))
		return PTR_ERR(peer);
	err = devtcp_check_combined(peer, extack);
	if (err)
		goto err_free_peer;
	SET_NETDEV_DEV(peer, devtcp_dma_dev());
	if (!ifmp || !tbp[IFLA_ADDRESS])
		eth_hw_addr_random(peer);
	if (ifmp && dev->ifindex)
		peer->ifindex = ifmp->ifi_index;

	err = register_netdevice(peer);
	if (err < 0)
		goto err_free_peer;
	netif_carrier_off(peer);

	err = rtnl_configure_link(peer, ifmp, 0, NULL);
	if (err < 0)
		goto err_unregister_peer;

	SET_NETDEV_DEV(dev, devtcp_dma_dev());
	if (!tb[IFLA_ADDRESS])
		eth_hw_addr_random(dev);

	err = register_netdevice(dev);
	if (err < 0)
		goto err_unregister_peer;
	netif_carrier_off(dev);

	priv = netdev_priv(dev);
	ppriv = netdev_priv(peer);
	rcu_assign_pointer(priv->peer, peer);
	rcu_assign_pointer(ppriv->peer, dev);
	return 0;

err_unregister_peer:
	unregister_netdevice(peer);
	return err;

err_free_peer:
	free_netdev(peer);
	return err;
}

static void devtcp_dellink(struct net_device *dev, struct list_head *head)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct net_device *peer = rtnl_dereference(priv->peer);

	unregister_netdevice_queue(dev, head);
	RCU_INIT_POINTER(priv->peer, NULL);
	if (peer) {
		struct devtcp_priv *ppriv = netdev_priv(peer);

		RCU_INIT_POINTER(ppriv->peer, NULL);
		unregister_netdevice_queue(peer, head);
	}
}

static int devtcp_changelink(struct net_device *dev, struct nlattr *tb[],
			     struct nlattr *data[], struct netlink_ext_ack *extack)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_fault_cfg cfg;
	bool reseed;
	int err;

	if (!data)
		return 0;
	if (data[IFLA_DEVTCP_PEER]) {
		NL_SET_ERR_MSG_ATTR(extack, data[IFLA_DEVTCP_PEER],
				    "the peer of a devtcp device cannot be changed");
		return -EOPNOTSUPP;
	}
	if (!data[IFLA_DEVTCP_FAULT])
		return 0;
	err = devtcp_fault_parse(priv, data[IFLA_DEVTCP_FAULT], &cfg, &reseed, extack);
	if (err)
		return err;
	devtcp_fault_set(priv, &cfg, reseed);
	return 0;
}

static size_t devtcp_get_size(const struct net_device *dev)
{
	return devtcp_fault_get_size();
}

static int devtcp_fill_info(struct sk_buff *skb, const struct net_device *dev)
{
	return devtcp_fault_fill(skb, netdev_priv(dev));
}

static struct net *devtcp_get_link_net(const struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct net_device *peer = rtnl_dereference(priv->peer);

	return peer ? dev_net(peer) : dev_net(dev);
}

static const struct nla_policy devtcp_policy[IFLA_DEVTCP_MAX + 1] = {
	[IFLA_DEVTCP_PEER] = { .len = sizeof(struct ifinfomsg) },
	[IFLA_DEVTCP_FAULT] = { .type = NLA_NESTED },
};

static struct rtnl_link_ops devtcp_link_ops = {
	.kind			= "devtcp",
	.priv_size		= sizeof(struct devtcp_priv),
	.setup			= devtcp_setup,
	.validate		= devtcp_validate,
	.newlink		= devtcp_newlink,
	.changelink		= devtcp_changelink,
	.dellink		= devtcp_dellink,
	.get_size		= devtcp_get_size,
	.fill_info		= devtcp_fill_info,
	.policy			= devtcp_policy,
	.maxtype		= IFLA_DEVTCP_MAX,
	DEVTCP_LINK_PEER_TYPE(IFLA_DEVTCP_PEER)
	.get_link_net		= devtcp_get_link_net,
	.get_num_tx_queues	= devtcp_default_queues,
	.get_num_rx_queues	= devtcp_default_queues,
};

int devtcp_link_init(void)
{
	return rtnl_link_register(&devtcp_link_ops);
}

void devtcp_link_exit(void)
{
	rtnl_link_unregister(&devtcp_link_ops);
}
