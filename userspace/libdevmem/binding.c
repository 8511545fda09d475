// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * dma-buf bindings through netdev netlink. The kernel ties a binding to the
 * netlink socket that made it, so each binding owns its socket: unbinding is
 * closing it, and bindings are independent of each other and of the NIC
 * handle they were made with (which may be closed first).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "devtcp/nl_numbers.h"

struct devmem_binding {
	struct devmem_nl *nl;
	struct devmem_mem *mem;
	uint32_t id;
	uint32_t page_size;		/* of the RX buffers; 0 for TX */
};

static int id_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr))
		if (mnl_attr_get_type(a) == DM_NETDEV_A_DMABUF_ID)
			*(uint32_t *)data = mnl_attr_get_u32(a);
	return 0;
}

/* A binding and its netlink socket; -EOPNOTSUPP, saying so, when the kernel
 * lacks the command @cmd (6.12 LTS has bind-rx only). */
static int binding_new(struct devmem_binding **b, struct devmem_mem *mem, const char *ifname,
		       uint16_t *family, unsigned int cmd)
{
	uint64_t ops = 0;
	int err;

	*b = calloc(1, sizeof(**b));
	if (!*b)
		return devmem_fail(-ENOMEM, "%s: no memory for a binding", ifname);
	(*b)->mem = mem;
	err = devmem_nl_open(&(*b)->nl, ifname);
	if (!err)
		err = devmem_nl_family((*b)->nl, DM_NETDEV_FAMILY_NAME, family, &ops, ifname);
	if (!err && !(ops & (1ull << cmd)))
		err = devmem_fail(-EOPNOTSUPP, "%s: this kernel has no devmem %s (netdev %s: Linux %s "
				  "and later; see devmem_kernel_features(3))", ifname,
				  cmd == DM_NETDEV_CMD_BIND_TX ? "TX" : "RX",
				  cmd == DM_NETDEV_CMD_BIND_TX ? "bind-tx" : "bind-rx",
				  cmd == DM_NETDEV_CMD_BIND_TX ? "6.15" : "6.12");
	if (err) {
		devmem_nl_close((*b)->nl);
		free(*b);
	}
	return err;
}

/* Which of @queues a memory provider (dma-buf or io_uring) already holds:
 * false if none (or the list cannot be read). */
static bool held_queue(struct devmem_nic *nic, const unsigned int *queues, unsigned int n,
		       struct devmem_queue_info *held)
{
	struct devmem_queue_info info[256];
	int count = devmem_nic_queues(nic, info, 256), i;
	unsigned int j;

	for (i = 0; i < count && i < 256; i++) {
		if (!info[i].rx || (!info[i].dmabuf_id && !info[i].io_uring))
			continue;
		for (j = 0; j < n; j++) {
			if (queues[j] == info[i].id) {
				*held = info[i];
				return true;
			}
		}
	}
	return false;
}

