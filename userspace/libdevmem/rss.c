// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * RSS: the main indirection table spread over queues, and additional
 * contexts over others, through ethtool netlink or, on kernels without
 * RSS_SET and RSS_CREATE_ACT, SIOCETHTOOL.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "devtcp/nl_numbers.h"

static int rss_cb(const struct nlmsghdr *nlh, void *data)
{
	struct rss *r = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(a) != DM_ETHTOOL_A_RSS_INDIR)
			continue;
		free(r->indir);
		r->size = mnl_attr_get_payload_len(a) / sizeof(uint32_t);
		r->indir = malloc(r->size * sizeof(uint32_t) + 1);
		if (!r->indir)
			return -ENOMEM;
		memcpy(r->indir, mnl_attr_get_payload(a), r->size * sizeof(uint32_t));
	}
	return 0;
}

static int rss_get_ioctl(struct devmem_nic *nic, uint32_t ctx, struct rss *r);

/* The main table (ctx 0) or a context's; the caller frees r->indir. */
int devmem_rss_get(struct devmem_nic *nic, uint32_t ctx, struct rss *r)
{
	struct nlmsghdr *nlh;
	char what[80];
	int err;

	memset(r, 0, sizeof(*r));
	if (nic->rss_ioctl)
		return rss_get_ioctl(nic, ctx, r);
	snprintf(what, sizeof(what), "%s: rss-get context %u", nic->name, ctx);
	nlh = devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_GET, DM_ETHTOOL_A_RSS_HEADER, false);
	if (ctx)
		mnl_attr_put_u32(nlh, DM_ETHTOOL_A_RSS_CONTEXT, ctx);
	err = devmem_nl_request(nic->nl, nlh, rss_cb, r, what);
	if (err == -ENOMEM)
		devmem_fail(err, "%s: no memory for the RSS table", nic->name);
	if (err == -EOPNOTSUPP && !ctx)
		devmem_fail(err, "%s: the driver has no RSS (ethtool -x %s fails too)", nic->name,
			    nic->name);
	if (err) {
		free(r->indir);
		r->indir = NULL;
	}
	return err;
}


static int rss_get_ioctl(struct devmem_nic *nic, uint32_t ctx, struct rss *r)
{
	struct ethtool_rxfh head = { .cmd = ETHTOOL_GRSSH, .rss_context = ctx }, *full;
	int err = devmem_ethtool_ioctl(nic, &head);

	if (err)
		return devmem_fail_errno(err, "%s: ETHTOOL_GRSSH context %u (ethtool -x %s)",
					 nic->name, ctx, nic->name);
	full = calloc(1, sizeof(*full) + (head.indir_size + head.key_size + 4) * 4);
	if (!full)
		return devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	*full = head;
	err = devmem_ethtool_ioctl(nic, full);
	if (!err) {
		r->size = full->indir_size;
		r->indir = malloc(r->size * sizeof(uint32_t) + 1);
		if (r->indir)
			memcpy(r->indir, full->rss_config, r->size * sizeof(uint32_t));
		else
			err = devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	} else {
		devmem_fail_errno(err, "%s: ETHTOOL_GRSSH context %u", nic->name, ctx);
	}
	free(full);
	return err;
}

/*
 * ETHTOOL_SRSSH: @size entries of @indir for context *@ctx; size 0 resets
 * the main table or deletes a context; ETH_RXFH_CONTEXT_ALLOC in *@ctx
 * creates one and returns its id there. Returns -errno, recording nothing.
 */
static int rss_set_ioctl(struct devmem_nic *nic, uint32_t *ctx, const uint32_t *indir,
			 uint32_t size)
{
	struct ethtool_rxfh *rxfh = calloc(1, sizeof(*rxfh) + size * sizeof(uint32_t));
	int err;

	if (!rxfh)
		return -ENOMEM;
	rxfh->cmd = ETHTOOL_SRSSH;
	rxfh->rss_context = *ctx;
	rxfh->indir_size = size;
	if (size)
		memcpy(rxfh->rss_config, indir, size * sizeof(uint32_t));
	/* Since 6.8 this byte is input_xfrm: RXH_XFRM_NO_CHANGE. Before, it
	 * was reserved and had to be 0. */
	rxfh->rsvd8[0] = 0xff;
	err = devmem_ethtool_ioctl(nic, rxfh);
	if (err == -EINVAL) {
		rxfh->rsvd8[0] = 0;
		err = devmem_ethtool_ioctl(nic, rxfh);
	}
	if (!err)
		*ctx = rxfh->rss_context;
	free(rxfh);
	return err;
}

void devmem_nic_rss_use_ioctl(struct devmem_nic *nic)
{
	nic->rss_ioctl = true;
}


