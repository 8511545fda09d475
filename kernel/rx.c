// SPDX-License-Identifier: GPL-2.0
/*
 * Receive: per-queue NAPI takes frames off the wire ring and "DMAs" them into
 * the queue's buffers. With header split on, the L2-L4 headers go to a header
 * buffer (host memory) and the payload to payload buffers, which may be
 * unreadable net_iovs of a devmem binding; with it off the whole frame goes to
 * payload buffers and the driver copies the headers out, as drivers do.
 */
#include <linux/etherdevice.h>
#include <linux/inetdevice.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/gro.h>
#include <net/tcp.h>
#include <net/page_pool/helpers.h>

#include "devtcp.h"

/* What the device tells the stack of a frame's L4 checksum. */
enum devtcp_csum {
	DEVTCP_CSUM_NONE,	/* not verified: the stack checks it */
	DEVTCP_CSUM_GOOD,	/* verified, or computed by the sender's device */
	DEVTCP_CSUM_CHECK,	/* to verify on the copy received */
	DEVTCP_CSUM_BAD,	/* wrong: the stack drops it and counts */
};

static void devtcp_rx_count(struct devtcp_rxq *rxq, const struct sk_buff *skb, unsigned int len,
			    bool split, enum devtcp_csum csum)
{
	struct devtcp_rxq_stats *s = &rxq->stats;

	u64_stats_update_begin(&s->syncp);
	s->packets++;
	s->bytes += len;
	s->split_packets += split;
	/* Up CHECKSUM_PARTIAL (devtcp_rx_gso()): neither verified nor not. */
	if (skb_is_gso(skb)) {
		s->gro_packets++;
		s->gro_wire_packets += skb_shinfo(skb)->gso_segs;
	} else if (csum == DEVTCP_CSUM_GOOD) {
		s->csum_unnecessary++;
	} else if (csum == DEVTCP_CSUM_BAD) {
		s->csum_bad++;
	} else {
		s->csum_none++;
	}
	u64_stats_update_end(&s->syncp);
}

enum devtcp_rx_drop_reason {
	DEVTCP_RX_DROP_ALLOC,	/* no buffer */
	DEVTCP_RX_DROP_DMA,	/* the device could not reach memory */
	DEVTCP_RX_DROP_WINDOW,	/* ... provider memory no window covers */
	DEVTCP_RX_DROP_MALFORMED, /* see parse.c */
	DEVTCP_RX_DROP_CSUM,	/* checksum wrong in provider memory */
};

static void devtcp_rx_drop(struct devtcp_rxq *rxq, enum devtcp_rx_drop_reason why)
{
	struct devtcp_rxq_stats *s = &rxq->stats;

	u64_stats_update_begin(&s->syncp);
	if (why == DEVTCP_RX_DROP_DMA || why == DEVTCP_RX_DROP_WINDOW)
		s->dma_faults++;
	if (why == DEVTCP_RX_DROP_WINDOW)
		s->window_misses++;
	else if (why == DEVTCP_RX_DROP_MALFORMED)
		s->malformed++;
	else if (why == DEVTCP_RX_DROP_CSUM)
		s->csum_drops++;
	else
		s->alloc_fail++;
	u64_stats_update_end(&s->syncp);
}

/* The device writes @len bytes of @src at @soff into a buffer of @pool. */
static int devtcp_dma_write(struct devtcp_rxq *rxq, struct page_pool *pool, netmem_ref netmem,
			    u32 off, struct sk_buff *src, unsigned int soff, unsigned int len,
			    struct devtcp_csum_acc *acc)
{
	int err;

	/* Memory of a provider (dma-buf, io_uring area): never CPU-synced. */
	if (netmem_is_net_iov(netmem))
		return devtcp_dma_write_frame(rxq->priv, netmem, off, src, soff, len, acc);
	err = devtcp_dma_write_at(page_pool_get_dma_addr_netmem(netmem) + off, src, soff, len,
				  NULL);
	if (err)
		return err;
	page_pool_dma_sync_netmem_for_cpu(pool, netmem, off, len);
	return 0;
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
					src, 0, hlen, NULL))
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

