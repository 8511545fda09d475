// SPDX-License-Identifier: GPL-2.0
/*
 * NIC state: the reservation rdpmd makes at start, the rules it installs,
 * and the state file (STATE_DIR/IFNAME.state) that lets the next rdpmd
 * undo both after a crash. The file is rewritten (write + rename) before
 * every change it must cover takes effect or right after a rule exists,
 * so it lists at least what a crashed daemon owned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdpmd.h"

static int state_save(struct rdpm_nic *n)
{
	char tmp[sizeof(n->state_path) + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", n->state_path);
	f = fopen(tmp, "we");
	if (!f)
		goto fail;
	fprintf(f, "ifindex %d\nqueues %u\nheader_split %d\nntuple %d\nrss_ctx %u\n", n->ifindex,
		n->queues, n->orig_header_split, n->orig_ntuple, n->rss_ctx);
	for (unsigned int i = 0; i < n->nowned; i++)
		fprintf(f, "rule %u\n", n->owned[i]);
	if (fflush(f) || ferror(f)) {
		fclose(f);
		goto fail;
	}
	fclose(f);
	if (rename(tmp, n->state_path))
		goto fail;
	return 0;
fail:
	rdpm_log(LOG_ERR, "%s: cannot write state file %s: %m", n->conf.name, n->state_path);
	return -EIO;
}

/* Undoes what the state file of a previous run lists, through a handle
 * closed without restore (its undo log would re-create what we delete). */
static void recover(struct rdpm_nic *n, int ifindex)
{
	FILE *f = fopen(n->state_path, "re");
	int old_ifindex, hs, nt;
	struct devmem_nic *h;
	unsigned int queues, ctx, rule, nrules = 0;
	char line[64];

	if (!f)
		return;
	if (fscanf(f, "ifindex %d\nqueues %u\nheader_split %d\nntuple %d\nrss_ctx %u\n",
		   &old_ifindex, &queues, &hs, &nt, &ctx) != 5) {
		rdpm_log(LOG_WARNING, "%s: ignoring unreadable state file %s", n->conf.name,
			 n->state_path);
		goto out;
	}
	if (old_ifindex != ifindex) {
		rdpm_log(LOG_NOTICE, "%s: state file of an earlier device (ifindex %d, now %d): "
			 "nothing to undo", n->conf.name, old_ifindex, ifindex);
		goto out;
	}
	if (devmem_nic_open(&h, n->conf.name)) {
		rdpm_log(LOG_ERR, "%s: recovery: %s", n->conf.name, devmem_last_error());
		goto out;
	}
	rdpm_log(LOG_NOTICE, "%s: a previous rdpmd did not exit cleanly: removing its rules and "
		 "RSS context %u, restoring the NIC", n->conf.name, ctx);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "rule %u", &rule) != 1)
			continue;
		/* Gone already is fine: ntuple off or the rule was deleted. */
		if (!devmem_nic_flow_del(h, rule))
			nrules++;
	}
	if (ctx && devmem_nic_rss_ctx_del(h, ctx))
		rdpm_log(LOG_WARNING, "%s: recovery: %s", n->conf.name, devmem_last_error());
	if (devmem_nic_rss_spread(h, 0, queues) ||
	    devmem_nic_set_ntuple(h, nt) || devmem_nic_set_header_split(h, hs))
		rdpm_log(LOG_WARNING, "%s: recovery: %s", n->conf.name, devmem_last_error());
	devmem_nic_close(h, false);
	rdpm_log(LOG_NOTICE, "%s: recovery removed %u stale rule(s)", n->conf.name, nrules);
out:
	fclose(f);
	unlink(n->state_path);
}

static int step(struct rdpm_nic *n, int err, const char *what)
{
	if (err)
		rdpm_log(LOG_ERR, "%s: setup: %s: %s", n->conf.name, what, devmem_last_error());
	return err;
}