/* Rewrites the kernel's refusal of a bind-rx as what to change. */
static int explain_bind_rx(struct devmem_nic *nic, const struct devmem_nl_ext *ext, int err,
			   const unsigned int *queues, unsigned int n, uint32_t page_size)
{
	const char *name = devmem_nic_name(nic);
	unsigned int lowest = queues[0], i;
	struct devmem_queue_info held;

	if (page_size) {
		/* Kernels before 7.3 do not know the attribute. */
		if (ext->has_bad_attr && !ext->bad_nest &&
		    ext->bad_type == DM_NETDEV_A_DMABUF_RX_PAGE_SIZE &&
		    (!ext->msg[0] || strstr(ext->msg, "Unknown attribute")))
			return devmem_fail(err, "%s: this kernel has no rx-page-size (Linux 7.3 and "
					   "later): bind with pages of the system's size (kernel: "
					   "%s)", name, ext->msg[0] ? ext->msg : "attribute refused");
		if (strstr(ext->msg, "does not support: rx_page_size"))
			return devmem_fail(err, "%s: its driver does not take an rx-page-size: bind "
					   "with pages of the system's size (kernel: %s)", name,
					   ext->msg);
		if (strstr(ext->msg, "not aligned to niov size"))
			return devmem_fail(err, "%s: the dma-buf's chunks are not aligned to the "
					   "rx-page-size %u: use huge pages (DEVMEM_MEM_HUGEPAGES) or a "
					   "dma-heap (kernel: %s)", name, page_size, ext->msg);
	}

	/* The kernel restarts queues in index order, so the lowest failed. */
	for (i = 1; i < n; i++)
		if (queues[i] < lowest)
			lowest = queues[i];
	if (strstr(ext->msg, "tcp-data-split is disabled"))
		return devmem_fail(err, "%s queue %u: header split is off: call "
				   "devmem_nic_set_header_split(nic, true) (ethtool -G %s "
				   "tcp-data-split on) (kernel: %s)", name, lowest, name, ext->msg);
	/* 6.12 checks no header split: the restarted queue just left the
	 * dma-buf unused (ENODATA, no message). */
	if (err == -ENODATA && !ext->msg[0]) {
		struct devmem_nic_state st;

		if (!devmem_nic_state(nic, &st) && !st.header_split)
			return devmem_fail(err, "%s queue %u: header split is off: call "
					   "devmem_nic_set_header_split(nic, true) (ethtool -G %s "
					   "tcp-data-split on) (kernel: the queue did not take the "
					   "dma-buf, ENODATA)", name, lowest, name);
	}
	if (strstr(ext->msg, "hds-thresh is not zero"))
		return devmem_fail(err, "%s queue %u: hds-thresh is not 0: call "
				   "devmem_nic_set_header_split(nic, true) (ethtool -G %s "
				   "hds-thresh 0) (kernel: %s)", name, lowest, name, ext->msg);
	if (strstr(ext->msg, "already memory provider bound")) {
		const char *msg = ext->msg;

		if (!held_queue(nic, queues, n, &held))
			return devmem_fail(err, "%s: one of the queues is already bound: unbind "
					   "it first (kernel: %s)", name, msg);
		if (held.dmabuf_id)
			return devmem_fail(err, "%s queue %u is already bound to dmabuf %u: unbind "
					   "it first (devmem_unbind) or pick another queue "
					   "(kernel: %s)", name, held.id, held.dmabuf_id, msg);
		return devmem_fail(err, "%s queue %u is already used by an io_uring zcrx area: "
				   "close it first or pick another queue (kernel: %s)", name,
				   held.id, msg);
	}
	/* The kernel points at the queue id it refused. */
	if (ext->has_bad_attr && ext->bad_nest == DM_NETDEV_A_DMABUF_QUEUES &&
	    ext->bad_type == DM_NETDEV_A_QUEUE_ID)
		return devmem_fail(err, "%s: queue %u does not exist (the kernel refused it; "
				   "ethtool -l %s shows the queue count)", name, ext->bad_value,
				   name);
	if (strstr(ext->msg, "out of range"))
		return devmem_fail(err, "%s queue %u: does not exist (kernel: %s)", name, lowest,
				   ext->msg);
	return err;	/* devmem_nl_request()'s message stands */
}

DEVMEM_EXPORT int devmem_bind_rx(struct devmem_binding **out, struct devmem_nic *nic,
				 struct devmem_mem *mem, const unsigned int *queues, unsigned int n)
{
	return devmem_bind_rx_page_size(out, nic, mem, queues, n, 0);
}