/* The device writes the frame's next bytes, up to @to, into the head. */
static int devtcp_rx_head_grow(struct devtcp_rxq *rxq, struct sk_buff *skb,
			       struct sk_buff *src, unsigned int to)
{
	struct page *page = virt_to_head_page(skb->data);
	unsigned int off = skb_tail_pointer(skb) - (u8 *)page_address(page);
	unsigned int n = to - skb->len;

	if (devtcp_dma_write_at(page_pool_get_dma_addr(page) + off, src, skb->len, n, NULL))
		return -EFAULT;
	page_pool_dma_sync_for_cpu(rxq->mem.hdr_pool, page, off, n);
	__skb_put(skb, n);
	return 0;
}

/*
 * With header split on, the device writes the frame's first bytes into a
 * header buffer and parses them there: a window that holds common headers,
 * or as much as the buffer holds when they are longer.
 */
static struct sk_buff *devtcp_rx_head_parsed(struct devtcp_rxq *rxq, struct sk_buff *src,
					     struct devtcp_parse *p)
{
	unsigned int len = src->len, most = min_t(unsigned int, len, DEVTCP_HDR_ROOM);
	struct sk_buff *skb;

	skb = devtcp_rx_head(rxq, src, min_t(unsigned int, len, DEVTCP_HDR_PEEK));
	if (!skb)
		return NULL;
	devtcp_parse(skb, len, p);
	if (p->unparsed && skb->len < most) {
		if (devtcp_rx_head_grow(rxq, skb, src, most)) {
			dev_kfree_skb_any(skb);
			return NULL;
		}
		devtcp_parse(skb, len, p);
	}
	return skb;
}

/*
 * A TSO frame crosses the wire whole and is received whole, as hardware GRO
 * would hand it up: only a TCP one whose segments carry payload.
 */
static bool devtcp_rx_gso_ok(const struct sk_buff *src, const struct devtcp_parse *p)
{
	unsigned int type = p->ipv6 ? SKB_GSO_TCPV6 : SKB_GSO_TCPV4;

	return p->proto == IPPROTO_TCP && (skb_shinfo(src)->gso_type & type) &&
	       skb_shinfo(src)->gso_size >= TCP_MIN_MSS && p->l4_off + p->l4_len > p->hdr_len;
}

/*
 * What the device can say of @src's L4 checksum before copying it. The
 * checksums the sender offloaded (CHECKSUM_PARTIAL) its device computes on
 * transmit, so they are right on the wire (*fill: the receiver's copy gets
 * the value, for a namespace that forwards or captures the frame); the
 * others are in the bytes, to verify, unless rx-checksumming is off.
 */
static enum devtcp_csum devtcp_rx_csum_plan(struct devtcp_rxq *rxq, const struct sk_buff *src,
					    const struct sk_buff *head,
					    const struct devtcp_parse *p, bool *fill)
{
	unsigned int check;
	__sum16 seed;

	*fill = false;
	/* Its segments' checksums are the sender's device's own (TSO). */
	if (skb_is_gso(src))
		return DEVTCP_CSUM_GOOD;
	*fill = src->ip_summed == CHECKSUM_PARTIAL;
	if (!(READ_ONCE(rxq->priv->dev->features) & NETIF_F_RXCSUM) || !p->proto ||
	    !p->verifiable)
		return DEVTCP_CSUM_NONE;
	if (!*fill)
		return DEVTCP_CSUM_CHECK;
	/*
	 * Offloaded: right if the device was told to sum the segment, and
	 * no more, into the field that is checked, and that field holds the
	 * pseudo-header's sum (as read in @head, the received copy's headers);
	 * else verify the result.
	 */
	if (p->proto == IPPROTO_TCP)
		check = p->l4_off + offsetof(struct tcphdr, check);
	else
		check = p->l4_off + offsetof(struct udphdr, check);
	if (skb_checksum_start_offset(src) != p->l4_off ||
	    src->csum_offset != check - p->l4_off || p->l4_off + p->l4_len != src->len ||
	    check + sizeof(seed) > skb_headlen(head))
		return DEVTCP_CSUM_CHECK;
	seed = *(__sum16 *)(head->data + check);
	if (csum_fold(csum_add(p->pseudo, csum_unfold(~seed))))
		return DEVTCP_CSUM_CHECK;
	return DEVTCP_CSUM_GOOD;
}

