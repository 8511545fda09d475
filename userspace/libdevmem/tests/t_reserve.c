// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The reservation's state file: every change of the log is in the file
 * before the next one, it reads back entry for entry, closing a handle
 * leaves it as it is, and a file of another device or a damaged one is
 * refused with a reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devtcp/check.h"
#include "internal.h"

static char dir[] = "/tmp/t_reserve.XXXXXX";
static char path[64];

static void push(struct devmem_undo_log *log, struct devmem_undo u)
{
	CHECK(devmem_undo_push(log, &u) == 0, "push kind %d: %s", u.kind, devmem_last_error());
}

static uint32_t *table(uint32_t size, uint32_t mod)
{
	uint32_t *t = calloc(size, sizeof(*t));

	for (uint32_t i = 0; t && i < size; i++)
		t[i] = i % mod;
	return t;
}

/* The number of entries the file holds now. */
static size_t entries_in_file(void)
{
	struct devmem_reservation r;
	struct devmem_undo_log log;
	size_t n;

	if (devmem_journal_read(path, &r, &log))
		return (size_t)-1;
	n = log.n;
	devmem_undo_free(&log);
	return n;
}

static void test_round_trip(void)
{
	struct devmem_reservation resv = { .ifindex = 42, .queues = 8, .first = 6, .count = 2 };
	struct devmem_undo_log log = { 0 }, back;
	struct devmem_reservation r;
	struct devmem_undo u;

	CHECK(devmem_journal_attach(&log, path, &resv) == 0, "attach: %s", devmem_last_error());
	CHECK(entries_in_file() == 0, "written at once, before any change");
	CHECK(devmem_journal_attach(&log, path, &resv) == -EEXIST, "a second owner is refused");
	push(&log, (struct devmem_undo){ .kind = DEVMEM_UNDO_CHANNELS, .channels = 4 });
	CHECK(entries_in_file() == 1, "each push is in the file");
	push(&log, (struct devmem_undo){ .kind = DEVMEM_UNDO_RINGS,
					 .rings = { .data_split = 1, .has_thresh = true,
						    .hds_thresh = 256 } });
	push(&log, (struct devmem_undo){ .kind = DEVMEM_UNDO_NTUPLE, .ntuple = false });
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_RSS, .rss = { .size = 128, .reset = true } };
	u.rss.indir = table(128, 8);
	push(&log, u);
	push(&log, (struct devmem_undo){ .kind = DEVMEM_UNDO_CTX_DEL, .ctx = 3 });
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_CTX_ADD, .rss = { .size = 16, .ctx = 2 } };
	u.rss.indir = table(16, 3);
	push(&log, u);
	push(&log, (struct devmem_undo){ .kind = DEVMEM_UNDO_RULE_DEL, .rule = 1021 });
	push(&log, (struct devmem_undo){ .kind = DEVMEM_UNDO_RULE_DEL, .rule = 1022 });
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_RULE_ADD, .add.rss_ctx = 5 };
	u.add.fs.flow_type = TCP_V6_FLOW;
	u.add.fs.location = 17;
	u.add.fs.h_u.tcp_ip6_spec.psrc = 0xbeef;
	u.add.fs.ring_cookie = 6;
	push(&log, u);
	CHECK(devmem_undo_forget(&log, DEVMEM_UNDO_RULE_DEL, 1021), "forget rule 1021");
	CHECK(entries_in_file() == 8, "forget is in the file: %zu", entries_in_file());
	devmem_undo_pop(&log);
	CHECK(entries_in_file() == 7, "pop is in the file");

	CHECK(devmem_journal_read(path, &r, &back) == 0, "read: %s", devmem_last_error());
	CHECK(!memcmp(&r, &resv, sizeof(r)), "the reservation reads back");
	CHECK(back.n == log.n, "%zu entries back of %zu", back.n, log.n);
	for (size_t i = 0; i < back.n && i < log.n; i++) {
		const struct devmem_undo *a = &log.v[i], *b = &back.v[i];

		CHECK(a->kind == b->kind, "entry %zu: kind %d, read %d", i, a->kind, b->kind);
		if (a->kind == DEVMEM_UNDO_RSS || a->kind == DEVMEM_UNDO_CTX_ADD) {
			CHECK(a->rss.size == b->rss.size && a->rss.reset == b->rss.reset &&
			      a->rss.ctx == b->rss.ctx, "entry %zu: table header", i);
			CHECK(!memcmp(a->rss.indir, b->rss.indir, a->rss.size * 4),
			      "entry %zu: table", i);
		} else if (a->kind == DEVMEM_UNDO_RULE_ADD) {
			CHECK(!memcmp(&a->add, &b->add, sizeof(a->add)), "entry %zu: rule", i);
		} else if (a->kind == DEVMEM_UNDO_RINGS) {
			CHECK(!memcmp(&a->rings, &b->rings, sizeof(a->rings)), "entry %zu", i);
		} else {
			CHECK(a->channels == b->channels, "entry %zu: value", i);
		}
	}
	devmem_undo_free(&back);
	CHECK(devmem_nic_reservation(path, &r) == 0 && r.first == 6 && r.count == 2,
	      "devmem_nic_reservation reads it");

	/* A handle closed without restore leaves the file for the next owner. */
	devmem_undo_free(&log);
	CHECK(entries_in_file() == 7, "the file outlives the log");
}

static void test_refused(void)
{
	struct devmem_nic *nic = devmem_nic_alloc("dtb", 7);
	struct devmem_reservation r;
	FILE *f;

	/* A state file of an earlier device (ifindex 42): removed, nothing undone. */
	CHECK(devmem_nic_release(nic, path) == -ESTALE, "another device's file");
	CHECK(strstr(devmem_last_error(), "ifindex 42, now 7"), "says why: %s",
	      devmem_last_error());
	CHECK(access(path, F_OK) && errno == ENOENT, "and is removed");
	CHECK(devmem_nic_release(nic, path) == -ENOENT, "no file: not reserved");
	CHECK(devmem_nic_reservation(path, &r) == -ENOENT, "no reservation");

	f = fopen(path, "w");
	fprintf(f, "devmem-state 1\nifindex 7\nreservation 8 6 2 1\nrule_del 3\nbogus 1\n");
	fclose(f);
	CHECK(devmem_nic_release(nic, path) == -EINVAL, "a damaged file is refused");
	CHECK(strstr(devmem_last_error(), "line 5"), "naming the line: %s", devmem_last_error());
	CHECK(!access(path, F_OK), "and kept for a look");
	unlink(path);
	devmem_nic_close(nic, false);
}

int main(void)
{
	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof(path), "%s/sub/dtb.state", dir);
	test_round_trip();
	test_refused();
	*strrchr(path, '/') = '\0';
	rmdir(path);
	rmdir(dir);
	return check_done("t_reserve");
}
