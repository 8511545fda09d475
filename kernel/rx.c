// SPDX-License-Identifier: GPL-2.0
/*
 * Receive: per-queue NAPI takes frames off the wire ring and "DMAs" them into
 * the queue's buffers. With header split on, the L2-L4 headers go to a header
 * buffer (host memory) and the payload to payload buffers, which may be
 * unreadable net_iovs of a devmem binding; with it off the whole frame goes to
 * payload buffers and the driver copies the headers out, as drivers do.
 */
#include <linux/etherdevice.h>
#include <net/page_pool/helpers.h>

#include "devtcp.h"

static void devtcp_rx_count(struct devtcp_rxq *rxq, unsigned int len, bool split)
{
	u64_stats_update_begin(&rxq->stats.syncp);
	rxq->stats.packets++;
	rxq->stats.bytes += len;
	rxq->stats.split_packets += split;
	u64_stats_update_end(&rxq->stats.syncp);
}

/* A frame is dropped: no buffer, or the device could not reach memory. */
static void devtcp_rx_drop(struct devtcp_rxq *rxq, bool dma_fault)
{
	u64_stats_update_begin(&rxq->stats.syncp);
	if (dma_fault)
		rxq->stats.dma_faults++;
	else
		rxq->stats.alloc_fail++;
	u64_stats_update_end(&rxq->stats.syncp);
}

/* The device writes @len bytes of @src at @soff into a payload buffer. */
static int devtcp_dma_write(struct devtcp_rxq *rxq, netmem_ref netmem, u32 off,
			    struct sk_buff *src, unsigned int soff, unsigned int len)
{
	int err;

	/* Memory of a provider (dma-buf, io_uring area): never CPU-synced. */
	if (netmem_is_net_iov(netmem))
		return devtcp_dma_write_frame(rxq->priv, netmem, off, src, soff, len);
	err = devtcp_dma_write_at(page_pool_get_dma_addr_netmem(netmem) + off, src, soff, len);
	if (err)
		return err;
	page_pool_dma_sync_netmem_for_cpu(rxq->mem.data_pool, netmem, off, len);
	return 0;
}

/*
 * A memory provider's buffers must be reachable by the device model before
 * the queue starts on them: refuse, rather than write blindly later.
 */
static int devtcp_check_reachable(struct devtcp_rxq *rxq, struct page_pool *pool)
{
	netmem_ref netmem;
	int err = 0;

	if (!page_pool_is_unreadable(pool))
		return 0;
	/* Kernels without ndo_queue_get_dma_dev map the binding with our device too. */
	devtcp_note_provider();
	netmem = page_pool_alloc_netmems(pool, GFP_KERNEL);
	if (!netmem)
		return -ENOMEM;
	if (!devtcp_dma_reachable(rxq->priv, page_pool_get_dma_addr_netmem(netmem))) {
		netdev_err(rxq->priv->dev,
			   "queue %u: provider memory is out of the device's DMA reach (no page behind its DMA address, or the dma-unreachable fault)\n",
			   rxq->idx);
		err = -EOPNOTSUPP;
	}
	page_pool_put_full_netmem(pool, netmem, false);
	return err;
}

static struct sk_buff *devtcp_rx_head(struct devtcp_rxq *rxq, struct sk_buff *src,
				      unsigned int hlen)
{
	struct page_pool *pool = rxq->mem.hdr_pool;
	unsigned int off, size = DEVTCP_HDR_BUF_SIZE;
	struct sk_buff *skb;
	struct page *page;
	void *buf;

	page = page_pool_dev_alloc_frag(pool, &off, size);
	if (!page)
		return NULL;
	buf = page_address(page) + off;
	if (hlen && devtcp_dma_write_at(page_pool_get_dma_addr(page) + off + DEVTCP_HDR_HEADROOM,
					src, 0, hlen))
		goto err_put;
	page_pool_dma_sync_for_cpu(pool, page, off + DEVTCP_HDR_HEADROOM, hlen);

	skb = napi_build_skb(buf, size);
	if (!skb)
		goto err_put;
	skb_mark_for_recycle(skb);
	skb_reserve(skb, DEVTCP_HDR_HEADROOM);
	__skb_put(skb, hlen);
	return skb;

err_put:
	page_pool_put_full_page(pool, page, true);
	return NULL;
}

