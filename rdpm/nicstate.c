// SPDX-License-Identifier: GPL-2.0
/*
 * NIC state: the reservation rdpmd makes at start (libdevmem's
 * devmem_nic_reserve) and the rules it installs, both recorded in the state
 * file STATE_DIR/IFNAME.state, which lets the next rdpmd undo them after a
 * crash.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdpmd.h"

/* Undoes what the state file of a previous run lists, through a handle
 * closed afterwards without restore. */
static void recover(struct rdpm_nic *n)
{
	struct devmem_nic *h;
	int rules;

	if (access(n->state_path, F_OK))
		return;
	if (devmem_nic_open(&h, n->conf.name)) {
		rdpm_log(LOG_ERR, "%s: recovery: %s", n->conf.name, devmem_last_error());
		return;
	}
	rdpm_log(LOG_NOTICE, "%s: a previous rdpmd did not exit cleanly: removing its rules and "
		 "RSS context, restoring the NIC", n->conf.name);
	rules = devmem_nic_release(h, n->state_path);
	if (rules == -ESTALE)
		rdpm_log(LOG_NOTICE, "%s: recovery: %s", n->conf.name, devmem_last_error());
	else if (rules < 0)
		rdpm_log(LOG_WARNING, "%s: recovery: %s", n->conf.name, devmem_last_error());
	else
		rdpm_log(LOG_NOTICE, "%s: recovery removed %d stale rule(s)", n->conf.name, rules);
	devmem_nic_close(h, false);
	/* What could not be undone is logged; the new reservation starts afresh. */
	unlink(n->state_path);
}

int rdpm_nic_setup(struct rdpm_nic *n, const char *state_dir)
{
	struct devmem_reservation r;
	int err;

	snprintf(n->state_path, sizeof(n->state_path), "%s/%s.state", state_dir, n->conf.name);
	err = devmem_nic_open(&n->nic, n->conf.name);
	if (err) {
		n->nic = NULL;
		rdpm_log(LOG_ERR, "%s: %s", n->conf.name, devmem_last_error());
		return err;
	}
	recover(n);
	err = devmem_nic_reserve(n->nic, 0, n->conf.reserve, n->state_path, &r);
	if (err) {
		rdpm_log(LOG_ERR, "%s: setup: %s", n->conf.name, devmem_last_error());
		devmem_nic_close(n->nic, false);
		n->nic = NULL;
		return err;
	}
	n->ifindex = r.ifindex;
	n->queues = r.queues;
	n->first = r.first;
	n->rss_ctx = r.rss_ctx;
	memset(n->rules, 0, sizeof(n->rules));
	memset(n->bound, 0, sizeof(n->bound));
	n->up = true;
	rdpm_log(LOG_INFO, "%s: queues %u-%u reserved for devmem (RSS context %u), header split "
		 "and ntuple on", n->conf.name, n->first, n->queues - 1, n->rss_ctx);
	return 0;
}

void rdpm_nic_teardown(struct rdpm_nic *n, bool restore)
{
	if (!n->nic)
		return;
	if (restore) {
		if (devmem_nic_release(n->nic, n->state_path) < 0)
			rdpm_log(LOG_WARNING, "%s: restore: %s", n->conf.name, devmem_last_error());
		else
			rdpm_log(LOG_INFO, "%s: restored", n->conf.name);
	}
	devmem_nic_close(n->nic, false);
	n->nic = NULL;
	unlink(n->state_path);
}

int rdpm_nic_rule_add(struct rdpm_nic *n, const struct devmem_flow *flow, unsigned int queue,
		      uint32_t *rule)
{
	struct devmem_flow_target t = { .queue = queue };
	int err;

	/* The state file records the rule with the reservation. */
	err = rdpmd.ops->flow_add(n->nic, flow, &t, rule);
	if (err)
		return err;
	n->rules[queue - n->first]++;
	return 0;
}

void rdpm_nic_rule_del(struct rdpm_nic *n, uint32_t rule, unsigned int queue)
{
	n->rules[queue - n->first]--;
	if (n->nic && rdpmd.ops->flow_del(n->nic, rule))
		rdpm_log(LOG_WARNING, "%s: %s", n->conf.name, rdpmd.ops->last_error());
}

/* Receive buffers over a page need chunks that size, which a heap's are. */
static int mem_shared(struct devmem_mem **out, size_t size, unsigned int shift)
{
	if (shift && (1ul << shift) > (unsigned long)sysconf(_SC_PAGESIZE))
		return devmem_mem_heap(out, NULL, size);
	return devmem_mem_udmabuf(out, size, 0);
}

const struct rdpm_nic_ops rdpm_devmem_ops = {
	.mem_import = devmem_mem_import,
	.mem_shared = mem_shared,
	.mem_free = devmem_mem_free,
	.mem_size = devmem_mem_size,
	.mem_fd = devmem_mem_fd,
	.bind_rx = devmem_bind_rx_page_size,
	.unbind = devmem_unbind,
	.binding_id = devmem_binding_id,
	.binding_page_size = devmem_binding_page_size,
	.flow_add = devmem_nic_flow_add,
	.flow_del = devmem_nic_flow_del,
	.dmabuf_check = rdpm_dmabuf_check,
	.last_error = devmem_last_error,
};
