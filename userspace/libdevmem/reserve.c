// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Queue reservation for devmem, and the state file that outlives its owner.
 *
 * The state file is the reserving handle's undo log written out: one line
 * per change, rewritten (write + rename) before each change takes effect,
 * or right after one that only the kernel can name (a rule, a context)
 * exists. It records what a process crash leaves; no fsync, since a reboot
 * resets the NIC anyway (the files live in /run). Whoever comes next, `devmem nic teardown`, a restarted rdpmd,
 * replays it newest first, exactly as the owner's own restore would.
 *
 *   devmem-state 1
 *   ifindex 7
 *   reservation QUEUES FIRST COUNT RSS_CTX
 *   rings SPLIT HAS_THRESH THRESH | channels N | ntuple ON
 *   rss RESET SIZE INDIR... | ctx_add CTX SIZE INDIR... | ctx_del CTX
 *   rule_del LOC | rule_add RSS_CTX HEX(struct ethtool_rx_flow_spec)
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct devmem_journal {
	struct devmem_reservation resv;
	char path[4096];
};

static void put_table(FILE *f, const struct devmem_undo *u)
{
	fprintf(f, " %u", u->rss.size);
	for (uint32_t i = 0; i < u->rss.size; i++)
		fprintf(f, " %u", u->rss.indir[i]);
}

static void put_entry(FILE *f, const struct devmem_undo *u)
{
	const uint8_t *b = (const uint8_t *)&u->add.fs;

	switch (u->kind) {
	case DEVMEM_UNDO_RINGS:
		fprintf(f, "rings %u %d %u", u->rings.data_split, u->rings.has_thresh,
			u->rings.hds_thresh);
		break;
	case DEVMEM_UNDO_CHANNELS:
		fprintf(f, "channels %u", u->channels);
		break;
	case DEVMEM_UNDO_NTUPLE:
		fprintf(f, "ntuple %d", u->ntuple);
		break;
	case DEVMEM_UNDO_RSS:
		fprintf(f, "rss %d", u->rss.reset);
		put_table(f, u);
		break;
	case DEVMEM_UNDO_CTX_ADD:
		fprintf(f, "ctx_add %u", u->rss.ctx);
		put_table(f, u);
		break;
	case DEVMEM_UNDO_CTX_DEL:
		fprintf(f, "ctx_del %u", u->ctx);
		break;
	case DEVMEM_UNDO_RULE_DEL:
		fprintf(f, "rule_del %u", u->rule);
		break;
	case DEVMEM_UNDO_RULE_ADD:
		fprintf(f, "rule_add %u ", u->add.rss_ctx);
		for (size_t i = 0; i < sizeof(u->add.fs); i++)
			fprintf(f, "%02x", b[i]);
		break;
	}
	fputc('\n', f);
}

int devmem_journal_sync(const struct devmem_undo_log *log)
{
	const struct devmem_journal *j = log->journal;
	const struct devmem_reservation *r;
	char tmp[sizeof(j->path) + 8];
	FILE *f;

	if (!j)
		return 0;
	r = &j->resv;
	snprintf(tmp, sizeof(tmp), "%s.tmp", j->path);
	f = fopen(tmp, "we");
	if (!f)
		return devmem_fail_errno(-errno, "cannot write state file %s", tmp);
	fprintf(f, "devmem-state 1\nifindex %d\nreservation %u %u %u %u\n", r->ifindex,
		r->queues, r->first, r->count, r->rss_ctx);
	for (size_t i = 0; i < log->n; i++)
		put_entry(f, &log->v[i]);
	if (fflush(f) || ferror(f)) {
		fclose(f);
		unlink(tmp);
		return devmem_fail_errno(-EIO, "cannot write state file %s", tmp);
	}
	fclose(f);
	if (rename(tmp, j->path))
		return devmem_fail_errno(-errno, "cannot rename %s to %s", tmp, j->path);
	return 0;
}

/* "SIZE INDIR..." at @p into a new table. */
static bool get_table(char *p, struct devmem_undo *u)
{
	char *end;

	u->rss.size = strtoul(p, &end, 10);
	if (end == p || u->rss.size > 65536)
		return false;
	u->rss.indir = calloc(u->rss.size ? u->rss.size : 1, sizeof(uint32_t));
	if (!u->rss.indir)
		return false;
	for (uint32_t i = 0; i < u->rss.size; i++) {
		p = end;
		u->rss.indir[i] = strtoul(p, &end, 10);
		if (end == p) {
			free(u->rss.indir);
			return false;
		}
	}
	return true;
}

static bool get_hex(const char *p, void *out, size_t len)
{
	uint8_t *b = out;

	for (size_t i = 0; i < len; i++, p += 2)
		if (sscanf(p, "%2hhx", &b[i]) != 1)
			return false;
	return true;
}

