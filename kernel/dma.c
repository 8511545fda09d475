// SPDX-License-Identifier: GPL-2.0
/*
 * The device model's DMA engine. devtcp maps buffers without an IOMMU, so a
 * DMA address is a physical address (less the memory encryption bit), and
 * the device reaches what is behind it one page of system RAM at a time.
 * Provider memory without a struct page (a GPU BAR) is reached through the
 * windows mapped when its queue started (window.c): written with
 * write-combined stores and a write barrier before the frame goes up, read
 * (slowly: a BAR read is uncached) for devmem TX. Anything else fails
 * instead of touching the wrong memory.
 *
 * The CPU cannot read unreadable netmem (net_iovs of a devmem binding or an
 * io_uring area) through the skb; the device does, through these helpers.
 */
#include <linux/highmem.h>
#include <linux/iommu.h>
#include <linux/mem_encrypt.h>
#include <linux/memory_hotplug.h>
#include <linux/skbuff.h>
#include <net/checksum.h>
#include <net/page_pool/helpers.h>

#include "devtcp.h"

/* The DMA device's IOMMU domain when it translates (then a DMA address is no PFN). */
struct iommu_domain *devtcp_dma_paging_domain(void)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(devtcp_dma_dev());

	return dom && (dom->type & __IOMMU_DOMAIN_PAGING) ? dom : NULL;
}

static struct page *devtcp_dma_page(dma_addr_t dma)
{
	/* Behind a translating IOMMU only windows reach memory: never guess a PFN. */
	if (devtcp_dma_paging_domain())
		return NULL;
	return pfn_to_online_page(PHYS_PFN(__sme_clr(dma)));
}

/* Reads @len bytes at @dma into @to, page by page. */
static int devtcp_dma_read(dma_addr_t dma, void *to, unsigned int len)
{
	while (len) {
		unsigned int off = offset_in_page(dma);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);
		struct page *page;
		const void *va;

		rcu_read_lock();
		va = devtcp_window_va(dma, n);
		if (va)
			memcpy(to, va, n);
		rcu_read_unlock();
		page = va ? NULL : devtcp_dma_page(dma);
		if (!va && !page)
			return -EFAULT;
		if (page)
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
 * Writes through a window: bounced through the stack, so that the checksum
 * is summed from what was written without reading the BAR back.
 */
static int devtcp_window_write(void *va, const struct sk_buff *src, unsigned int soff,
			       unsigned int len, struct devtcp_csum_acc *acc)
{
	u8 buf[256];

	while (len) {
		unsigned int n = min_t(unsigned int, len, sizeof(buf));
		int err = devtcp_wire_read(src, soff, buf, n);

		if (err)
			return err;
		if (acc)
			devtcp_csum_acc_add(acc, buf, soff, n);
		memcpy(va, buf, n);
		va += n;
		soff += n;
		len -= n;
	}
	return 0;
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
	bool wc = false;
	int err = 0;

	while (!err && len) {
		unsigned int off = offset_in_page(dma);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);
		struct page *page;
		void *va;

		/* A window first: behind an IOMMU a DMA address is no PFN. */
		rcu_read_lock();
		va = devtcp_windows_exist() ? devtcp_window_va(dma, n) : NULL;
		if (va)
			err = devtcp_window_write(va, src, soff, n, acc);
		rcu_read_unlock();
		wc |= !!va;
		if (!va) {
			page = devtcp_dma_page(dma);
			if (!page) {
				err = -ENXIO;	/* no window and no page */
				break;
			}
			va = kmap_local_page(page);
			err = devtcp_wire_read(src, soff, va + off, n);
			if (!err && acc)
				devtcp_csum_acc_add(acc, va + off, soff, n);
			kunmap_local(va);
		}
		dma += n;
		soff += n;
		len -= n;
	}
	if (wc)
		/*
		 * Write-combined stores sit in the CPU's buffers until a store
		 * fence: they reach the BAR before the fragment reaches the socket.
		 */
		wmb();
	return err;
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
