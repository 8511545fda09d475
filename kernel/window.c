// SPDX-License-Identifier: GPL-2.0
/*
 * CPU windows onto provider memory that has no struct page: a GPU's BAR
 * exported as a dma-buf (sg entries with a DMA address and no page), or any
 * provider memory behind an IOMMU. The device model reaches memory through
 * the CPU, so when a queue starts on such memory, every buffer the provider
 * hands out is translated from its DMA address to a physical one (through
 * the DMA device's IOMMU domain, when it has a translating one) and mapped:
 * write-combined where it is not system RAM, the direct map where it is.
 * The mappings last as long as a queue of ours uses the binding; everything
 * that can fail does so here, when the queue starts, never per frame.
 */
#include <linux/io.h>
#include <linux/iommu.h>
#include <linux/mem_encrypt.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <net/page_pool/helpers.h>

#include "devtcp.h"

/* A mapped range, contiguous both in DMA and in physical addresses. */
struct devtcp_window {
	struct list_head node;		/* in devtcp_windows */
	dma_addr_t dma;
	phys_addr_t phys;
	size_t len;
	void *va;
	const void *binding;		/* the pool's mp_priv: whose memory */
	refcount_t refs;		/* RX queue memories using it */
};

/* Read under RCU by the data path, changed under devtcp_windows_lock. */
static LIST_HEAD(devtcp_windows);
static DEFINE_MUTEX(devtcp_windows_lock);

struct devtcp_range {
	dma_addr_t dma;
	phys_addr_t phys;
	size_t len;
};

/* A growing array of @elem-byte entries. */
struct devtcp_vec {
	void *a;
	unsigned int n, cap;
	size_t elem;
};

static void *devtcp_vec_push(struct devtcp_vec *v)
{
	if (v->n == v->cap) {
		unsigned int cap = max(2 * v->cap, 64U);
		void *a = kvmalloc_array(cap, v->elem, GFP_KERNEL);

		if (!a)
			return NULL;
		if (v->n)
			memcpy(a, v->a, v->n * v->elem);
		kvfree(v->a);
		v->a = a;
		v->cap = cap;
	}
	return v->a + v->n++ * v->elem;
}

/*
 * The CPU address of [@dma, @dma + @len) when a window holds all of it, else
 * NULL. Under rcu_read_lock(), which the caller holds while it uses it.
 */
void *devtcp_window_va(dma_addr_t dma, unsigned int len)
{
	struct devtcp_window *w;

	list_for_each_entry_rcu(w, &devtcp_windows, node)
		if (dma >= w->dma && dma - w->dma < w->len && len <= w->len - (dma - w->dma))
			return w->va + (dma - w->dma);
	return NULL;
}

bool devtcp_windows_exist(void)
{
	return !list_empty(&devtcp_windows);
}

static int devtcp_range_cmp(const void *a, const void *b)
{
	const struct devtcp_range *x = a, *y = b;

	return x->dma < y->dma ? -1 : x->dma > y->dma;
}

/* Adds a page (or larger buffer) to @v, merged with the last when it follows it. */
static int devtcp_range_add(struct devtcp_vec *v, dma_addr_t dma, phys_addr_t phys, size_t len)
{
	struct devtcp_range *r = v->n ? (struct devtcp_range *)v->a + v->n - 1 : NULL;

	if (r && r->dma + r->len == dma && r->phys + r->len == phys) {
		r->len += len;
		return 0;
	}
	r = devtcp_vec_push(v);
	if (!r)
		return -ENOMEM;
	*r = (struct devtcp_range){ .dma = dma, .phys = phys, .len = len };
	return 0;
}

