// SPDX-License-Identifier: GPL-2.0
/* Receive side scaling: Toeplitz hash and the indirection table. */
#include <linux/ethtool.h>
#include <linux/if_ether.h>
#include <linux/random.h>
#include <linux/unaligned.h>
#include <net/flow_dissector.h>

#include "devtcp.h"

/* The Toeplitz hash of @data under @key (Microsoft RSS specification). */
u32 devtcp_toeplitz(const u8 *key, const u8 *data, unsigned int len)
{
	u32 hash = 0, window;
	unsigned int i, bit;

	/* window holds key bits [i * 8, i * 8 + 32) as it slides */
	window = get_unaligned_be32(key);
	for (i = 0; i < len; i++) {
		u8 next = i + 4 < DEVTCP_RSS_KEY_SIZE ? key[i + 4] : 0;

		for (bit = 0; bit < 8; bit++) {
			if (data[i] & (0x80 >> bit))
				hash ^= window;
			window = (window << 1) | ((next >> (7 - bit)) & 1);
		}
	}
	return hash;
}

void devtcp_rss_reset_indir(struct devtcp_priv *priv, u32 channels)
{
	int i;

	for (i = 0; i < DEVTCP_RSS_INDIR_SIZE; i++)
		WRITE_ONCE(priv->rss.indir[i], ethtool_rxfh_indir_default(i, channels));
}

void devtcp_rss_init(struct devtcp_priv *priv)
{
	netdev_rss_key_fill(priv->rss.key, sizeof(priv->rss.key));
	devtcp_rss_reset_indir(priv, priv->dev->real_num_rx_queues);
}

/*
 * The receiving NIC's choice of RX queue for a frame whose first @hlen bytes
 * are @data (the rest in @skb's, when given): its ntuple rules first, then
 * RSS over the 4-tuple (2-tuple for non TCP/UDP) with the main table or the
 * context a rule names; *hash is the hash it reports. DEVTCP_RX_DROP when a
 * rule discards the frame. What the frame is comes from its own bytes, never
 * from the sender's skb->protocol.
 */
u32 devtcp_rx_classify(struct devtcp_priv *rx, const struct sk_buff *skb, const void *data,
		       unsigned int hlen, u32 *hash)
{
	u32 nq = READ_ONCE(rx->dev->real_num_rx_queues);
	const struct devtcp_rss *rss = &rx->rss;
	struct flow_keys keys = {};
	u8 in[36];
	int len = 0;
	u32 q;

	*hash = 0;
	if (hlen < ETH_HLEN ||
	    !__skb_flow_dissect(dev_net(rx->dev), skb, &flow_keys_dissector, &keys, data,
				((const struct ethhdr *)data)->h_proto, ETH_HLEN, hlen, 0))
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
		memcpy(in + len, &keys.ports.src, 2);
		memcpy(in + len + 2, &keys.ports.dst, 2);
		len += 4;
		q = devtcp_ntuple_lookup(rx, &keys, &rss);
		if (q == DEVTCP_RX_DROP)
			return q;
		if (q != DEVTCP_RX_RSS) {
			/* Steered frames still carry the main context's hash. */
			*hash = devtcp_toeplitz(rx->rss.key, in, len);
			return q < nq ? q : q % nq;
		}
	}

	*hash = devtcp_toeplitz(rss->key, in, len);
	q = READ_ONCE(rss->indir[*hash % DEVTCP_RSS_INDIR_SIZE]);
	return q < nq ? q : q % nq;
}