static int queue_range(struct devmem_nic *nic, unsigned int first, unsigned int count,
		       const char *what)
{
	unsigned int n;
	int err;

	if (!count)
		return devmem_fail(-EINVAL, "%s: %s over 0 queues: give at least one", nic->name, what);
	err = devmem_nic_rx_queues(nic, &n);
	if (err)
		return err;
	if (first >= n || count > n - first)
		return devmem_fail(-EINVAL, "%s: %s over queues %u..%u: queue %u does not exist "
				   "(%u RX queues; raise the count with devmem_nic_set_queues() or "
				   "ethtool -L %s combined N)", nic->name, what, first,
				   first + count - 1, first >= n ? first : n, n, nic->name);
	return 0;
}

int devmem_rss_set(struct devmem_nic *nic, const uint32_t *indir, uint32_t size,
		   const char *what)
{
	struct nlmsghdr *nlh;
	uint32_t ctx = 0;
	int err;

	/* An empty table puts back the driver's default (and its tracking). */
	if (nic->rss_ioctl) {
		err = rss_set_ioctl(nic, &ctx, indir, size);
		return err ? devmem_fail_errno(err, "%s (ETHTOOL_SRSSH)", what) : 0;
	}
	nlh = devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_SET, DM_ETHTOOL_A_RSS_HEADER, true);
	mnl_attr_put(nlh, DM_ETHTOOL_A_RSS_INDIR, size * sizeof(uint32_t), indir);
	return devmem_nl_request(nic->nl, nlh, NULL, NULL, what);
}

static uint32_t *spread(uint32_t size, unsigned int first, unsigned int count)
{
	uint32_t *t = malloc(size * sizeof(*t) + 1);
	uint32_t i;

	if (t)
		for (i = 0; i < size; i++)
			t[i] = first + i % count;
	return t;
}

DEVMEM_EXPORT int devmem_nic_rss_spread(struct devmem_nic *nic, unsigned int first,
					unsigned int count)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_RSS };
	unsigned int n, i;
	uint32_t *t;
	struct rss r;
	char what[160];
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_rss_spread: nic is NULL");
	err = queue_range(nic, first, count, "RSS spread");
	if (!err)
		err = devmem_nic_rx_queues(nic, &n);
	if (!err)
		err = devmem_rss_get(nic, 0, &r);
	if (err)
		return err;
	if (!r.size) {
		free(r.indir);
		return devmem_fail(-EOPNOTSUPP, "%s: the driver has no RSS indirection table "
				   "(ethtool -x %s)", nic->name, nic->name);
	}
	t = spread(r.size, first, count);
	if (!t) {
		free(r.indir);
		return devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	}
	/* A table equal to the default spread goes back as "default", so the
	 * driver keeps re-spreading it when the channel count changes. */
	u.rss.reset = true;
	for (i = 0; i < r.size; i++)
		u.rss.reset &= r.indir[i] == i % n;
	u.rss.indir = r.indir;
	u.rss.size = r.size;
	err = devmem_undo_push(&nic->undo, &u);
	if (err) {
		free(t);
		return err;
	}
	snprintf(what, sizeof(what), "%s: rss-set spreading over queues %u..%u "
		 "(ethtool -X %s start %u equal %u)", nic->name, first, first + count - 1,
		 nic->name, first, count);
	err = devmem_rss_set(nic, t, r.size, what);
	free(t);
	if (err)
		devmem_undo_pop(&nic->undo);
	return err;
}

static int ctx_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr))
		if (mnl_attr_get_type(a) == DM_ETHTOOL_A_RSS_CONTEXT)
			*(uint32_t *)data = mnl_attr_get_u32(a);
	return 0;
}

int devmem_rss_ctx_delete(struct devmem_nic *nic, uint32_t ctx, const char *what)
{
	struct nlmsghdr *nlh;
	int err;

	if (nic->rss_ioctl) {
		err = rss_set_ioctl(nic, &ctx, NULL, 0);
		return err ? devmem_fail_errno(err, "%s (ETHTOOL_SRSSH)", what) : 0;
	}
	nlh = devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_DELETE_ACT, DM_ETHTOOL_A_RSS_HEADER, false);
	mnl_attr_put_u32(nlh, DM_ETHTOOL_A_RSS_CONTEXT, ctx);
	return devmem_nl_request(nic->nl, nlh, NULL, NULL, what);
}

/*
 * A context with table @t: id @want (0: any) where netlink lets us choose;
 * the ioctl always picks. Its id in *@id.
 */
int devmem_rss_ctx_create(struct devmem_nic *nic, uint32_t want, const uint32_t *t, uint32_t size,
		      uint32_t *id, const char *what)
{
	struct nlmsghdr *nlh;
	int err;

	*id = 0;
	if (nic->rss_ioctl) {
		*id = ETH_RXFH_CONTEXT_ALLOC;
		err = rss_set_ioctl(nic, id, t, size);
		return err ? devmem_fail_errno(err, "%s (ETHTOOL_SRSSH)", what) : 0;
	}
	nlh = devmem_ethtool_msg(nic, DM_ETHTOOL_MSG_RSS_CREATE_ACT, DM_ETHTOOL_A_RSS_HEADER, false);
	if (want)
		mnl_attr_put_u32(nlh, DM_ETHTOOL_A_RSS_CONTEXT, want);
	mnl_attr_put(nlh, DM_ETHTOOL_A_RSS_INDIR, size * sizeof(uint32_t), t);
	return devmem_nl_request(nic->nl, nlh, ctx_cb, id, what);
}

