// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The undo log: each change made through a NIC handle records how to put
 * back what it changed; a restore applies the records newest first.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "devtcp/nl_numbers.h"

static void undo_drop(struct devmem_undo *u)
{
	if (u->kind == DEVMEM_UNDO_RSS || u->kind == DEVMEM_UNDO_CTX_ADD)
		free(u->rss.indir);
}

int devmem_undo_push(struct devmem_undo_log *log, const struct devmem_undo *u)
{
	int err;

	if (log->n == log->cap) {
		size_t cap = log->cap ? log->cap * 2 : 8;
		struct devmem_undo *v = realloc(log->v, cap * sizeof(*v));

		if (!v) {
			if (u->kind == DEVMEM_UNDO_RSS || u->kind == DEVMEM_UNDO_CTX_ADD)
				free(u->rss.indir);
			return devmem_fail(-ENOMEM, "no memory for the undo log");
		}
		log->v = v;
		log->cap = cap;
	}
	log->v[log->n++] = *u;
	err = devmem_journal_sync(log);
	if (err)
		undo_drop(&log->v[--log->n]);
	return err;
}

void devmem_undo_pop(struct devmem_undo_log *log)
{
	undo_drop(&log->v[--log->n]);
	/* Best effort: an entry too many only restores a value twice. */
	devmem_journal_sync(log);
}

bool devmem_undo_forget(struct devmem_undo_log *log, enum devmem_undo_kind kind, uint32_t id)
{
	size_t i;

	for (i = log->n; i-- > 0;) {
		struct devmem_undo *u = &log->v[i];

		if (u->kind != kind)
			continue;
		if ((kind == DEVMEM_UNDO_CTX_DEL && u->ctx == id) ||
		    (kind == DEVMEM_UNDO_RULE_DEL && u->rule == id) ||
		    (kind == DEVMEM_UNDO_RULE_ADD && u->add.fs.location == id)) {
			undo_drop(u);
			memmove(u, u + 1, (log->n - i - 1) * sizeof(*u));
			log->n--;
			devmem_journal_sync(log);
			return true;
		}
	}
	return false;
}

int devmem_undo_run(struct devmem_undo_log *log,
		    int (*apply)(void *ctx, const struct devmem_undo *u), void *ctx)
{
	char first_msg[512] = "";
	int first = 0, err;
	size_t i, kept;

	for (i = log->n; i-- > 0;) {
		err = apply(ctx, &log->v[i]);
		log->v[i].failed = err != 0;
		if (err && !first) {
			first = err;
			snprintf(first_msg, sizeof(first_msg), "%s", devmem_last_error());
		}
	}
	/* What failed stays, in order, for a later restore to retry (after
	 * an unbind, say). */
	for (i = 0, kept = 0; i < log->n; i++) {
		if (log->v[i].failed)
			log->v[kept++] = log->v[i];
		else
			undo_drop(&log->v[i]);
	}
	log->n = kept;
	devmem_journal_sync(log);
	/* Report the first failure, not whatever later steps recorded. */
	if (first)
		devmem_fail(first, "%s", first_msg);
	return first;
}

void devmem_undo_free(struct devmem_undo_log *log)
{
	while (log->n)
		undo_drop(&log->v[--log->n]);
	free(log->v);
	log->v = NULL;
	log->cap = 0;
	/* The state file stays as it is: it lists what is still changed. */
	free(log->journal);
	log->journal = NULL;
}
