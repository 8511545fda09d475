// SPDX-License-Identifier: GPL-2.0
/*
 * Transmit: the frame crosses the wire to the peer, whose receive logic (RSS)
 * picks the RX queue. The frame waits in that queue's wire ring until the
 * peer's NAPI copies it into its buffers and frees it; a full ring stops the
 * sending queue (flow control) rather than dropping.
 */
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <net/flow_dissector.h>

#include "devtcp.h"

/*
 * The receiving NIC's choice of RX queue: its ntuple rules first, then RSS
 * over the 4-tuple (2-tuple for non TCP/UDP) with the main table or the
 * context a rule names. DEVTCP_RX_DROP when a rule discards the frame.
 */
static u32 devtcp_rx_classify(struct devtcp_priv *rx, struct sk_buff *skb)
{
	u32 nq = READ_ONCE(rx->dev->real_num_rx_queues);
	const struct devtcp_rss *rss = &rx->rss;
	struct flow_keys keys;
	u8 in[36];
	int len = 0;
	u32 hash, q;

	if (!skb_flow_dissect_flow_keys(skb, &keys, 0))
		return 0;

	if (keys.control.addr_type == FLOW_DISSECTOR_KEY_IPV4_ADDRS) {
		memcpy(in, &keys.addrs.v4addrs.src, 4);
		memcpy(in + 4, &keys.addrs.v4addrs.dst, 4);
		len = 8;
	} else if (keys.control.addr_type == FLOW_DISSECTOR_KEY_IPV6_ADDRS) {
		memcpy(in, &keys.addrs.v6addrs.src, 16);
		memcpy(in + 16, &keys.addrs.v6addrs.dst, 16);
		len = 32;
	} else {
		return 0;	/* non-IP traffic goes to queue 0 */
	}
	if (keys.basic.ip_proto == IPPROTO_TCP || keys.basic.ip_proto == IPPROTO_UDP) {
		q = devtcp_ntuple_lookup(rx, &keys, &rss);
		if (q == DEVTCP_RX_DROP)
			return q;
		if (q != DEVTCP_RX_RSS)
			return q < nq ? q : q % nq;
		memcpy(in + len, &keys.ports.src, 2);
		memcpy(in + len + 2, &keys.ports.dst, 2);
		len += 4;
	}

	hash = devtcp_toeplitz(rss->key, in, len);
	q = READ_ONCE(rss->indir[hash % DEVTCP_RSS_INDIR_SIZE]);
	skb->hash = hash;	/* carried to the receiver, see rx.c */
	return q < nq ? q : q % nq;
}

static void devtcp_tx_count(struct devtcp_txq *txq, unsigned int len, bool ok)
{
	u64_stats_update_begin(&txq->stats.syncp);
	if (ok) {
		txq->stats.packets++;
		txq->stats.bytes += len;
	} else {
		txq->stats.dropped++;
	}
	u64_stats_update_end(&txq->stats.syncp);
}

/* Flow control: the peer's RX ring is full, wait until its NAPI drains it. */
static void devtcp_tx_stop(struct devtcp_txq *txq, struct netdev_queue *nq,
			   struct devtcp_rxq *rxq)
{
	netif_tx_stop_queue(nq);
	WRITE_ONCE(rxq->sender_stopped, true);
	/* Pairs with the barrier in devtcp_rx_wake_senders(). */
	smp_mb();
	if (!ptr_ring_full(&rxq->wire)) {
		netif_tx_wake_queue(nq);
		return;
	}
	u64_stats_update_begin(&txq->stats.syncp);
	txq->stats.stopped++;
	u64_stats_update_end(&txq->stats.syncp);
}

netdev_tx_t devtcp_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	u16 qid = skb_get_queue_mapping(skb);
	struct devtcp_txq *txq = &priv->txq[qid];
	struct netdev_queue *nq = netdev_get_tx_queue(dev, qid);
	struct devtcp_priv *rx;
	struct net_device *peer;
	struct devtcp_rxq *rxq;
	unsigned int len = skb->len;
	u32 q;

	peer = rcu_dereference_bh(priv->peer);
	if (unlikely(!peer || !netif_running(peer)))
		goto drop;
	rx = netdev_priv(peer);
	if (unlikely(!READ_ONCE(rx->up)))
		goto drop;
	if (unlikely(skb_is_gso(skb) &&
		     !(skb_shinfo(skb)->gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6))))
		goto drop;

	q = devtcp_rx_classify(rx, skb);
	if (unlikely(q == DEVTCP_RX_DROP)) {
		/* The wire delivered it; the receiver's filter discards it. */
		atomic64_inc(&rx->ntuple_drops);
		devtcp_tx_count(txq, len, true);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}
	rxq = &rx->rxq[q];
	skb_tx_timestamp(skb);
	if (unlikely(ptr_ring_produce(&rxq->wire, skb))) {
		/* Another queue filled the ring first: retry once it drains. */
		devtcp_tx_stop(txq, nq, rxq);
		napi_schedule(&rxq->napi);
		return NETDEV_TX_BUSY;
	}
	devtcp_tx_count(txq, len, true);
	if (ptr_ring_full(&rxq->wire))
		devtcp_tx_stop(txq, nq, rxq);
	napi_schedule(&rxq->napi);
	return NETDEV_TX_OK;

drop:
	devtcp_tx_count(txq, len, false);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}