static bool get_entry(char *line, struct devmem_undo *u)
{
	char kind[16];
	int n = 0, v1 = 0;

	memset(u, 0, sizeof(*u));
	if (sscanf(line, "%15s %n", kind, &n) != 1)
		return false;
	line += n;
	if (!strcmp(kind, "rings")) {
		u->kind = DEVMEM_UNDO_RINGS;
		if (sscanf(line, "%hhu %d %u", &u->rings.data_split, &v1, &u->rings.hds_thresh) != 3)
			return false;
		u->rings.has_thresh = v1;
	} else if (!strcmp(kind, "channels")) {
		u->kind = DEVMEM_UNDO_CHANNELS;
		return sscanf(line, "%u", &u->channels) == 1;
	} else if (!strcmp(kind, "ntuple")) {
		u->kind = DEVMEM_UNDO_NTUPLE;
		if (sscanf(line, "%d", &v1) != 1)
			return false;
		u->ntuple = v1;
	} else if (!strcmp(kind, "rss")) {
		u->kind = DEVMEM_UNDO_RSS;
		if (sscanf(line, "%d %n", &v1, &n) != 1)
			return false;
		u->rss.reset = v1;
		return get_table(line + n, u);
	} else if (!strcmp(kind, "ctx_add")) {
		u->kind = DEVMEM_UNDO_CTX_ADD;
		if (sscanf(line, "%u %n", &u->rss.ctx, &n) != 1)
			return false;
		return get_table(line + n, u);
	} else if (!strcmp(kind, "ctx_del")) {
		u->kind = DEVMEM_UNDO_CTX_DEL;
		return sscanf(line, "%u", &u->ctx) == 1;
	} else if (!strcmp(kind, "rule_del")) {
		u->kind = DEVMEM_UNDO_RULE_DEL;
		return sscanf(line, "%u", &u->rule) == 1;
	} else if (!strcmp(kind, "rule_add")) {
		u->kind = DEVMEM_UNDO_RULE_ADD;
		if (sscanf(line, "%u %n", &u->add.rss_ctx, &n) != 1)
			return false;
		return get_hex(line + n, &u->add.fs, sizeof(u->add.fs));
	} else {
		return false;
	}
	return true;
}

int devmem_journal_read(const char *path, struct devmem_reservation *resv,
			struct devmem_undo_log *log)
{
	struct devmem_undo u;
	size_t cap = 0;
	char *line = NULL;
	int err = 0, lineno = 3;
	FILE *f;

	memset(log, 0, sizeof(*log));
	f = fopen(path, "re");
	if (!f)
		return devmem_fail_errno(-errno, "%s", path);
	if (fscanf(f, "devmem-state 1\nifindex %d\nreservation %u %u %u %u\n", &resv->ifindex,
		   &resv->queues, &resv->first, &resv->count, &resv->rss_ctx) != 5) {
		err = devmem_fail(-EINVAL, "%s: not a devmem state file", path);
		goto out;
	}
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		if (!get_entry(line, &u)) {
			err = devmem_fail(-EINVAL, "%s: line %d: not a change libdevmem writes",
					  path, lineno);
			break;
		}
		err = devmem_undo_push(log, &u);
		if (err)
			break;
	}
out:
	free(line);
	fclose(f);
	if (err)
		devmem_undo_free(log);
	return err;
}

DEVMEM_EXPORT int devmem_nic_reservation(const char *state, struct devmem_reservation *out)
{
	struct devmem_undo_log log;
	struct devmem_reservation r;
	int err;

	if (!state || !out)
		return devmem_fail(-EINVAL, "devmem_nic_reservation: state and out must not be NULL");
	err = devmem_journal_read(state, &r, &log);
	devmem_undo_free(&log);
	if (!err)
		*out = r;
	return err;
}

DEVMEM_EXPORT int devmem_nic_reserved(struct devmem_nic *nic, struct devmem_reservation *out)
{
	char path[sizeof(DEVMEM_STATE_DIR) + IF_NAMESIZE + 8];

	if (!nic || !out)
		return devmem_fail(-EINVAL, "devmem_nic_reserved: nic and out must not be NULL");
	snprintf(path, sizeof(path), DEVMEM_STATE_DIR "/%s.state", devmem_nic_name(nic));
	return devmem_nic_reservation(path, out);
}

DEVMEM_EXPORT int devmem_nic_devmem_queue(struct devmem_nic *nic, unsigned int *queue)
{
	struct devmem_reservation r;
	struct devmem_nic_state st;
	int err;

	if (!nic || !queue)
		return devmem_fail(-EINVAL, "devmem_nic_devmem_queue: nic and queue must not be NULL");
	if (!devmem_nic_reserved(nic, &r)) {
		*queue = r.first + r.count - 1;
		return 1;
	}
	err = devmem_nic_state(nic, &st);
	if (err)
		return err;
	*queue = st.rx_queues - 1;
	return 0;
}

