// SPDX-License-Identifier: GPL-2.0
/*
 * CPU windows onto provider memory that has no struct page: a GPU's BAR
 * exported as a dma-buf (sg entries with a DMA address and no page), or any
 * provider memory behind an IOMMU. The device model reaches memory through
 * the CPU, so when a queue starts on such memory its buffers are translated
 * from DMA addresses to physical ones (through the DMA device's IOMMU
 * domain, when it has a translating one) and mapped: write-combined where
 * they are not system RAM, the direct map where they are. System RAM that
 * the device reaches without an IOMMU has pages and needs no window: one
 * buffer tells. The windows belong to the binding: every queue started on
 * it shares them, and they last until the last of those queues stops.
 * Everything that can fail does so here, when the queue starts, never per
 * frame. A buffer that no start could see (held by an application, in an
 * area the kernel keeps private: every dma-buf area on 6.12) has no window;
 * a frame landing in it is dropped and counted in rx<q>_window_misses.
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
	struct list_head node;		/* in its devtcp_binding_windows */
	dma_addr_t dma;
	phys_addr_t phys;
	size_t len;
	void *va;
};

/*
 * The windows onto one binding's memory (a pool's mp_priv): every window any
 * queue's probe added, shared by all the queues started on the binding and
 * unmapped when the last of them stops.
 */
struct devtcp_binding_windows {
	struct list_head node;		/* in devtcp_bindings */
	const void *binding;
	struct list_head windows;
	refcount_t users;		/* RX queue memories started on it */
};

/* Read under RCU by the data path, changed under devtcp_windows_lock. */
static LIST_HEAD(devtcp_bindings);
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
	struct devtcp_binding_windows *b;
	struct devtcp_window *w;

	list_for_each_entry_rcu(b, &devtcp_bindings, node)
		list_for_each_entry_rcu(w, &b->windows, node)
			if (dma >= w->dma && dma - w->dma < w->len &&
			    len <= w->len - (dma - w->dma))
				return w->va + (dma - w->dma);
	return NULL;
}

