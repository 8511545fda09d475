// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Kernel state for tools: a device's queues, page pools and per-queue
 * counters, as netdev netlink reports them.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include "internal.h"
#include "devtcp/nl_numbers.h"

struct queues_dump {
	struct devmem_queue_info *out;
	unsigned int max, count;
};

static int queues_cb(const struct nlmsghdr *nlh, void *data)
{
	struct queues_dump *d = data;
	struct devmem_queue_info q = { 0 };
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_NETDEV_A_QUEUE_ID: q.id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_QUEUE_TYPE: q.rx = mnl_attr_get_u32(a) == DM_NETDEV_QUEUE_TYPE_RX; break;
		case DM_NETDEV_A_QUEUE_NAPI_ID: q.napi_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_QUEUE_DMABUF: q.dmabuf_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_QUEUE_IO_URING: q.io_uring = true; break;
		}
	}
	if (d->count < d->max)
		d->out[d->count] = q;
	d->count++;
	return 0;
}

DEVMEM_EXPORT int devmem_nic_queues(struct devmem_nic *nic, struct devmem_queue_info *out,
				    unsigned int max)
{
	struct queues_dump d = { .out = out, .max = out ? max : 0 };
	struct nlmsghdr *nlh;
	char what[64];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_queues: nic is NULL");
	nlh = devmem_nl_msg(nic->nl, nic->netdev, DM_NETDEV_CMD_QUEUE_GET,
			    DM_NETDEV_FAMILY_VERSION, NLM_F_DUMP);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_QUEUE_IFINDEX, nic->ifindex);
	snprintf(what, sizeof(what), "%s: netdev queue-get", nic->name);
	err = devmem_nl_request(nic->nl, nlh, queues_cb, &d, what);
	return err ? err : (int)d.count;
}

struct pools_dump {
	int ifindex;
	struct devmem_page_pool_info *out;
	unsigned int max, count;
};

static int pools_cb(const struct nlmsghdr *nlh, void *data)
{
	struct pools_dump *d = data;
	struct devmem_page_pool_info p = { 0 };
	const struct nlattr *a;
	int ifindex = 0;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_NETDEV_A_PAGE_POOL_ID: p.id = devmem_nl_uint(a); break;
		case DM_NETDEV_A_PAGE_POOL_IFINDEX: ifindex = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_PAGE_POOL_NAPI_ID: p.napi_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_PAGE_POOL_INFLIGHT: p.inflight = devmem_nl_uint(a); break;
		case DM_NETDEV_A_PAGE_POOL_INFLIGHT_MEM: p.inflight_mem = devmem_nl_uint(a); break;
		case DM_NETDEV_A_PAGE_POOL_DETACH_TIME: p.detached = true; break;
		case DM_NETDEV_A_PAGE_POOL_DMABUF: p.dmabuf_id = mnl_attr_get_u32(a); break;
		case DM_NETDEV_A_PAGE_POOL_IO_URING: p.io_uring = true; break;
		}
	}
	/* The dump lists the pools of every device. */
	if (ifindex != d->ifindex)
		return 0;
	if (d->count < d->max)
		d->out[d->count] = p;
	d->count++;
	return 0;
}

DEVMEM_EXPORT int devmem_nic_page_pools(struct devmem_nic *nic, struct devmem_page_pool_info *out,
					unsigned int max)
{
	struct pools_dump d = { .out = out, .max = out ? max : 0 };
	struct nlmsghdr *nlh;
	char what[64];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_page_pools: nic is NULL");
	d.ifindex = nic->ifindex;
	nlh = devmem_nl_msg(nic->nl, nic->netdev, DM_NETDEV_CMD_PAGE_POOL_GET,
			    DM_NETDEV_FAMILY_VERSION, NLM_F_DUMP);
	snprintf(what, sizeof(what), "%s: netdev page-pool-get", nic->name);
	err = devmem_nl_request(nic->nl, nlh, pools_cb, &d, what);
	return err ? err : (int)d.count;
}

struct qstats_dump {
	int queue;
	bool found;
	struct devmem_qstats *out;
};

static int qstats_cb(const struct nlmsghdr *nlh, void *data)
{
	struct qstats_dump *d = data;
	struct devmem_qstats s = { 0 };
	const struct nlattr *a;
	int type = -1, id = -1;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case DM_NETDEV_A_QSTATS_QUEUE_TYPE: type = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_QUEUE_ID: id = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_RX_PACKETS: s.rx_packets = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_RX_BYTES: s.rx_bytes = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_RX_ALLOC_FAIL: s.rx_alloc_fail = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_TX_PACKETS: s.tx_packets = devmem_nl_uint(a); break;
		case DM_NETDEV_A_QSTATS_TX_BYTES: s.tx_bytes = devmem_nl_uint(a); break;
		}
	}
	if (d->queue < 0) {
		*d->out = s;
		d->found = true;
	} else if (id == d->queue && type == DM_NETDEV_QUEUE_TYPE_RX) {
		d->out->rx_packets = s.rx_packets;
		d->out->rx_bytes = s.rx_bytes;
		d->out->rx_alloc_fail = s.rx_alloc_fail;
		d->found = true;
	} else if (id == d->queue && type == DM_NETDEV_QUEUE_TYPE_TX) {
		d->out->tx_packets = s.tx_packets;
		d->out->tx_bytes = s.tx_bytes;
		d->found = true;
	}
	return 0;
}

DEVMEM_EXPORT int devmem_nic_qstats(struct devmem_nic *nic, int queue, struct devmem_qstats *out)
{
	struct devmem_qstats s = { 0 };
	struct qstats_dump d = { .queue = queue, .out = &s };
	struct nlmsghdr *nlh;
	char what[80];
	int err;

	if (!nic || !out)
		return devmem_fail(-EINVAL, "devmem_nic_qstats: nic and out must not be NULL");
	nlh = devmem_nl_msg(nic->nl, nic->netdev, DM_NETDEV_CMD_QSTATS_GET,
			    DM_NETDEV_FAMILY_VERSION, NLM_F_DUMP);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_QSTATS_IFINDEX, nic->ifindex);
	if (queue >= 0)
		mnl_attr_put_u32(nlh, DM_NETDEV_A_QSTATS_SCOPE, DM_NETDEV_QSTATS_SCOPE_QUEUE);
	snprintf(what, sizeof(what), "%s: netdev qstats-get%s", nic->name,
		 queue >= 0 ? " (scope queue)" : "");
	err = devmem_nl_request(nic->nl, nlh, qstats_cb, &d, what);
	if (err == -EOPNOTSUPP)
		return devmem_fail(err, "%s: the driver reports no queue statistics (qstats)",
				   nic->name);
	if (err)
		return err;
	if (!d.found && queue >= 0) {
		unsigned int n = 0;

		devmem_nic_rx_queues(nic, &n);
		return devmem_fail(-EINVAL, "%s: queue %d does not exist (%u RX queues; raise the "
				   "count with devmem_nic_set_queues() or ethtool -L %s combined N)",
				   nic->name, queue, n, nic->name);
	}
	if (!d.found)
		return devmem_fail(-EOPNOTSUPP, "%s: the driver reports no statistics through "
				   "netdev qstats", nic->name);
	*out = s;
	return 0;
}