DEVMEM_EXPORT int devmem_nic_rss_ctx_add(struct devmem_nic *nic, unsigned int first,
					 unsigned int count, uint32_t *ctx)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_CTX_DEL };
	uint32_t id = 0, *t;
	struct rss r;
	char what[200];
	int err;

	if (!nic || !ctx)
		return devmem_fail(-EINVAL, "devmem_nic_rss_ctx_add: nic and ctx must not be NULL");
	err = queue_range(nic, first, count, "RSS context");
	if (!err)
		err = devmem_rss_get(nic, 0, &r);
	if (err)
		return err;
	free(r.indir);
	if (!r.size)
		return devmem_fail(-EOPNOTSUPP, "%s: the driver has no RSS indirection table "
				   "(ethtool -x %s)", nic->name, nic->name);
	t = spread(r.size, first, count);
	if (!t)
		return devmem_fail(-ENOMEM, "%s: no memory for the RSS table", nic->name);
	snprintf(what, sizeof(what), "%s: rss-create-act over queues %u..%u "
		 "(ethtool -X %s context new start %u equal %u)", nic->name, first,
		 first + count - 1, nic->name, first, count);
	err = devmem_rss_ctx_create(nic, 0, t, r.size, &id, what);
	free(t);
	if (err == -EOPNOTSUPP)
		return devmem_fail(err, "%s: the driver has no additional RSS contexts "
				   "(ethtool -X %s context new fails too)", nic->name, nic->name);
	if (err)
		return err;
	if (!id)
		return devmem_fail(-EPROTO, "%s: rss-create-act replied without a context id",
				   nic->name);
	u.ctx = id;
	err = devmem_undo_push(&nic->undo, &u);
	if (err) {
		snprintf(what, sizeof(what), "%s: delete context %u", nic->name, id);
		devmem_rss_ctx_delete(nic, id, what);
		return devmem_fail(err, "%s: RSS context %u removed again: %s", nic->name, id,
				   devmem_last_error());
	}
	*ctx = id;
	return 0;
}

DEVMEM_EXPORT int devmem_nic_rss_ctx_del(struct devmem_nic *nic, uint32_t ctx)
{
	struct devmem_undo u = { .kind = DEVMEM_UNDO_CTX_ADD };
	struct rss r = { 0 };
	char what[128];
	bool ours;
	size_t i;
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_rss_ctx_del: nic is NULL");
	if (!ctx)
		return devmem_fail(-EINVAL, "%s: RSS context 0 is the main table and cannot be "
				   "deleted (devmem_nic_rss_spread() changes it)", nic->name);
	for (i = 0, ours = false; i < nic->undo.n; i++)
		ours |= nic->undo.v[i].kind == DEVMEM_UNDO_CTX_DEL && nic->undo.v[i].ctx == ctx;
	/* A context we did not create comes back on restore: keep its table. */
	err = ours ? 0 : devmem_rss_get(nic, ctx, &r);
	if (err == -ENOENT || err == -EINVAL)
		return devmem_fail(-ENOENT, "%s: RSS context %u does not exist (ethtool -x %s "
				   "context %u)", nic->name, ctx, nic->name, ctx);
	if (err)
		return err;
	snprintf(what, sizeof(what), "%s: rss-delete-act context %u (ethtool -X %s context %u "
		 "delete)", nic->name, ctx, nic->name, ctx);
	err = devmem_rss_ctx_delete(nic, ctx, what);
	if (err)
		free(r.indir);
	if (err == -ENOENT || (err == -EINVAL && !devmem_nl_ext(nic->nl)->msg[0]))
		return devmem_fail(err, "%s: RSS context %u does not exist (ethtool -x %s context "
				   "%u)", nic->name, ctx, nic->name, ctx);
	if (err == -EBUSY)
		return devmem_fail(err, "%s: RSS context %u is used by a flow rule: delete the "
				   "rule first (devmem_nic_flow_del, ethtool -n %s)", nic->name, ctx,
				   nic->name);
	if (err)
		return err;
	if (ours) {
		devmem_undo_forget(&nic->undo, DEVMEM_UNDO_CTX_DEL, ctx);
		return 0;
	}
	u.rss.indir = r.indir;
	u.rss.size = r.size;
	u.rss.ctx = ctx;
	err = devmem_undo_push(&nic->undo, &u);
	if (err)
		return devmem_fail(err, "%s: context %u deleted, but it cannot be restored later: %s",
				   nic->name, ctx, devmem_last_error());
	return 0;
}
