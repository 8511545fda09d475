// SPDX-License-Identifier: GPL-2.0
/*
 * Transmit: the frame crosses the wire to the peer, whose receive logic (RSS)
 * picks the RX queue. The frame waits in that queue's wire ring until the
 * peer's NAPI copies it into its buffers and frees it; a full ring stops the
 * sending queue (flow control) rather than dropping.
 */
#include <linux/etherdevice.h>

#include "devtcp.h"

/*
 * Puts @skb on @rxq's wire with the sender's queue generation @gen; *full:
 * the ring has no room left. The frame is touched only once it is sure to go
 * on: a frame refused for a full ring (-ENOSPC) goes back to the qdisc, whose
 * skb->cb it still is, and is not timestamped twice. So the timestamp
 * (@stamp) is taken under the producer lock; it takes the socket's error
 * queue lock inside it, never the other way round.
 */
static int devtcp_wire_produce(struct devtcp_rxq *rxq, struct sk_buff *skb, u32 hash, u32 gen,
			       bool stamp, bool *full)
{
	struct ptr_ring *r = &rxq->wire;
	int err = -ENOSPC;

	BUILD_BUG_ON(sizeof(struct devtcp_skb_cb) > sizeof_field(struct sk_buff, cb));
	spin_lock(&r->producer_lock);
	if (!__ptr_ring_full(r)) {
		if (stamp)
			skb_tx_timestamp(skb);
		DEVTCP_SKB_CB(skb)->gen = gen;
		skb->hash = hash;	/* carried to the receiver, see rx.c */
		err = __ptr_ring_produce(r, skb);
	}
	*full = __ptr_ring_full(r);
	spin_unlock(&r->producer_lock);
	return err;
}

void devtcp_tx_count(struct devtcp_txq *txq, unsigned int len, bool ok)
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
	WRITE_ONCE(txq->wire_stopped, true);
	WRITE_ONCE(rxq->sender_stopped, true);
	/* Pairs with the barrier in devtcp_rx_wake_senders(). */
	smp_mb();
	if (!ptr_ring_full(&rxq->wire)) {
		WRITE_ONCE(txq->wire_stopped, false);
		netif_tx_wake_queue(nq);
		return;
	}
	u64_stats_update_begin(&txq->stats.syncp);
	txq->stats.stopped++;
	u64_stats_update_end(&txq->stats.syncp);
}

/*
 * Wakes TX queue @qid if it is stopped and its ring has room, unless the
 * queues are going down: devtcp_queues_down() clears ->up and waits for us
 * before it disables them.
 */
static void devtcp_tx_wake_if_room(struct devtcp_priv *priv, u16 qid)
{
	struct netdev_queue *nq = netdev_get_tx_queue(priv->dev, qid);

	if (READ_ONCE(priv->up) && netif_tx_queue_stopped(nq) &&
	    atomic_read(&priv->txq[qid].inflight) < priv->tx_ring_size)
		netif_tx_wake_queue(nq);
}

/*
 * The wire @tx sends on has room again, or its peer came up: wake the TX
 * queues that stopped for it. A queue whose own ring is full stays stopped:
 * its completions wake it (devtcp_tx_clean()).
 */
void devtcp_tx_wake_waiting(struct devtcp_priv *tx)
{
	int i;

	if (!READ_ONCE(tx->up))
		return;
	for (i = 0; i < READ_ONCE(tx->dev->real_num_tx_queues); i++) {
		if (!READ_ONCE(tx->txq[i].wire_stopped))
			continue;
		WRITE_ONCE(tx->txq[i].wire_stopped, false);
		devtcp_tx_wake_if_room(tx, i);
	}
}

/*
 * The watchdog found a queue stopped for longer than watchdog_timeo (under
 * the TX locks): say what it waits for, and let it go if it may.
 */
void devtcp_tx_timeout(struct net_device *dev, unsigned int qid)
{
	struct devtcp_priv *priv = netdev_priv(dev);
	struct devtcp_txq *txq = &priv->txq[qid];

	netdev_err(dev, "TX queue %u stalled: %d of %u ring slots in flight%s\n", qid,
		   atomic_read(&txq->inflight), priv->tx_ring_size, READ_ONCE(txq->wire_stopped) ?
		   ", waiting for room on the peer's wire" : "");
	WRITE_ONCE(txq->wire_stopped, false);
	devtcp_tx_wake_if_room(priv, qid);
}

/* Every TX ring slot holds a frame not yet completed: wait for completions. */
void devtcp_tx_ring_full(struct devtcp_priv *priv, struct devtcp_txq *txq,
			 struct netdev_queue *nq)
{
	netif_tx_stop_queue(nq);
	/* Pairs with the barrier in devtcp_tx_clean(). */
	smp_mb__after_atomic();
	if (atomic_read(&txq->inflight) < priv->tx_ring_size) {
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
	u32 q, hash;
	bool full;

	peer = rcu_dereference_bh(priv->peer);
	if (unlikely(!peer || !netif_running(peer)))
		goto drop;
	rx = netdev_priv(peer);
	/* Pairs with smp_store_release() in devtcp_queues_up(): rings, then up. */
	if (unlikely(!smp_load_acquire(&rx->up)))
		goto drop;
	if (unlikely(skb_is_gso(skb) &&
		     !(skb_shinfo(skb)->gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6))))
		goto drop;
	/* Devmem TX: the DMA engine reads the frags from provider memory. */
	if (unlikely(!skb_frags_readable(skb) && devtcp_fault_dma_refused(priv))) {
		net_err_ratelimited("%s: queue %u: TX DMA from provider memory failed, frame dropped\n",
				    dev->name, qid);
		goto drop;
	}
	if (unlikely(READ_ONCE(priv->fault.on)))
		return devtcp_fault_xmit(priv, skb, qid);

