/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place that knows kernels differ. Kbuild finds each feature in the
 * headers of the kernel built against (DEVTCP_HAS_*); devtcp supports
 * 6.12 LTS, the first kernel with devmem TCP receive, and every later one.
 * What 6.12 lacks:
 *
 * - the netdev instance lock (6.15): queue operations and the ethtool and
 *   netdev ops run under RTNL, which the core already holds for them;
 * - rtnl_newlink_params (6.15): newlink takes the source namespace and
 *   finds the peer's itself;
 * - devmem TX (6.15): no net_iov frags ever reach ndo_start_xmit;
 * - hds-thresh (6.14): the device splits every TCP segment;
 * - page_pool_enable_direct_recycling(): pages go back through the ring;
 * - page_pool_dev_alloc_netmem(): compat.h has its own;
 * - netdev_rx_queue_restart() is not exported: the sysfs restart hook runs
 *   the queue operations itself, in the core's order.
 */
#ifndef _DEVTCP_COMPAT_H
#define _DEVTCP_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/netdevice.h>
#include <linux/dma-mapping.h>
#include <linux/ethtool.h>
#include <linux/rtnetlink.h>
#include <net/if_inet6.h>
#include <net/netdev_queues.h>
#include <net/page_pool/helpers.h>
#include <net/rtnetlink.h>

#ifdef DEVTCP_HAS_NETDEV_LOCK
#include <net/netdev_lock.h>
#define devtcp_ops_dereference(p, dev)	netdev_ops_lock_dereference(p, dev)
#define devtcp_ops_lock_held(dev)	lockdep_is_held(&(dev)->lock)

static inline void devtcp_ops_lock(struct net_device *dev)
{
	netdev_lock(dev);
}

static inline void devtcp_ops_unlock(struct net_device *dev)
{
	netdev_unlock(dev);
}

static inline void devtcp_napi_add(struct net_device *dev, struct napi_struct *napi,
				   int (*poll)(struct napi_struct *, int), unsigned int idx)
{
	netif_napi_add_config_locked(dev, napi, poll, idx);
}

static inline void devtcp_napi_del(struct napi_struct *napi)
{
	netif_napi_del_locked(napi);
}

static inline void devtcp_napi_enable(struct napi_struct *napi)
{
	napi_enable_locked(napi);
}

static inline void devtcp_napi_disable(struct napi_struct *napi)
{
	napi_disable_locked(napi);
}
#else
/* The callers hold RTNL, the lock these ops run under on such kernels. */
#define devtcp_ops_dereference(p, dev)	({ (void)(dev); rtnl_dereference(p); })
#define devtcp_ops_lock_held(dev)	({ (void)(dev); lockdep_rtnl_is_held(); })

static inline void devtcp_ops_lock(struct net_device *dev)
{
	ASSERT_RTNL();
}

static inline void devtcp_ops_unlock(struct net_device *dev)
{
}

static inline void devtcp_napi_add(struct net_device *dev, struct napi_struct *napi,
				   int (*poll)(struct napi_struct *, int), unsigned int idx)
{
	netif_napi_add(dev, napi, poll);
}

static inline void devtcp_napi_del(struct napi_struct *napi)
{
	netif_napi_del(napi);
}

static inline void devtcp_napi_enable(struct napi_struct *napi)
{
	napi_enable(napi);
}

static inline void devtcp_napi_disable(struct napi_struct *napi)
{
	napi_disable(napi);
}
#endif

/* Struct members that only some kernels have, for ops tables. */
#ifdef DEVTCP_HAS_QUEUE_CONFIG
#define DEVTCP_QCFG			struct netdev_queue_config *qcfg,
#else
#define DEVTCP_QCFG
#endif
/*
 * rx-page-size (7.3): a memory provider may ask for payload buffers larger
 * than a page. Older kernels always give a page.
 */
#ifdef DEVTCP_HAS_RX_PAGE_SIZE
#define DEVTCP_QCFG_OPS(dflt, validate)	.ndo_default_qcfg = (dflt), \
					.ndo_validate_qcfg = (validate), \
					.supported_params = QCFG_RX_PAGE_SIZE,
/* In a queue op declared with DEVTCP_QCFG: the page size its qcfg asks for. */
#define DEVTCP_QCFG_PAGE_SIZE		(qcfg->rx_page_size ?: PAGE_SIZE)