static bool devtcp_csum_ok(const struct sk_buff *skb, const struct devtcp_parse *p)
{
	return !csum_fold(csum_add(p->pseudo, skb_checksum(skb, p->l4_off, p->l4_len, 0)));
}

/*
 * The checksum the sender's device computes for a frame handed to it
 * CHECKSUM_PARTIAL: from csum_start to the end, stored csum_offset further;
 * here, into the received copy @skb, summed over it (host memory). The
 * headers the device parsed (@p) stay as it parsed them.
 */
static void devtcp_rx_csum_fill(struct sk_buff *skb, const struct sk_buff *src,
				const struct devtcp_parse *p)
{
	unsigned int start = skb_checksum_start_offset(src);
	unsigned int at = start + src->csum_offset;
	unsigned int field = p->l4_off + (p->proto == IPPROTO_TCP ?
					  offsetof(struct tcphdr, check) :
					  offsetof(struct udphdr, check));
	__sum16 sum;

	if (start < (p->proto ? p->l4_off : p->hdr_len) || start >= skb->len ||
	    at + sizeof(sum) > skb_headlen(skb))
		return;
	/* Nor over a header field it parsed, but the L4 checksum itself. */
	if (at < p->hdr_len && !(p->proto && at == field))
		return;
	sum = csum_fold(skb_checksum(skb, start, skb->len - start, 0));
	*(__sum16 *)(skb->data + at) = sum ?: CSUM_MANGLED_0;
}

/*
 * A TSO frame goes up as hardware GRO hands one up (tcp_gro_complete()):
 * CHECKSUM_PARTIAL over the whole segment, left to whoever segments it.
 */
static void devtcp_rx_gso(struct sk_buff *skb, const struct sk_buff *src,
			  const struct devtcp_parse *p)
{
	struct skb_shared_info *si = skb_shinfo(skb);
	struct tcphdr *th = (struct tcphdr *)(skb->data + p->l4_off);

	si->gso_size = skb_shinfo(src)->gso_size;
	si->gso_type = p->ipv6 ? SKB_GSO_TCPV6 : SKB_GSO_TCPV4;
	si->gso_segs = DIV_ROUND_UP(p->l4_off + p->l4_len - p->hdr_len, si->gso_size);
	th->check = ~csum_fold(p->pseudo);
	skb->csum_start = skb_headroom(skb) + p->l4_off;
	skb->csum_offset = offsetof(struct tcphdr, check);
	skb->ip_summed = CHECKSUM_PARTIAL;
}

/*
 * The host may route what comes in on @dev to another host: it forwards on
 * it (IPv6: on it or on all devices), or a device on top of it (a VLAN, a
 * macvlan, a bridge port's bridge) decides with settings of its own.
 */
static bool devtcp_forwards(struct net_device *dev)
{
	struct inet6_dev *idev;
	struct in_device *in_dev;
	bool fwd;

	if (rcu_access_pointer(dev->rx_handler))
		return true;
#if IS_ENABLED(CONFIG_VLAN_8021Q)
	if (rcu_access_pointer(dev->vlan_info))
		return true;
#endif
	rcu_read_lock();
	in_dev = __in_dev_get_rcu(dev);
	idev = __in6_dev_get(dev);
	fwd = (in_dev && IN_DEV_FORWARD(in_dev)) ||
	      (idev && (READ_ONCE(dev_net(dev)->ipv6.devconf_all->forwarding) ||
			READ_ONCE(idev->cnf.forwarding) || devtcp_ip6_force_forwarding(idev)));
	rcu_read_unlock();
	return fwd;
}

/*
 * Whether the payload of a frame, past its head of @hlen bytes, may land in
 * provider memory, which the stack can neither read nor checksum: only a TCP
 * payload whose checksum is good (offloaded, or checked on the sender's
 * bytes here and again on the copy as the device writes it), and not on a
 * host that forwards (the core fragments a forwarded frame by reading its
 * payload, and BUG()s on one it cannot read).
 */
