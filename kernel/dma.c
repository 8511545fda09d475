// SPDX-License-Identifier: GPL-2.0
/*
 * The device model's DMA engine. devtcp maps buffers without an IOMMU, so a
 * DMA address is a physical address (less the memory encryption bit), and
 * the device reaches what is behind it one page of system RAM at a time.
 * Memory without a struct page (a GPU BAR, device-private memory) cannot be
 * reached: such transfers fail instead of touching the wrong memory.
 *
 * The CPU cannot read unreadable netmem (net_iovs of a devmem binding or an
 * io_uring area) through the skb; the device does, through these helpers.
 */
#include <linux/highmem.h>
#include <linux/mem_encrypt.h>
#include <linux/memory_hotplug.h>
#include <linux/skbuff.h>
#include <net/checksum.h>
#include <net/page_pool/helpers.h>

#include "devtcp.h"

static struct page *devtcp_dma_page(dma_addr_t dma)
{
	return pfn_to_online_page(PHYS_PFN(__sme_clr(dma)));
}

/* Whether @priv's DMA engine can reach provider memory at @dma. */
bool devtcp_dma_reachable(struct devtcp_priv *priv, dma_addr_t dma)
{
	return !devtcp_fault_dma_refused(priv) && devtcp_dma_page(dma);
}

/* Reads @len bytes at @dma into @to, page by page. */
static int devtcp_dma_read(dma_addr_t dma, void *to, unsigned int len)
{
	while (len) {
		unsigned int off = offset_in_page(dma);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);
		struct page *page = devtcp_dma_page(dma);

		if (!page)
			return -EFAULT;
		memcpy_from_page(to, page, off, n);
		dma += n;
		to += n;
		len -= n;
	}
	return 0;
}

/* Reads @len bytes at @off of fragment @f; net_iovs are read by DMA. */
static int devtcp_frag_read(const skb_frag_t *f, unsigned int off, void *to,
			    unsigned int len)
{
	const void *va;

	if (skb_frag_is_net_iov(f))
		return devtcp_dma_read(devtcp_frag_dma_map(devtcp_dma_dev(), f, off, len),
				       to, len);
	va = skb_frag_address_safe(f);
	if (!va)
		return -EFAULT;
	memcpy(to, va + off, len);
	return 0;
}

/*
 * The device reads @len bytes at @off of a frame on the wire. A frame sent
 * from a devmem TX binding has unreadable frags, which the device reads
 * through their DMA addresses as a NIC's TX engine would.
 */
int devtcp_wire_read(const struct sk_buff *skb, unsigned int off, void *to, unsigned int len)
{
	const struct skb_shared_info *si = skb_shinfo(skb);
	unsigned int start = skb_headlen(skb);
	int i, err;

	if (skb_frags_readable(skb))
		return skb_copy_bits(skb, off, to, len);
	if (off < start) {
		unsigned int n = min(len, start - off);

		memcpy(to, skb->data + off, n);
		to += n;
		off += n;
		len -= n;
	}
	for (i = 0; len && i < si->nr_frags; i++) {
		const skb_frag_t *f = &si->frags[i];
		unsigned int end = start + skb_frag_size(f);

		if (off < end) {
			unsigned int n = min(len, end - off);

			err = devtcp_frag_read(f, off - start, to, n);
			if (err)
				return err;
			to += n;
			off += n;
			len -= n;
		}
		start = end;
	}
	/* TCP frames carry no frag list. */
	return len ? -EFAULT : 0;
}

/*
 * Adds to @acc the bytes of @buf, which hold the frame's bytes from @soff on,
 * that fall in [acc->start, acc->end), placed as they are in that range.
 */
void devtcp_csum_acc_add(struct devtcp_csum_acc *acc, const void *buf, unsigned int soff,
			 unsigned int len)
{
	unsigned int from = max(soff, acc->start), to = min(soff + len, acc->end);

	if (from < to)
		acc->sum = csum_block_add(acc->sum, csum_partial(buf + (from - soff), to - from, 0),
					  from - acc->start);
}

/*
 * The device writes @len bytes of the frame @src at @soff to @dma, page by
 * page. Through the DMA address, as a device would: under swiotlb that is
 * the bounce slot, which the driver's sync for the CPU then copies into the
 * buffer (writing the buffer itself would be overwritten by that sync).
 * With @acc, it sums what it wrote as it goes, as a NIC's receive checksum
 * engine does: the bytes the buffer holds, whatever the sender does later.
 */
int devtcp_dma_write_at(dma_addr_t dma, const struct sk_buff *src, unsigned int soff,
			unsigned int len, struct devtcp_csum_acc *acc)
{
	while (len) {
		unsigned int off = offset_in_page(dma);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);
		struct page *page = devtcp_dma_page(dma);
		void *va;
		int err;

		if (!page)
			return -EFAULT;
		va = kmap_local_page(page);
		err = devtcp_wire_read(src, soff, va + off, n);
		if (!err && acc)
			devtcp_csum_acc_add(acc, va + off, soff, n);
		kunmap_local(va);
		if (err)
			return err;
		dma += n;
		soff += n;
		len -= n;
	}
	return 0;
}

/*
 * The same into the provider buffer @netmem at @off (a net_iov), unless the
 * dma-unreachable fault is on.
 */
int devtcp_dma_write_frame(struct devtcp_priv *priv, netmem_ref netmem, unsigned int off,
			   const struct sk_buff *src, unsigned int soff, unsigned int len,
			   struct devtcp_csum_acc *acc)
{
	if (devtcp_fault_dma_refused(priv))
		return -EFAULT;
	return devtcp_dma_write_at(page_pool_get_dma_addr_netmem(netmem) + off, src, soff, len,
				   acc);
}