static void devtcp_rx_frame(struct devtcp_rxq *rxq, struct sk_buff *src)
{
	struct devtcp_priv *priv = rxq->priv;
	struct page_pool *pool = rxq->mem.data_pool;
	unsigned int len = src->len, hdrs, hlen, off;
	struct sk_buff *skb;

	hdrs = min_t(unsigned int, DEVTCP_SKB_CB(src)->hdr_len, DEVTCP_HDR_ROOM);
	/*
	 * Header split cuts after a TCP or UDP header. Frames with no more
	 * payload than hds-thresh stay whole in the head, and so do frames
	 * without such a header (ARP, ICMP) that fit: the stack reads their
	 * L3 payload, which it could not in a devmem buffer, and ARP and
	 * neighbour discovery must work on a queue bound to a dma-buf.
	 */
	if (rxq->mem.hds)
		hlen = (len - hdrs <= rxq->mem.hds_thresh || !DEVTCP_SKB_CB(src)->l4) &&
		       len <= DEVTCP_HDR_ROOM ? len : hdrs;
	else
		hlen = 0;

	skb = devtcp_rx_head(rxq, src, hlen);
	if (!skb)
		goto drop;

	for (off = hlen; off < len; ) {
		unsigned int chunk = min_t(unsigned int, len - off, rxq->mem.buf_size);
		int nr = skb_shinfo(skb)->nr_frags;
		netmem_ref netmem;
		unsigned int poff;

		if (nr == MAX_SKB_FRAGS)
			goto drop_skb;
		netmem = page_pool_alloc_frag_netmem(pool, &poff, chunk, GFP_ATOMIC);
		if (!netmem)
			goto drop_skb;
		skb_add_rx_frag_netmem(skb, nr, netmem, poff, chunk, chunk);
		if (devtcp_dma_write(rxq, netmem, poff, src, off, chunk)) {
			dev_kfree_skb_any(skb);
			net_err_ratelimited("%s: queue %u: payload DMA failed, frame dropped\n",
					    priv->dev->name, rxq->idx);
			devtcp_rx_drop(rxq, true);
			return;
		}
		off += chunk;
	}
	if (!rxq->mem.hds && !__pskb_pull_tail(skb, hdrs))
		goto drop_skb;

	if (skb_is_gso(src)) {
		struct skb_shared_info *si = skb_shinfo(skb);

		si->gso_size = skb_shinfo(src)->gso_size;
		si->gso_type = skb_shinfo(src)->gso_type & (SKB_GSO_TCPV4 | SKB_GSO_TCPV6);
		si->gso_segs = DIV_ROUND_UP(len - hdrs, si->gso_size);
	}
	skb->protocol = eth_type_trans(skb, priv->dev);
	skb->ip_summed = CHECKSUM_UNNECESSARY;
	skb_set_hash(skb, src->hash, PKT_HASH_TYPE_L4);
	skb_record_rx_queue(skb, rxq->idx);
	devtcp_rx_count(rxq, len, rxq->mem.hds && hlen < len);
	napi_gro_receive(&rxq->napi, skb);
	return;

drop_skb:
	dev_kfree_skb_any(skb);
drop:
	devtcp_rx_drop(rxq, false);
}

/* Senders stopped by a full wire ring may go again once there is room. */
static void devtcp_rx_wake_senders(struct devtcp_rxq *rxq)
{
	struct net_device *peer;

	/* Pairs with the barrier in devtcp_tx_stop(). */
	smp_mb();
	if (!READ_ONCE(rxq->sender_stopped) || ptr_ring_full(&rxq->wire))
		return;
	WRITE_ONCE(rxq->sender_stopped, false);
	rcu_read_lock();
	peer = rcu_dereference(rxq->priv->peer);
	if (peer)
		devtcp_tx_wake_waiting(netdev_priv(peer));
	rcu_read_unlock();
}