bool devtcp_windows_exist(void)
{
	return !list_empty(&devtcp_bindings);
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

/* What a probe collects: the ranges to map, and the areas already listed whole. */
struct devtcp_probe {
	struct devtcp_rxq *rxq;
	struct iommu_domain *dom;
	u32 buf_size;
	struct devtcp_vec ranges;	/* struct devtcp_range */
	struct devtcp_vec areas;	/* const void *: areas listed whole */
};

/* Adds the pages of the buffer at @dma that have no page the CPU can reach. */
static int devtcp_probe_buf(struct devtcp_probe *p, dma_addr_t dma)
{
	unsigned int off;
	int err = 0;

	for (off = 0; !err && off < p->buf_size; off += PAGE_SIZE) {
		phys_addr_t phys = p->dom ? iommu_iova_to_phys(p->dom, dma + off) :
				   __sme_clr(dma + off);

		if (p->dom && !phys) {
			netdev_err(p->rxq->priv->dev,
				   "queue %u: provider memory at DMA address %pad is not mapped in the DMA device's IOMMU domain\n",
				   p->rxq->idx, &dma);
			err = -EOPNOTSUPP;
		} else if (p->dom || !pfn_to_online_page(PHYS_PFN(phys))) {
			err = devtcp_range_add(&p->ranges, dma + off, phys, PAGE_SIZE);
		}
	}
	return err;
}

/*
 * Lists every buffer of @netmem's area, held by an application or not, when
 * the kernel shows areas (net_iov_area, 6.13 on). Returns whether it did.
 */
static int devtcp_probe_area(struct devtcp_probe *p, netmem_ref netmem, bool *listed)
{
	struct net_iov *niovs;
	const void **slot;
	size_t i, n;
	const void *area = devtcp_netmem_area(netmem, &niovs, &n);

	*listed = false;
	if (!area)
		return 0;
	for (i = 0; i < p->areas.n; i++)
		if (((const void **)p->areas.a)[i] == area) {
			*listed = true;
			return 0;
		}
	slot = devtcp_vec_push(&p->areas);
	if (!slot)
		return -ENOMEM;
	*slot = area;
	*listed = true;
	for (i = 0; i < n; i++) {
		netmem_ref buf = net_iov_to_netmem(&niovs[i]);
		int err = devtcp_probe_buf(p, page_pool_get_dma_addr_netmem(buf));

		if (err)
			return err;
	}
	return 0;
}

/*
 * The ranges to map for @pool's memory. One buffer tells whether there is
 * anything to map: system RAM the device reaches without an IOMMU has pages,
 * and needs none. Otherwise every buffer of the buffer's area is listed
 * without allocating where the kernel shows areas; an io_uring area is the
 * provider's only one. A dma-buf binding has an area per sg entry, found
 * only through its free buffers: all of them are taken and given back.
 */
static int devtcp_pool_ranges(struct devtcp_probe *p, struct page_pool *pool)
{
	struct devtcp_vec taken = { .elem = sizeof(netmem_ref) };
	netmem_ref netmem, *slot;
	dma_addr_t dma;
	bool listed;
	unsigned int i;
	int err = 0;

	netmem = page_pool_alloc_netmems(pool, GFP_KERNEL);
	/*
	 * Every buffer is out (an application holds its tokens or zcrx
	 * buffers): the queue starts empty and fills as they come back, with
	 * the binding's windows from earlier starts.
	 */
	if (!netmem)
		return 0;
	/* The fault stands for a GPU the NIC cannot reach peer to peer. */
	if (devtcp_fault_dma_refused(p->rxq->priv)) {
		netdev_err(p->rxq->priv->dev,
			   "queue %u: provider memory is out of the device's DMA reach (the dma-unreachable fault)\n",
			   p->rxq->idx);
		page_pool_put_full_netmem(pool, netmem, false);
		return -EOPNOTSUPP;
	}
	dma = page_pool_get_dma_addr_netmem(netmem);
	if (!p->dom && pfn_to_online_page(PHYS_PFN(__sme_clr(dma)))) {
		page_pool_put_full_netmem(pool, netmem, false);
		return 0;
	}
	err = devtcp_probe_area(p, netmem, &listed);
	if (err || (listed && devtcp_netmem_is_iouring(netmem))) {
		page_pool_put_full_netmem(pool, netmem, false);
		return err;
	}
	do {
		slot = devtcp_vec_push(&taken);
		if (!slot) {
			page_pool_put_full_netmem(pool, netmem, false);
			err = -ENOMEM;
			break;
		}
		*slot = netmem;
		err = devtcp_probe_area(p, netmem, &listed);
		if (!err && !listed)
			err = devtcp_probe_buf(p, page_pool_get_dma_addr_netmem(netmem));
	} while (!err && (netmem = page_pool_alloc_netmems(pool, GFP_KERNEL)));
	for (i = 0; i < taken.n; i++)
		page_pool_put_full_netmem(pool, ((netmem_ref *)taken.a)[i], false);
	kvfree(taken.a);
	return err;
}

/* Maps @r into @b: write-combined unless it is system RAM (behind an IOMMU). */
static int devtcp_window_map(struct devtcp_rxq *rxq, struct devtcp_binding_windows *b,
			     const struct devtcp_range *r)
{
	int ram = region_intersects(r->phys, r->len, IORESOURCE_SYSTEM_RAM, IORES_DESC_NONE);
	struct devtcp_window *w;

	if (ram == REGION_MIXED) {
		netdev_err(rxq->priv->dev,
			   "queue %u: provider memory at %pa (%zu bytes) is partly system RAM: refused\n",
			   rxq->idx, &r->phys, r->len);
		return -EOPNOTSUPP;
	}
	w = kzalloc_obj(*w);
	if (!w)
		return -ENOMEM;
	w->va = memremap(r->phys, r->len, ram == REGION_INTERSECTS ? MEMREMAP_WB : MEMREMAP_WC);
	if (!w->va) {
		netdev_err(rxq->priv->dev,
			   "queue %u: cannot map provider memory at %pa (%zu bytes) write-combined\n",
			   rxq->idx, &r->phys, r->len);
		kfree(w);
		return -EOPNOTSUPP;
	}
	w->dma = r->dma;
	w->phys = r->phys;
	w->len = r->len;
	/* Mapped before it is visible: nothing to undo but the binding's release. */
	list_add_tail_rcu(&w->node, &b->windows);
	return 0;
}

static bool devtcp_binding_covers(const struct devtcp_binding_windows *b,
				  const struct devtcp_range *r)
{
	const struct devtcp_window *w;

	list_for_each_entry(w, &b->windows, node)
		if (r->dma >= w->dma && r->dma + r->len <= w->dma + w->len &&
		    r->phys - w->phys == r->dma - w->dma)
			return true;
	return false;
}

/* @binding's windows, with a user more; under devtcp_windows_lock. */
static struct devtcp_binding_windows *devtcp_binding_get(const void *binding)
{
	struct devtcp_binding_windows *b;

	list_for_each_entry(b, &devtcp_bindings, node)
		if (b->binding == binding) {
			refcount_inc(&b->users);
			return b;
		}
	b = kzalloc_obj(*b);
	if (!b)
		return NULL;
	b->binding = binding;
	INIT_LIST_HEAD(&b->windows);
	refcount_set(&b->users, 1);
	list_add_tail_rcu(&b->node, &devtcp_bindings);
	return b;
}

/*
 * A queue is about to start on @mem, whose payload pool may be a memory
 * provider's: map the provider's memory that has no page, or refuse. The
 * binding's windows from other queues and earlier starts are kept, with the
 * buffers they cover that applications still hold.
 */
int devtcp_windows_get(struct devtcp_rxq *rxq, struct devtcp_rx_mem *mem)
{
	struct page_pool *pool = mem->data_pool;
	struct devtcp_probe p = {
		.rxq = rxq, .dom = devtcp_dma_paging_domain(), .buf_size = mem->buf_size,
		.ranges = { .elem = sizeof(struct devtcp_range) },
		.areas = { .elem = sizeof(void *) },
	};
	struct devtcp_binding_windows *b;
	unsigned int i;
	int err;

	if (!page_pool_is_unreadable(pool))
		return 0;
	/* Kernels without ndo_queue_get_dma_dev map the binding with our device too. */
	devtcp_note_provider();
	err = devtcp_pool_ranges(&p, pool);
	if (err)
		goto out;
	devtcp_ranges_merge(&p.ranges);

	mutex_lock(&devtcp_windows_lock);
	b = devtcp_binding_get(pool->mp_priv);
	if (!b)
		err = -ENOMEM;
	for (i = 0; b && !err && i < p.ranges.n; i++) {
		const struct devtcp_range *r = (struct devtcp_range *)p.ranges.a + i;

		if (!devtcp_binding_covers(b, r))
			err = devtcp_window_map(rxq, b, r);
	}
	mutex_unlock(&devtcp_windows_lock);
	mem->windows = b;
	if (err)
		devtcp_windows_put(mem);
out:
	kvfree(p.ranges.a);
	kvfree(p.areas.a);
	return err;
}

/* The queue no longer uses @mem: a binding no queue uses loses its windows. */
void devtcp_windows_put(struct devtcp_rx_mem *mem)
{
	struct devtcp_binding_windows *b = mem->windows;
	struct devtcp_window *w, *tmp;

	mem->windows = NULL;
	if (!b)
		return;
	mutex_lock(&devtcp_windows_lock);
	if (!refcount_dec_and_test(&b->users)) {
		mutex_unlock(&devtcp_windows_lock);
		return;
	}
	list_del_rcu(&b->node);
	mutex_unlock(&devtcp_windows_lock);
	/* Readers (a peer's TX reading a frame) may still be in one. */
	synchronize_rcu();
	list_for_each_entry_safe(w, tmp, &b->windows, node) {
		memunmap(w->va);
		kfree(w);
	}
	kfree(b);
}