/* Sorted by DMA address, with touching ranges merged. */
static void devtcp_ranges_merge(struct devtcp_vec *v)
{
	struct devtcp_range *r = v->a;
	unsigned int i, n = 0;

	sort(r, v->n, sizeof(*r), devtcp_range_cmp, NULL);
	for (i = 0; i < v->n; i++) {
		if (n && r[n - 1].dma + r[n - 1].len == r[i].dma &&
		    r[n - 1].phys + r[n - 1].len == r[i].phys)
			r[n - 1].len += r[i].len;
		else if (!n || r[n - 1].dma + r[n - 1].len <= r[i].dma)
			r[n++] = r[i];
		/* else: a buffer seen twice (it cannot overlap another) */
	}
	v->n = n;
}

/*
 * The physical ranges behind the buffers @pool hands out now: all of them
 * taken and given back. At the first start on a binding nothing is out yet.
 */
static int devtcp_pool_ranges(struct devtcp_rxq *rxq, struct page_pool *pool, u32 buf_size,
			      struct devtcp_vec *ranges)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(devtcp_dma_dev());
	struct devtcp_vec taken = { .elem = sizeof(netmem_ref) };
	struct net_device *dev = rxq->priv->dev;
	netmem_ref netmem, *slot;
	unsigned int i, off;
	int err = 0;

	if (dom && !(dom->type & __IOMMU_DOMAIN_PAGING))
		dom = NULL;		/* identity or blocked: no translation */
	while (!err && (netmem = page_pool_alloc_netmems(pool, GFP_KERNEL))) {
		dma_addr_t dma = page_pool_get_dma_addr_netmem(netmem);

		slot = devtcp_vec_push(&taken);
		if (!slot) {
			page_pool_put_full_netmem(pool, netmem, false);
			err = -ENOMEM;
			break;
		}
		*slot = netmem;
		/* The fault stands for a GPU the NIC cannot reach peer to peer. */
		if (taken.n == 1 && devtcp_fault_dma_refused(rxq->priv)) {
			netdev_err(dev,
				   "queue %u: provider memory is out of the device's DMA reach (the dma-unreachable fault)\n",
				   rxq->idx);
			err = -EOPNOTSUPP;
			break;
		}
		for (off = 0; !err && off < buf_size; off += PAGE_SIZE) {
			phys_addr_t phys = dom ? iommu_iova_to_phys(dom, dma + off) :
					   __sme_clr(dma + off);

			if (dom && !phys) {
				netdev_err(dev,
					   "queue %u: provider memory at DMA address %pad is not mapped in the DMA device's IOMMU domain\n",
					   rxq->idx, &dma);
				err = -EOPNOTSUPP;
			} else if (dom || !pfn_to_online_page(PHYS_PFN(phys))) {
				err = devtcp_range_add(ranges, dma + off, phys, PAGE_SIZE);
			}
		}
	}
	for (i = 0; i < taken.n; i++)
		page_pool_put_full_netmem(pool, ((netmem_ref *)taken.a)[i], false);
	kvfree(taken.a);
	return err;
}

static int devtcp_window_ref(struct devtcp_rx_mem *mem, struct devtcp_window *w)
{
	struct devtcp_window **slot;
	struct devtcp_vec v = { .a = mem->windows, .n = mem->nwindows,
				.cap = mem->nwindows, .elem = sizeof(*slot) };

	slot = devtcp_vec_push(&v);
	if (!slot)
		return -ENOMEM;
	*slot = w;
	mem->windows = v.a;
	mem->nwindows = v.n;
	return 0;
}