	q = devtcp_rx_classify(rx, skb, skb->data, skb_headlen(skb), &hash);
	if (unlikely(q == DEVTCP_RX_DROP)) {
		/* The wire delivered it; the receiver's filter discards it. */
		atomic64_inc(&rx->ntuple_drops);
		devtcp_tx_count(txq, len, true);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}
	rxq = &rx->rxq[q];
	atomic_inc(&txq->inflight);
	if (unlikely(devtcp_wire_produce(rxq, skb, hash, priv->gen, true, &full))) {
		/* Another queue filled the ring first: retry once it drains. */
		atomic_dec(&txq->inflight);
		devtcp_tx_stop(txq, nq, rxq);
		devtcp_napi_kick(rxq);
		return NETDEV_TX_BUSY;
	}
	devtcp_tx_count(txq, len, true);
	if (full)
		devtcp_tx_stop(txq, nq, rxq);
	else if (atomic_read(&txq->inflight) >= priv->tx_ring_size)
		devtcp_tx_ring_full(priv, txq, nq);
	devtcp_napi_kick(rxq);
	return NETDEV_TX_OK;

drop:
	devtcp_tx_count(txq, len, false);
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

/* A frame that held a TX ring slot is gone without a completion. */
void devtcp_tx_uncount(struct devtcp_priv *priv, u16 qid)
{
	atomic_dec(&priv->txq[qid].inflight);
	/* Pairs with the barrier in devtcp_tx_ring_full(). */
	smp_mb__after_atomic();
	devtcp_tx_wake_if_room(priv, qid);
}

/*
 * Fault injection puts a frame it held on the wire. The frame holds a TX
 * ring slot. Returns -EBUSY, keeping the frame, when the peer's wire ring
 * is full; otherwise the frame is delivered or dropped. BH off, under RCU.
 */
int devtcp_wire_put(struct devtcp_priv *priv, u16 qid, struct sk_buff *skb)
{
	struct devtcp_priv *rx;
	struct net_device *peer;
	struct devtcp_rxq *rxq;
	u32 q, hash;
	bool full;

	peer = rcu_dereference_bh(priv->peer);
	if (!peer || !netif_running(peer))
		goto drop;
	rx = netdev_priv(peer);
	/* As in devtcp_start_xmit(): the peer's rings exist once up is seen. */
	if (!smp_load_acquire(&rx->up))
		goto drop;
	q = devtcp_rx_classify(rx, skb, skb->data, skb_headlen(skb), &hash);
	if (q == DEVTCP_RX_DROP) {
		atomic64_inc(&rx->ntuple_drops);
		goto free;
	}
	rxq = &rx->rxq[q];
	if (devtcp_wire_produce(rxq, skb, hash, DEVTCP_SKB_CB(skb)->gen, false, &full)) {
		devtcp_napi_kick(rxq);
		return -EBUSY;
	}
	devtcp_napi_kick(rxq);
	return 0;

drop:
	/* From the fault timer, without the TX lock that guards txq->stats. */
	atomic64_inc(&priv->txq[qid].late_drops);
free:
	dev_kfree_skb_any(skb);
	devtcp_tx_uncount(priv, qid);
	return 0;
}

/*
 * The peer has read @skb (or dropped it): hand it back to the sender's
 * channel, whose NAPI completes it. Frames of a sender that has since
 * stopped its queues are simply freed. Called in BH context.
 */
void devtcp_tx_complete(struct devtcp_rxq *rxq, struct sk_buff *skb, int budget)
{
	u16 qid = skb_get_queue_mapping(skb);
	struct devtcp_priv *tx;
	struct net_device *sender;

	rcu_read_lock();
	sender = rcu_dereference(rxq->priv->peer);
	if (sender) {
		tx = netdev_priv(sender);
		/* Pairs with smp_store_release() in devtcp_queues_up(). */
		if (smp_load_acquire(&tx->up) && DEVTCP_SKB_CB(skb)->gen == READ_ONCE(tx->gen) &&
		    qid < READ_ONCE(sender->real_num_tx_queues)) {
			if (!ptr_ring_produce(&tx->txq[qid].done, skb)) {
				devtcp_napi_kick(&tx->rxq[qid]);
				rcu_read_unlock();
				return;
			}
			/* More in flight than the ring holds: never lose the slot. */
			net_err_ratelimited("%s: TX queue %u: completion ring full\n",
					    sender->name, qid);
			devtcp_tx_uncount(tx, qid);
		}
	}
	rcu_read_unlock();
	napi_consume_skb(skb, budget);
}

/* Completes frames of the channel's TX queue; returns how many. */
int devtcp_tx_clean(struct devtcp_rxq *rxq, int budget)
{
	struct devtcp_priv *priv = rxq->priv;
	struct devtcp_txq *txq = &priv->txq[rxq->idx];
	struct sk_buff *skb;
	int n = 0;

	while (n < DEVTCP_TX_CLEAN_MAX && (skb = __ptr_ring_consume(&txq->done))) {
		napi_consume_skb(skb, budget);
		n++;
	}
	if (!n)
		return 0;
	atomic_sub(n, &txq->inflight);
	/* Pairs with the barrier in devtcp_tx_ring_full(). */
	smp_mb__after_atomic();
	devtcp_tx_wake_if_room(priv, rxq->idx);
	return n;
}