int devtcp_rx_poll(struct napi_struct *napi, int budget)
{
	struct devtcp_rxq *rxq = container_of(napi, struct devtcp_rxq, napi);
	struct sk_buff *src;
	int cleaned, done = 0;

	/* TX completions first, as NICs do; they do not count as RX work. */
	cleaned = devtcp_tx_clean(rxq, budget);

	while (done < budget && (src = __ptr_ring_consume(&rxq->wire))) {
		devtcp_rx_frame(rxq, src);
		devtcp_tx_complete(rxq, src, budget);
		done++;
	}
	devtcp_rx_wake_senders(rxq);
	if (cleaned == DEVTCP_TX_CLEAN_MAX)
		return budget;
	if (done < budget)
		napi_complete_done(napi, done);
	return done;
}

static void devtcp_napi_remote(void *data)
{
	struct devtcp_rxq *rxq = data;

	__napi_schedule_irqoff(&rxq->napi);
}

/*
 * Schedules the channel's NAPI on its own CPU, as a NIC's interrupt bound
 * there would, wherever the frame was sent from. Skbs freed on another CPU
 * wait on the defer list of the CPU that received them, holding their
 * page pool buffers (devmem net_iovs among them) until its next NET_RX
 * softirq. Received on whichever CPU happened to send, they could wait on
 * an idle CPU while the queue, out of buffers, dropped the resends that
 * would free them; on its fixed CPU every resend runs that softirq.
 */
void devtcp_napi_kick(struct devtcp_rxq *rxq)
{
	if (!napi_schedule_prep(&rxq->napi))
		return;
	/*
	 * Our prep owns the NAPI until the poll completes, after the remote
	 * call has run, so the csd is never busy here; an offline CPU
	 * (-ENXIO) gets the NAPI run where we are.
	 */
	if (rxq->napi_cpu != raw_smp_processor_id() &&
	    !smp_call_function_single_async(rxq->napi_cpu, &rxq->kick_csd))
		return;
	__napi_schedule(&rxq->napi);
}

static struct page_pool *devtcp_pool_create(struct devtcp_rxq *rxq, u32 size,
					    u32 buf_size, bool unreadable)
{
	struct page_pool_params pp = {
		.flags		= PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV,
		.order		= get_order(buf_size),
		.pool_size	= size,
		.nid		= NUMA_NO_NODE,
		.dev		= devtcp_dma_dev(),
		/*
		 * No .napi yet: memory allocated for a restart that then fails
		 * is destroyed while this queue's NAPI still runs on the old
		 * memory. devtcp_rx_mem_attach() links it once the queue starts.
		 */
		.netdev		= rxq->priv->dev,
		.queue_idx	= rxq->idx,
		.dma_dir	= DMA_FROM_DEVICE,
		.max_len	= buf_size,
	};

	if (unreadable)
		pp.flags |= PP_FLAG_ALLOW_UNREADABLE_NETMEM;
	return page_pool_create(&pp);
}

/*
 * The memory of one RX queue: what a queue restart replaces. Payload
 * buffers are @buf_size bytes, larger than a page where a memory provider
 * asks for it (a devmem binding's rx-page-size): a frame's payload then
 * lands in pieces of that size instead of pages.
 */
int devtcp_rx_mem_alloc(struct devtcp_rxq *rxq, struct devtcp_rx_mem *mem, u32 buf_size)
{
	u32 size = rxq->priv->rx_ring_size;
	int err;

	mem->buf_size = buf_size;
	mem->hds = rxq->priv->hds;
	mem->hds_thresh = rxq->priv->hds_thresh;
	mem->hdr_pool = devtcp_pool_create(rxq, size, PAGE_SIZE, false);
	if (IS_ERR(mem->hdr_pool))
		return PTR_ERR(mem->hdr_pool);
	mem->data_pool = devtcp_pool_create(rxq, size, buf_size, mem->hds);
	if (IS_ERR(mem->data_pool)) {
		err = PTR_ERR(mem->data_pool);
		goto err_hdr;
	}
	err = devtcp_check_reachable(rxq, mem->data_pool);
	if (err)
		goto err_data;
	return 0;

err_data:
	page_pool_destroy(mem->data_pool);
err_hdr:
	page_pool_destroy(mem->hdr_pool);
	return err;
}

