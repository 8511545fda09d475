// SPDX-License-Identifier: GPL-2.0
/* Receive side scaling: Toeplitz hash and the indirection table. */
#include <linux/ethtool.h>
#include <linux/random.h>
#include <linux/unaligned.h>

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