int rdpm_nic_setup(struct rdpm_nic *n, const char *state_dir)
{
	struct devmem_nic_state st;
	unsigned int k = n->conf.reserve;
	int err, ifindex;

	snprintf(n->state_path, sizeof(n->state_path), "%s/%s.state", state_dir, n->conf.name);
	err = devmem_nic_open(&n->nic, n->conf.name);
	if (err) {
		n->nic = NULL;
		rdpm_log(LOG_ERR, "%s: %s", n->conf.name, devmem_last_error());
		return err;
	}
	ifindex = devmem_nic_ifindex(n->nic);
	recover(n, ifindex);
	err = step(n, devmem_nic_state(n->nic, &st), "reading its state");
	if (err)
		goto fail;
	if (k >= st.rx_queues) {
		rdpm_log(LOG_ERR, "%s: reserve = %u, but the NIC has %u RX queues: reserve fewer so "
			 "that others carry the rest of the traffic", n->conf.name, k, st.rx_queues);
		err = -ERANGE;
		goto fail;
	}
	n->ifindex = ifindex;
	n->queues = st.rx_queues;
	n->first = st.rx_queues - k;
	n->orig_header_split = st.header_split;
	n->orig_ntuple = st.ntuple;
	n->rss_ctx = 0;
	n->nowned = 0;
	memset(n->rules, 0, sizeof(n->rules));
	memset(n->bound, 0, sizeof(n->bound));
	/* Recorded before changing anything: a crash from here on is undone. */
	err = state_save(n);
	if (!err)
		err = step(n, devmem_nic_set_header_split(n->nic, true), "header split");
	if (!err)
		err = step(n, devmem_nic_set_ntuple(n->nic, true), "ntuple");
	if (!err)
		err = step(n, devmem_nic_rss_spread(n->nic, 0, n->first), "RSS squeeze");
	if (!err)
		err = step(n, devmem_nic_rss_ctx_add(n->nic, n->first, k, &n->rss_ctx),
			   "RSS context");
	if (!err)
		err = state_save(n);
	if (err)
		goto fail;
	n->up = true;
	rdpm_log(LOG_INFO, "%s: queues %u-%u reserved for devmem (RSS context %u), header split "
		 "and ntuple on", n->conf.name, n->first, n->queues - 1, n->rss_ctx);
	return 0;
fail:
	devmem_nic_close(n->nic, true);
	n->nic = NULL;
	unlink(n->state_path);
	return err;
}

void rdpm_nic_teardown(struct rdpm_nic *n, bool restore)
{
	if (!n->nic)
		return;
	if (restore) {
		for (unsigned int i = n->nowned; i-- > 0;)
			devmem_nic_flow_del(n->nic, n->owned[i]);
		if (devmem_nic_restore(n->nic))
			rdpm_log(LOG_WARNING, "%s: restore: %s", n->conf.name, devmem_last_error());
		else
			rdpm_log(LOG_INFO, "%s: restored", n->conf.name);
	}
	devmem_nic_close(n->nic, false);
	n->nic = NULL;
	n->nowned = 0;
	free(n->owned);
	n->owned = NULL;
	n->capowned = 0;
	unlink(n->state_path);
}

int rdpm_nic_rule_add(struct rdpm_nic *n, const struct devmem_flow *flow, unsigned int queue,
		      uint32_t *rule)
{
	struct devmem_flow_target t = { .queue = queue };
	int err;

	if (n->nowned == n->capowned) {
		unsigned int cap = n->capowned ? 2 * n->capowned : 64;
		uint32_t *v = realloc(n->owned, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		n->owned = v;
		n->capowned = cap;
	}
	err = devmem_nic_flow_add(n->nic, flow, &t, rule);
	if (err)
		return err;
	n->owned[n->nowned++] = *rule;
	n->rules[queue - n->first]++;
	state_save(n);
	return 0;
}

void rdpm_nic_rule_del(struct rdpm_nic *n, uint32_t rule, unsigned int queue)
{
	for (unsigned int i = 0; i < n->nowned; i++) {
		if (n->owned[i] == rule) {
			n->owned[i] = n->owned[--n->nowned];
			break;
		}
	}
	n->rules[queue - n->first]--;
	if (n->nic && devmem_nic_flow_del(n->nic, rule))
		rdpm_log(LOG_WARNING, "%s: %s", n->conf.name, devmem_last_error());
	state_save(n);
}