static inline u32 devtcp_rx_page_size(struct net_device *dev, unsigned int idx)
{
	struct netdev_queue_config qcfg;

	netdev_queue_config(dev, idx, &qcfg);
	return qcfg.rx_page_size ?: PAGE_SIZE;
}
#else
#define DEVTCP_QCFG_OPS(dflt, validate)
#define DEVTCP_QCFG_PAGE_SIZE		PAGE_SIZE

static inline u32 devtcp_rx_page_size(struct net_device *dev, unsigned int idx)
{
	return PAGE_SIZE;
}
#endif
#ifdef DEVTCP_HAS_QUEUE_DMA_DEV
#define DEVTCP_QUEUE_DMA_DEV(fn)	.ndo_queue_get_dma_dev = (fn),
#else
#define DEVTCP_QUEUE_DMA_DEV(fn)
#endif
#ifdef DEVTCP_HAS_OP_NEEDS_RTNL
#define DEVTCP_ETHTOOL_NEEDS_RTNL(ops)	.op_needs_rtnl = (ops),
#else
#define DEVTCP_ETHTOOL_NEEDS_RTNL(ops)
#endif
#ifdef DEVTCP_HAS_GET_RX_RING_COUNT
#define DEVTCP_ETHTOOL_RX_RING_COUNT(fn) .get_rx_ring_count = (fn),
#else
#define DEVTCP_ETHTOOL_RX_RING_COUNT(fn)
#endif
#ifdef DEVTCP_HAS_NEWLINK_PARAMS
#define DEVTCP_LINK_PEER_TYPE(type)	.peer_type = (type),
#else
#define DEVTCP_LINK_PEER_TYPE(type)
#endif

#ifdef DEVTCP_HAS_HDS_THRESH
#define DEVTCP_RING_USE_HDS_THRS	ETHTOOL_RING_USE_HDS_THRS
static inline void devtcp_ring_put_hds_thresh(struct kernel_ethtool_ringparam *kring,
					      u32 thresh, u32 max)
{
	kring->hds_thresh = thresh;
	kring->hds_thresh_max = max;
}

static inline u32 devtcp_ring_hds_thresh(const struct kernel_ethtool_ringparam *kring,
					 u32 old)
{
	return kring->hds_thresh;
}
#else
#define DEVTCP_RING_USE_HDS_THRS	0
static inline void devtcp_ring_put_hds_thresh(struct kernel_ethtool_ringparam *kring,
					      u32 thresh, u32 max)
{
}

static inline u32 devtcp_ring_hds_thresh(const struct kernel_ethtool_ringparam *kring,
					 u32 old)
{
	return old;
}
#endif

/* devmem TX: the device reads dma-buf frags by their DMA address. */
#ifdef DEVTCP_HAS_DEVMEM_TX
static inline void devtcp_set_netmem_tx(struct net_device *dev)
{
	dev->netmem_tx = NETMEM_TX_DMA;
}

static inline dma_addr_t devtcp_frag_dma_map(struct device *dev, const skb_frag_t *f,
					     unsigned int off, unsigned int len)
{
	return __skb_frag_dma_map(dev, f, off, len, DMA_TO_DEVICE);
}
#else
static inline void devtcp_set_netmem_tx(struct net_device *dev)
{
}

/* No net_iov frag reaches a driver without devmem TX. */
static inline dma_addr_t devtcp_frag_dma_map(struct device *dev, const skb_frag_t *f,
					     unsigned int off, unsigned int len)
{
	return DMA_MAPPING_ERROR;
}
#endif

/*
 * newlink: devtcp_newlink() (compat.c) has the core's signature and calls
 * devtcp_new_pair() (link.c) with either the peer's namespace, where the
 * core finds it, or the source namespace; devtcp_peer_net_get() turns that
 * into a referenced peer namespace either way.
 */
int devtcp_new_pair(struct net_device *dev, struct net *src_net, struct net *peer_net,
		    struct nlattr *tb[], struct nlattr *data[], struct netlink_ext_ack *extack);
#ifdef DEVTCP_HAS_NEWLINK_PARAMS
int devtcp_newlink(struct net_device *dev, struct rtnl_newlink_params *params,
		   struct netlink_ext_ack *extack);