static bool devtcp_rx_to_provider(struct devtcp_rxq *rxq, const struct sk_buff *src,
				  const struct sk_buff *head, const struct devtcp_parse *p,
				  unsigned int hlen, bool fill, enum devtcp_csum *csum)
{
	u32 hash;

	/*
	 * Nor with IP options or extension headers: the stack may answer
	 * such a frame with an ICMP error that quotes its payload.
	 */
	if (p->proto != IPPROTO_TCP || hlen == src->len || p->options ||
	    devtcp_forwards(rxq->priv->dev))
		return false;
	if (*csum == DEVTCP_CSUM_CHECK && !fill && skb_frags_readable(src))
		*csum = devtcp_csum_ok(src, p) ? DEVTCP_CSUM_GOOD : DEVTCP_CSUM_BAD;
	if (*csum != DEVTCP_CSUM_GOOD)
		return false;
	/*
	 * The queue was chosen on the sender's bytes, which a PACKET_TX_RING
	 * sender can change until the copy: only a frame whose copied headers
	 * steer it here may land in this queue's memory, another tenant's
	 * maybe. The others go to host memory, where their socket reads them.
	 */
	if (devtcp_rx_classify(rxq->priv, NULL, head->data, skb_headlen(head), &hash) !=
	    rxq->idx) {
		u64_stats_update_begin(&rxq->stats.syncp);
		rxq->stats.misqueued++;
		u64_stats_update_end(&rxq->stats.syncp);
		return false;
	}
	return true;
}

/*
 * Into provider memory, which the stack can neither read nor checksum, and
 * only for a TCP frame whose checksum is good: the device sums what it
 * writes, head and payload, and fills the offloaded checksum into the head
 * or drops the frame if the sum is wrong after all (its sender changed it
 * after the check on its bytes, as a PACKET_TX_RING sender can).
 */
static bool devtcp_rx_provider_csum(struct sk_buff *skb, const struct devtcp_parse *p,
				    struct devtcp_csum_acc *acc, bool fill)
{
	__sum16 *check = (__sum16 *)(skb->data + p->l4_off + offsetof(struct tcphdr, check));
	__sum16 sum;

	devtcp_csum_acc_add(acc, skb->data, 0, skb_headlen(skb));
	if (!fill)
		return !csum_fold(csum_add(p->pseudo, acc->sum));
	sum = csum_fold(acc->sum);
	*check = sum ?: CSUM_MANGLED_0;
	return true;
}