DEVMEM_EXPORT int devmem_bind_rx_page_size(struct devmem_binding **out, struct devmem_nic *nic,
					   struct devmem_mem *mem, const unsigned int *queues,
					   unsigned int n, uint32_t page_size)
{
	const uint32_t sys_page = (uint32_t)sysconf(_SC_PAGESIZE);
	struct devmem_binding *b;
	struct nlmsghdr *nlh;
	unsigned int rxq, i, j;
	uint16_t family;
	char what[128];
	int err;

	if (!out || !nic || !mem)
		return devmem_fail(-EINVAL, "devmem_bind_rx: out, nic and mem must not be NULL");
	if (page_size == sys_page)
		page_size = 0;	/* the default: no attribute, so any kernel takes it */
	if (page_size && (page_size < sys_page || (page_size & (page_size - 1))))
		return devmem_fail(-EINVAL, "%s: rx-page-size %u: want a power of two from the page "
				   "size (%u) up", devmem_nic_name(nic), page_size, sys_page);
	if (!queues || !n)
		return devmem_fail(-EINVAL, "%s: bind-rx needs at least one queue",
				   devmem_nic_name(nic));
	err = devmem_nic_rx_queues(nic, &rxq);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		if (queues[i] >= rxq)
			return devmem_fail(-EINVAL, "%s: queue %u does not exist (%u RX queues; raise "
					   "the count with devmem_nic_set_queues() or ethtool -L %s "
					   "combined N)", devmem_nic_name(nic), queues[i], rxq,
					   devmem_nic_name(nic));
		for (j = 0; j < i; j++)
			if (queues[j] == queues[i])
				return devmem_fail(-EINVAL, "%s: queue %u is listed twice in one "
						   "bind-rx", devmem_nic_name(nic), queues[i]);
	}
	err = binding_new(&b, mem, devmem_nic_name(nic), &family, DM_NETDEV_CMD_BIND_RX);
	if (err)
		return err;
	nlh = devmem_nl_msg(b->nl, family, DM_NETDEV_CMD_BIND_RX, DM_NETDEV_FAMILY_VERSION, 0);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_IFINDEX, devmem_nic_ifindex(nic));
	for (i = 0; i < n; i++) {
		struct nlattr *nest = mnl_attr_nest_start(nlh, DM_NETDEV_A_DMABUF_QUEUES);

		mnl_attr_put_u32(nlh, DM_NETDEV_A_QUEUE_ID, queues[i]);
		mnl_attr_put_u32(nlh, DM_NETDEV_A_QUEUE_TYPE, DM_NETDEV_QUEUE_TYPE_RX);
		mnl_attr_nest_end(nlh, nest);
	}
	mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_FD, devmem_mem_fd(mem));
	if (page_size)
		mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_RX_PAGE_SIZE, page_size);
	snprintf(what, sizeof(what), "%s: bind-rx of %zu bytes to %u queue%s from %u, %u-byte pages",
		 devmem_nic_name(nic), devmem_mem_size(mem), n, n > 1 ? "s" : "", queues[0],
		 page_size ? page_size : sys_page);
	b->page_size = page_size ? page_size : sys_page;
	err = devmem_nl_request(b->nl, nlh, id_cb, &b->id, what);
	if (err)
		err = explain_bind_rx(nic, devmem_nl_ext(b->nl), err, queues, n, page_size);
	else if (!b->id)
		err = devmem_fail(-EPROTO, "%s: bind-rx replied without a dmabuf id",
				  devmem_nic_name(nic));
	if (err) {
		devmem_unbind(b);
		return err;
	}
	*out = b;
	return 0;
}

DEVMEM_EXPORT int devmem_bind_tx(struct devmem_binding **out, struct devmem_nic *nic,
				 struct devmem_mem *mem)
{
	struct devmem_binding *b;
	struct nlmsghdr *nlh;
	uint16_t family;
	char what[96];
	int err;

	if (!out || !nic || !mem)
		return devmem_fail(-EINVAL, "devmem_bind_tx: out, nic and mem must not be NULL");
	err = binding_new(&b, mem, devmem_nic_name(nic), &family, DM_NETDEV_CMD_BIND_TX);
	if (err)
		return err;
	nlh = devmem_nl_msg(b->nl, family, DM_NETDEV_CMD_BIND_TX, DM_NETDEV_FAMILY_VERSION, 0);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_IFINDEX, devmem_nic_ifindex(nic));
	mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_FD, devmem_mem_fd(mem));
	snprintf(what, sizeof(what), "%s: bind-tx of %zu bytes", devmem_nic_name(nic),
		 devmem_mem_size(mem));
	err = devmem_nl_request(b->nl, nlh, id_cb, &b->id, what);
	if (!err && !b->id)
		err = devmem_fail(-EPROTO, "%s: bind-tx replied without a dmabuf id",
				  devmem_nic_name(nic));
	if (err) {
		devmem_unbind(b);
		return err;
	}
	*out = b;
	return 0;
}

DEVMEM_EXPORT void devmem_unbind(struct devmem_binding *binding)
{
	if (!binding)
		return;
	/* Closing the socket is the unbind: the kernel releases the binding,
	 * and RX queues restart on host pages, before close() returns. */
	devmem_nl_close(binding->nl);
	free(binding);
}

DEVMEM_EXPORT uint32_t devmem_binding_id(const struct devmem_binding *binding)
{
	return binding->id;
}

DEVMEM_EXPORT struct devmem_mem *devmem_binding_mem(const struct devmem_binding *binding)
{
	return binding->mem;
}

DEVMEM_EXPORT uint32_t devmem_binding_page_size(const struct devmem_binding *binding)
{
	return binding->page_size;
}