/* Maps @r: write-combined unless it is system RAM (behind an IOMMU). */
static struct devtcp_window *devtcp_window_map(struct devtcp_rxq *rxq,
					       const struct devtcp_range *r, const void *binding)
{
	int ram = region_intersects(r->phys, r->len, IORESOURCE_SYSTEM_RAM, IORES_DESC_NONE);
	struct devtcp_window *w;

	if (ram == REGION_MIXED) {
		netdev_err(rxq->priv->dev,
			   "queue %u: provider memory at %pa (%zu bytes) is partly system RAM: refused\n",
			   rxq->idx, &r->phys, r->len);
		return ERR_PTR(-EOPNOTSUPP);
	}
	w = kzalloc_obj(*w);
	if (!w)
		return ERR_PTR(-ENOMEM);
	w->va = memremap(r->phys, r->len, ram == REGION_INTERSECTS ? MEMREMAP_WB : MEMREMAP_WC);
	if (!w->va) {
		netdev_err(rxq->priv->dev,
			   "queue %u: cannot map provider memory at %pa (%zu bytes) write-combined\n",
			   rxq->idx, &r->phys, r->len);
		kfree(w);
		return ERR_PTR(-EOPNOTSUPP);
	}
	w->dma = r->dma;
	w->phys = r->phys;
	w->len = r->len;
	w->binding = binding;
	refcount_set(&w->refs, 1);
	list_add_tail_rcu(&w->node, &devtcp_windows);
	return w;
}

static bool devtcp_mem_covers(const struct devtcp_rx_mem *mem, const struct devtcp_range *r)
{
	unsigned int i;

	for (i = 0; i < mem->nwindows; i++) {
		const struct devtcp_window *w = mem->windows[i];

		if (r->dma >= w->dma && r->dma + r->len <= w->dma + w->len &&
		    r->phys - w->phys == r->dma - w->dma)
			return true;
	}
	return false;
}

/*
 * A queue is about to start on @mem, whose payload pool may be a memory
 * provider's: map the provider's memory that has no page, or refuse.
 * Windows the binding already has are shared, with the buffers they cover
 * that applications still hold.
 */
int devtcp_windows_get(struct devtcp_rxq *rxq, struct devtcp_rx_mem *mem)
{
	struct page_pool *pool = mem->data_pool;
	struct devtcp_vec ranges = { .elem = sizeof(struct devtcp_range) };
	struct devtcp_window *w;
	unsigned int i;
	int err;

	if (!page_pool_is_unreadable(pool))
		return 0;
	/* Kernels without ndo_queue_get_dma_dev map the binding with our device too. */
	devtcp_note_provider();
	err = devtcp_pool_ranges(rxq, pool, mem->buf_size, &ranges);
	if (err)
		goto out;
	devtcp_ranges_merge(&ranges);

	mutex_lock(&devtcp_windows_lock);
	list_for_each_entry(w, &devtcp_windows, node) {
		if (w->binding != pool->mp_priv)
			continue;
		err = devtcp_window_ref(mem, w);
		if (err)
			break;
		refcount_inc(&w->refs);
	}
	for (i = 0; !err && i < ranges.n; i++) {
		const struct devtcp_range *r = (struct devtcp_range *)ranges.a + i;

		if (devtcp_mem_covers(mem, r))
			continue;
		w = devtcp_window_map(rxq, r, pool->mp_priv);
		if (IS_ERR(w)) {
			err = PTR_ERR(w);
			break;
		}
		err = devtcp_window_ref(mem, w);
	}
	mutex_unlock(&devtcp_windows_lock);
	if (err)
		devtcp_windows_put(mem);
out:
	kvfree(ranges.a);
	return err;
}

/* The queue no longer uses @mem: windows no queue uses are unmapped. */
void devtcp_windows_put(struct devtcp_rx_mem *mem)
{
	unsigned int i, gone = 0;

	mutex_lock(&devtcp_windows_lock);
	for (i = 0; i < mem->nwindows; i++) {
		struct devtcp_window *w = mem->windows[i];

		if (refcount_dec_and_test(&w->refs)) {
			list_del_rcu(&w->node);
			mem->windows[gone++] = w;
		}
	}
	mutex_unlock(&devtcp_windows_lock);
	/* Readers (a peer's TX reading a frame) may still be in one. */
	if (gone)
		synchronize_rcu();
	for (i = 0; i < gone; i++) {
		memunmap(mem->windows[i]->va);
		kfree(mem->windows[i]);
	}
	kvfree(mem->windows);
	mem->windows = NULL;
	mem->nwindows = 0;
}