static inline struct net *devtcp_peer_net_get(struct net *src_net, struct net *peer_net,
					      struct nlattr *peer_tb[])
{
	return get_net(peer_net);
}
#else
int devtcp_newlink(struct net *src_net, struct net_device *dev, struct nlattr *tb[],
		   struct nlattr *data[], struct netlink_ext_ack *extack);

/* As the core checks for the device itself: CAP_NET_ADMIN over the peer's. */
static inline struct net *devtcp_peer_net_get(struct net *src_net, struct net *peer_net,
					      struct nlattr *peer_tb[])
{
	struct net *net = rtnl_link_get_net(src_net, peer_tb);

	if (!IS_ERR(net) && !ns_capable(net->user_ns, CAP_NET_ADMIN)) {
		put_net(net);
		return ERR_PTR(-EPERM);
	}
	return net;
}
#endif

#ifndef DEVTCP_HAS_HRTIMER_SETUP
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*function)(struct hrtimer *),
				 clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#endif

/* 7.x forwards IPv6 on a device whose force_forwarding is set, too. */
static inline bool devtcp_ip6_force_forwarding(const struct inet6_dev *idev)
{
#ifdef DEVTCP_HAS_IPV6_FORCE_FORWARDING
	return READ_ONCE(idev->cnf.force_forwarding);
#else
	return false;
#endif
}

/*
 * The area of provider buffers @netmem belongs to (its buffers in *niovs, *n
 * of them), or NULL where the kernel keeps areas private (6.12). Not every
 * niov of an area is free: an application may hold it.
 */
#ifdef DEVTCP_HAS_NET_IOV_AREA
static inline const void *devtcp_netmem_area(netmem_ref netmem, struct net_iov **niovs, size_t *n)
{
	struct net_iov_area *area = net_iov_owner(netmem_to_net_iov(netmem));

	*niovs = area->niovs;
	*n = area->num_niovs;
	return area;
}

/* An io_uring zcrx provider: its one area holds all its buffers. */
static inline bool devtcp_netmem_is_iouring(netmem_ref netmem)
{
	return netmem_to_net_iov(netmem)->type == NET_IOV_IOURING;
}
#else
static inline const void *devtcp_netmem_area(netmem_ref netmem, struct net_iov **niovs, size_t *n)
{
	return NULL;
}

static inline bool devtcp_netmem_is_iouring(netmem_ref netmem)
{
	return false;
}
#endif

#ifndef DEVTCP_HAS_PP_IS_UNREADABLE
static inline bool page_pool_is_unreadable(struct page_pool *pool)
{
	return !!pool->mp_ops;
}
#endif

/*
 * Without page_pool_enable_direct_recycling() a pool could learn its NAPI
 * only when created, and destroying such a pool while that NAPI runs (a
 * failed restart) warns: there, pages are recycled through the ring.
 */
#ifndef DEVTCP_HAS_PP_DIRECT_RECYCLING
static inline void page_pool_enable_direct_recycling(struct page_pool *pool,
						     struct napi_struct *napi)
{
}
#endif

/*
 * A page pool buffer of *size bytes; *size becomes what it takes of its page
 * (its truesize: the whole rest of the page when no other buffer would fit).
 */
#ifdef DEVTCP_HAS_PP_ALLOC_NETMEM
static inline netmem_ref devtcp_pp_alloc_netmem(struct page_pool *pool, unsigned int *offset,
						unsigned int *size)
{
	return page_pool_dev_alloc_netmem(pool, offset, size);
}
#else
static inline netmem_ref devtcp_pp_alloc_netmem(struct page_pool *pool, unsigned int *offset,
						unsigned int *size)
{
	unsigned int max = PAGE_SIZE << pool->p.order;
	gfp_t gfp = GFP_ATOMIC | __GFP_NOWARN;
	netmem_ref netmem;

	if (*size > max / 2) {
		*size = max;
		*offset = 0;
		return page_pool_alloc_netmems(pool, gfp);
	}
	netmem = page_pool_alloc_frag_netmem(pool, offset, *size, gfp);
	if (netmem && pool->frag_offset + *size > max) {
		*size = max - *offset;
		pool->frag_offset = max;
	}
	return netmem;
}
#endif

#endif /* _DEVTCP_COMPAT_H */