int devmem_journal_attach(struct devmem_undo_log *log, const char *path,
			  const struct devmem_reservation *resv)
{
	struct devmem_journal *j;
	char dir[sizeof(j->path)], *slash;
	int err;

	if (strlen(path) >= sizeof(j->path))
		return devmem_fail(-ENAMETOOLONG, "state file name too long: %s", path);
	if (!access(path, F_OK))
		return devmem_fail(-EEXIST, "already reserved (%s exists): release it first", path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return devmem_fail_errno(-errno, "cannot create %s", dir);
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return devmem_fail(-ENOMEM, "no memory");
	j->resv = *resv;
	snprintf(j->path, sizeof(j->path), "%s", path);
	log->journal = j;
	err = devmem_journal_sync(log);
	if (err) {
		log->journal = NULL;
		free(j);
	}
	return err;
}

DEVMEM_EXPORT int devmem_nic_reserve(struct devmem_nic *nic, unsigned int queues,
				     unsigned int count, const char *state,
				     struct devmem_reservation *out)
{
	struct devmem_reservation r = { 0 };
	struct devmem_undo_log *log;
	struct devmem_nic_state st;
	int err;

	if (!nic || !out)
		return devmem_fail(-EINVAL, "devmem_nic_reserve: nic and out must not be NULL");
	log = devmem_nic_log(nic);
	if (log->journal)
		return devmem_fail(-EBUSY, "%s: this handle holds a reservation already",
				   devmem_nic_name(nic));
	err = devmem_nic_state(nic, &st);
	if (err)
		return err;
	r.ifindex = devmem_nic_ifindex(nic);
	r.queues = queues ? queues : st.rx_queues;
	if (!count || count >= r.queues)
		return devmem_fail(-ERANGE, "%s: cannot reserve %u of %u RX queues: reserve 1 to "
				   "%u, so that the others carry the rest of the traffic",
				   devmem_nic_name(nic), count, r.queues, r.queues - 1);
	r.first = r.queues - count;
	r.count = count;
	/* Recorded before anything changes: a crash from here on is undone. */
	if (state) {
		err = devmem_journal_attach(log, state, &r);
		if (err)
			return devmem_fail(err, "%s: %s", devmem_nic_name(nic), devmem_last_error());
	}
	if (r.queues != st.rx_queues)
		err = devmem_nic_set_queues(nic, r.queues);
	if (!err)
		err = devmem_nic_set_header_split(nic, true);
	if (!err)
		err = devmem_nic_set_ntuple(nic, true);
	if (!err)
		err = devmem_nic_rss_spread(nic, 0, r.first);
	if (!err)
		err = devmem_nic_rss_ctx_add(nic, r.first, count, &r.rss_ctx);
	if (log->journal && !err) {
		log->journal->resv.rss_ctx = r.rss_ctx;
		err = devmem_journal_sync(log);
	}
	if (err) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", devmem_last_error());
		devmem_nic_release(nic, state);
		return devmem_fail(err, "%s", msg);
	}
	*out = r;
	return 0;
}

/* The reserving handle: its own log, then the file goes. */
static int release_own(struct devmem_nic *nic, struct devmem_undo_log *log)
{
	unsigned int rules = 0;
	char path[sizeof(log->journal->path)];
	int err;

	for (size_t i = 0; i < log->n; i++)
		rules += log->v[i].kind == DEVMEM_UNDO_RULE_DEL;
	err = devmem_nic_restore(nic);
	for (size_t i = 0; i < log->n; i++)
		rules -= log->v[i].kind == DEVMEM_UNDO_RULE_DEL;
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s", log->journal->path);
	free(log->journal);
	log->journal = NULL;
	unlink(path);
	return rules;
}

DEVMEM_EXPORT int devmem_nic_release(struct devmem_nic *nic, const char *state)
{
	struct devmem_undo_log *own, log;
	struct devmem_journal j = { 0 };
	unsigned int rules = 0;
	int err;

	if (!nic)
		return devmem_fail(-EINVAL, "devmem_nic_release: nic is NULL");
	own = devmem_nic_log(nic);
	if (!state)
		return own->journal ? release_own(nic, own) : devmem_nic_restore(nic);
	if (own->journal && !strcmp(own->journal->path, state))
		return release_own(nic, own);
	err = devmem_journal_read(state, &j.resv, &log);
	if (err == -ENOENT)
		return devmem_fail(-ENOENT, "%s: not reserved (no state file %s)",
				   devmem_nic_name(nic), state);
	if (err)
		return err;
	if (j.resv.ifindex != devmem_nic_ifindex(nic)) {
		devmem_undo_free(&log);
		unlink(state);
		return devmem_fail(-ESTALE, "%s: %s is of an earlier device (ifindex %d, now %d): "
				   "nothing to undo", devmem_nic_name(nic), state, j.resv.ifindex,
				   devmem_nic_ifindex(nic));
	}
	for (size_t i = 0; i < log.n; i++)
		rules += log.v[i].kind == DEVMEM_UNDO_RULE_DEL;
	/* Failed entries stay in the file for the next try. */
	snprintf(j.path, sizeof(j.path), "%s", state);
	log.journal = &j;
	err = devmem_nic_undo(nic, &log);
	for (size_t i = 0; i < log.n; i++)
		rules -= log.v[i].kind == DEVMEM_UNDO_RULE_DEL;
	log.journal = NULL;
	devmem_undo_free(&log);
	if (err)
		return err;
	unlink(state);
	return rules;
}