/* The queue starts on @rxq->mem: its NAPI may recycle into the pools directly. */
void devtcp_rx_mem_attach(struct devtcp_rxq *rxq)
{
	page_pool_enable_direct_recycling(rxq->mem.hdr_pool, &rxq->napi);
	page_pool_enable_direct_recycling(rxq->mem.data_pool, &rxq->napi);
}

void devtcp_rx_mem_free(struct devtcp_rx_mem *mem)
{
	page_pool_destroy(mem->data_pool);
	page_pool_destroy(mem->hdr_pool);
	mem->data_pool = NULL;
	mem->hdr_pool = NULL;
}

/* Called with the netdev instance lock held, as are all queue operations. */
int devtcp_rxq_open(struct devtcp_rxq *rxq)
{
	struct devtcp_priv *priv = rxq->priv;
	struct net_device *dev = priv->dev;
	int err;

	struct devtcp_txq *txq = &priv->txq[rxq->idx];

	err = ptr_ring_init(&rxq->wire, priv->rx_ring_size, GFP_KERNEL);
	if (err)
		return err;
	err = ptr_ring_init(&txq->done, priv->tx_ring_size, GFP_KERNEL);
	if (err)
		goto err_wire;
	atomic_set(&txq->inflight, 0);
	rxq->napi_cpu = cpumask_local_spread(rxq->idx, dev_to_node(&dev->dev));
	INIT_CSD(&rxq->kick_csd, devtcp_napi_remote, rxq);
	devtcp_napi_add(dev, &rxq->napi, devtcp_rx_poll, rxq->idx);
	err = devtcp_rx_mem_alloc(rxq, &rxq->mem, devtcp_rx_page_size(dev, rxq->idx));
	if (err)
		goto err_napi;
	rxq->sender_stopped = false;
	devtcp_rx_mem_attach(rxq);
	devtcp_napi_enable(&rxq->napi);
	netif_queue_set_napi(dev, rxq->idx, NETDEV_QUEUE_TYPE_RX, &rxq->napi);
	netif_queue_set_napi(dev, rxq->idx, NETDEV_QUEUE_TYPE_TX, &rxq->napi);
	return 0;

err_napi:
	devtcp_napi_del(&rxq->napi);
	ptr_ring_cleanup(&txq->done, NULL);
err_wire:
	ptr_ring_cleanup(&rxq->wire, NULL);
	return err;
}

static void devtcp_free_frame(void *ptr)
{
	dev_kfree_skb_any(ptr);
}

/*
 * The channel stops: frames waiting on our wire are dropped (the sender
 * completes them, TCP resends), frames we sent and the peer has read are
 * freed. The peer no longer completes to us: devtcp_queues_down() has
 * cleared priv->up and waited for it to be seen.
 */
void devtcp_rxq_close(struct devtcp_rxq *rxq)
{
	struct net_device *dev = rxq->priv->dev;
	struct sk_buff *skb;

	netif_queue_set_napi(dev, rxq->idx, NETDEV_QUEUE_TYPE_RX, NULL);
	netif_queue_set_napi(dev, rxq->idx, NETDEV_QUEUE_TYPE_TX, NULL);
	devtcp_napi_disable(&rxq->napi);
	devtcp_napi_del(&rxq->napi);
	local_bh_disable();
	while ((skb = __ptr_ring_consume(&rxq->wire)))
		devtcp_tx_complete(rxq, skb, 0);
	local_bh_enable();
	ptr_ring_cleanup(&rxq->wire, NULL);
	ptr_ring_cleanup(&rxq->priv->txq[rxq->idx].done, devtcp_free_frame);
	devtcp_rx_mem_free(&rxq->mem);
}