static void devtcp_rx_frame(struct devtcp_rxq *rxq, struct sk_buff *src)
{
	struct devtcp_rx_mem *mem = &rxq->mem;
	struct devtcp_priv *priv = rxq->priv;
	struct page_pool *pool = mem->data_pool;
	unsigned int len = src->len, hdrs, hlen = 0, off, buf_size = mem->buf_size;
	struct devtcp_csum_acc acc = {}, *accp = NULL;
	bool gso = skb_is_gso(src), fill = false, no_gro = false;
	enum devtcp_csum csum = DEVTCP_CSUM_NONE;
	struct devtcp_parse p;
	struct sk_buff *skb;

	if (unlikely(len < ETH_HLEN)) {
		devtcp_rx_drop(rxq, DEVTCP_RX_DROP_MALFORMED);
		return;
	}
	/*
	 * Header split parses the header buffer, then cuts after a TCP or UDP
	 * header. Frames with no more payload than hds-thresh stay whole in
	 * the head, and so do frames without such a header (ARP, ICMP) that
	 * fit: the stack reads their L3 payload, and ARP and neighbour
	 * discovery must work on a queue bound to a dma-buf. Without header
	 * split the whole frame goes to payload buffers, parsed there.
	 */
	if (mem->hds) {
		skb = devtcp_rx_head_parsed(rxq, src, &p);
		if (!skb)
			goto drop;
		if (unlikely(p.malformed || (gso && !devtcp_rx_gso_ok(src, &p))))
			goto malformed;
		hdrs = p.hdr_len;
		hlen = hdrs;
		if ((len - hdrs <= mem->hds_thresh || !p.proto) && len <= DEVTCP_HDR_ROOM)
			hlen = len;
		csum = devtcp_rx_csum_plan(rxq, src, skb, &p, &fill);
		if (mem->unreadable &&
		    devtcp_rx_to_provider(rxq, src, skb, &p, hlen, fill, &csum)) {
			acc.start = p.l4_off;
			acc.end = p.l4_off + p.l4_len;
			accp = gso ? NULL : &acc;
		} else if (mem->unreadable && hlen < len) {
			/* Host memory on this queue: never merged with provider memory. */
			pool = mem->hdr_pool;
			buf_size = PAGE_SIZE;
			no_gro = true;
		}
		if (hlen < skb->len)
			__skb_trim(skb, hlen);
		else if (hlen > skb->len && devtcp_rx_head_grow(rxq, skb, src, hlen))
			goto drop_skb;
	} else {
		skb = devtcp_rx_head(rxq, src, 0);
		if (!skb)
			goto drop;
	}

	for (off = hlen; off < len; ) {
		unsigned int chunk = min(len - off, buf_size), truesize = chunk;
		int nr = skb_shinfo(skb)->nr_frags;
		netmem_ref netmem;
		unsigned int poff;
		int err;

		if (nr == MAX_SKB_FRAGS)
			goto drop_skb;
		netmem = devtcp_pp_alloc_netmem(pool, &poff, &truesize);
		if (!netmem)
			goto drop_skb;
		skb_add_rx_frag_netmem(skb, nr, netmem, poff, chunk, truesize);
		err = devtcp_dma_write(rxq, pool, netmem, poff, src, off, chunk, accp);
		if (err) {
			bool miss = err == -ENXIO && netmem_is_net_iov(netmem);

			dev_kfree_skb_any(skb);
			net_err_ratelimited("%s: queue %u: payload DMA failed%s, frame dropped\n",
					    priv->dev->name, rxq->idx,
					    miss ? " (provider memory no window covers)" : "");
			devtcp_rx_drop(rxq, miss ? DEVTCP_RX_DROP_WINDOW : DEVTCP_RX_DROP_DMA);
			return;
		}
		off += chunk;
	}
	if (!mem->hds) {
		devtcp_parse(skb, len, &p);
		if (unlikely(p.malformed || (gso && !devtcp_rx_gso_ok(src, &p))))
			goto malformed;
		if (!__pskb_pull_tail(skb, p.hdr_len))
			goto drop_skb;
		csum = devtcp_rx_csum_plan(rxq, src, skb, &p, &fill);
	}

	if (accp) {
		if (!devtcp_rx_provider_csum(skb, &p, accp, fill)) {
			dev_kfree_skb_any(skb);
			devtcp_rx_drop(rxq, DEVTCP_RX_DROP_CSUM);
			return;
		}
	} else {
		if (fill)
			devtcp_rx_csum_fill(skb, src, &p);
		if (csum == DEVTCP_CSUM_CHECK)
			csum = devtcp_csum_ok(skb, &p) ? DEVTCP_CSUM_GOOD : DEVTCP_CSUM_BAD;
	}
	skb->ip_summed = csum == DEVTCP_CSUM_GOOD ? CHECKSUM_UNNECESSARY : CHECKSUM_NONE;
	if (gso)
		devtcp_rx_gso(skb, src, &p);
	skb->protocol = eth_type_trans(skb, priv->dev);
	if (src->hash)
		skb_set_hash(skb, src->hash, p.proto ? PKT_HASH_TYPE_L4 : PKT_HASH_TYPE_L3);
	skb_record_rx_queue(skb, rxq->idx);
	devtcp_rx_count(rxq, skb, len, mem->hds && hlen < len, csum);
	/*
	 * GRO would append a provider frame's net_iovs to a host-memory skb
	 * of the same flow (or the reverse) without marking it unreadable. So
	 * nothing GRO holds meets this one, which keeps its place in the
	 * queue's order (flushed skbs wait in the NAPI's list, in order).
	 */
	if (no_gro)
		napi_gro_flush(&rxq->napi, false);
	napi_gro_receive(&rxq->napi, skb);
	if (no_gro)
		napi_gro_flush(&rxq->napi, false);
	return;

malformed:
	dev_kfree_skb_any(skb);
	devtcp_rx_drop(rxq, DEVTCP_RX_DROP_MALFORMED);
	return;
drop_skb:
	dev_kfree_skb_any(skb);
drop:
	devtcp_rx_drop(rxq, DEVTCP_RX_DROP_ALLOC);
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
	mem->unreadable = page_pool_is_unreadable(mem->data_pool);
	/* Provider memory the device cannot reach is refused here, not per frame. */
	err = devtcp_windows_get(rxq, mem);
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
	devtcp_windows_put(mem);
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
