// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The parts of nic.c and binding.c that need no kernel: flow rule building
 * (IPv4, IPv6, wildcards, RSS contexts), argument checks, the undo log's
 * order and bookkeeping, and opening an interface that does not exist.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "internal.h"
#include "devtcp/check.h"

static void test_flow_v4(void)
{
	struct devmem_flow f = { .family = AF_INET, .sport = 0, .dport = 5201 };
	struct devmem_flow_target t = { .queue = 3 };
	struct ethtool_rx_flow_spec fs;
	uint32_t ctx = 99;

	inet_pton(AF_INET, "10.99.0.2", f.dst);
	CHECK(devmem_flow_spec("dtb", &f, &t, &fs, &ctx) == 0, "%s", devmem_last_error());
	CHECK(fs.flow_type == TCP_V4_FLOW, "flow_type %#x", fs.flow_type);
	CHECK(fs.h_u.tcp_ip4_spec.ip4dst == inet_addr("10.99.0.2"), "dst");
	CHECK(fs.m_u.tcp_ip4_spec.ip4dst == 0xffffffff, "dst mask");
	/* Zero source address and port are wildcards: mask 0. */
	CHECK(fs.h_u.tcp_ip4_spec.ip4src == 0 && fs.m_u.tcp_ip4_spec.ip4src == 0, "src wildcard");
	CHECK(fs.m_u.tcp_ip4_spec.psrc == 0, "sport wildcard");
	CHECK(fs.h_u.tcp_ip4_spec.pdst == htons(5201), "dport in network order");
	CHECK(fs.m_u.tcp_ip4_spec.pdst == 0xffff, "dport mask");
	CHECK(fs.m_u.tcp_ip4_spec.tos == 0, "tos not matched");
	CHECK(fs.ring_cookie == 3, "queue 3, got %llu", (unsigned long long)fs.ring_cookie);
	CHECK(fs.ring_cookie != RX_CLS_FLOW_DISC, "never a drop rule");
	CHECK(ctx == 0, "no context, got %u", ctx);

	/* A full 5-tuple. */
	inet_pton(AF_INET, "10.99.0.1", f.src);
	f.sport = 40000;
	CHECK(devmem_flow_spec("dtb", &f, &t, &fs, &ctx) == 0, "%s", devmem_last_error());
	CHECK(fs.h_u.tcp_ip4_spec.ip4src == inet_addr("10.99.0.1") &&
	      fs.m_u.tcp_ip4_spec.ip4src == 0xffffffff, "src");
	CHECK(fs.h_u.tcp_ip4_spec.psrc == htons(40000) && fs.m_u.tcp_ip4_spec.psrc == 0xffff,
	      "sport");

	/* Bytes past the IPv4 address must be zero. */
	f.dst[7] = 1;
	CHECK(devmem_flow_spec("dtb", &f, &t, &fs, &ctx) == -EINVAL, "junk after IPv4 address");
	CHECK(strstr(devmem_last_error(), "dtb: flow rule") != NULL, "%s", devmem_last_error());
}

static void test_flow_v6_ctx(void)
{
	struct devmem_flow f = { .family = AF_INET6, .dport = 80 };
	struct devmem_flow_target t = { .queue = 0, .rss_ctx = 2 };
	struct ethtool_rx_flow_spec fs;
	uint8_t ones[16];
	uint32_t ctx = 0;

	memset(ones, 0xff, sizeof(ones));
	inet_pton(AF_INET6, "fd99::2", f.dst);
	CHECK(devmem_flow_spec("dtb", &f, &t, &fs, &ctx) == 0, "%s", devmem_last_error());
	CHECK(fs.flow_type == (TCP_V6_FLOW | FLOW_RSS), "flow_type %#x", fs.flow_type);
	CHECK(!memcmp(fs.h_u.tcp_ip6_spec.ip6dst, f.dst, 16), "dst");
	CHECK(!memcmp(fs.m_u.tcp_ip6_spec.ip6dst, ones, 16), "dst mask");
	CHECK(fs.m_u.tcp_ip6_spec.ip6src[0] == 0 && fs.m_u.tcp_ip6_spec.ip6src[3] == 0,
	      "src wildcard");
	CHECK(fs.h_u.tcp_ip6_spec.pdst == htons(80), "dport");
	CHECK(fs.m_u.tcp_ip6_spec.psrc == 0, "sport wildcard");
	CHECK(fs.m_u.tcp_ip6_spec.tclass == 0, "tclass not matched");
	CHECK(ctx == 2, "context 2, got %u", ctx);
	CHECK(fs.ring_cookie == 0, "no queue offset");

	/* Everything wildcard: all TCP/IPv6. */
	memset(&f, 0, sizeof(f));
	f.family = AF_INET6;
	t.rss_ctx = 0;
	CHECK(devmem_flow_spec("dtb", &f, &t, &fs, &ctx) == 0, "%s", devmem_last_error());
	CHECK(fs.flow_type == TCP_V6_FLOW, "flow_type %#x", fs.flow_type);
	CHECK(fs.m_u.tcp_ip6_spec.pdst == 0 && fs.m_u.tcp_ip6_spec.ip6dst[0] == 0, "wildcards");

	f.family = AF_UNIX;
	CHECK(devmem_flow_spec("dtb", &f, &t, &fs, &ctx) == -EAFNOSUPPORT, "bad family");
	CHECK(strstr(devmem_last_error(), "dtb: flow rule: family") != NULL, "%s",
	      devmem_last_error());
	CHECK(devmem_flow_spec("dtb", NULL, &t, &fs, &ctx) == -EINVAL, "NULL flow");
}

/* Records the order undo entries are applied in; fails on the second. */
struct applied {
	int n;
	enum devmem_undo_kind kind[16];
	uint32_t id[16];
};

static int record_apply(void *ctx, const struct devmem_undo *u)
{
	struct applied *a = ctx;

	a->kind[a->n] = u->kind;
	a->id[a->n] = u->kind == DEVMEM_UNDO_RULE_DEL ? u->rule :
		      u->kind == DEVMEM_UNDO_CTX_DEL ? u->ctx : 0;
	a->n++;
	if (a->n == 2)
		return devmem_fail(-EBUSY, "second step failed");
	if (a->n == 3)
		devmem_fail(-EIO, "a later message must not win");
	return 0;
}

static void test_undo(void)
{
	struct devmem_undo_log log = { 0 };
	struct devmem_undo u;
	struct applied a = { 0 };

	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_RINGS };
	CHECK(devmem_undo_push(&log, &u) == 0, "push");
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_CHANNELS, .channels = 8 };
	devmem_undo_push(&log, &u);
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_RSS, .rss.size = 4 };
	u.rss.indir = calloc(4, sizeof(uint32_t));
	devmem_undo_push(&log, &u);
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_CTX_DEL, .ctx = 1 };
	devmem_undo_push(&log, &u);
	/* A context deleted that we did not create: its table is kept (and
	 * freed with the entry, as ASan checks). */
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_CTX_ADD, .rss = { .size = 4, .ctx = 3 } };
	u.rss.indir = calloc(4, sizeof(uint32_t));
	devmem_undo_push(&log, &u);
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_RULE_DEL, .rule = 0 };
	devmem_undo_push(&log, &u);
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_RULE_DEL, .rule = 1 };
	devmem_undo_push(&log, &u);
	/* A rule deleted explicitly leaves the log: nothing to undo. */
	CHECK(devmem_undo_forget(&log, DEVMEM_UNDO_RULE_DEL, 0), "forget rule 0");
	CHECK(!devmem_undo_forget(&log, DEVMEM_UNDO_RULE_DEL, 7), "rule 7 was never added");
	CHECK(!devmem_undo_forget(&log, DEVMEM_UNDO_CTX_DEL, 2), "context 2 was never added");
	CHECK(log.n == 6, "6 entries left, got %zu", log.n);

	CHECK(devmem_undo_run(&log, record_apply, &a) == -EBUSY, "first error returned");
	CHECK(!strcmp(devmem_last_error(), "second step failed"), "first message kept: '%s'",
	      devmem_last_error());
	CHECK(a.n == 6, "continued past the error: %d applied", a.n);
	/* Newest first: rules, contexts, RSS table, channels, rings. */
	CHECK(a.kind[0] == DEVMEM_UNDO_RULE_DEL && a.id[0] == 1, "rule 1 first");
	CHECK(a.kind[1] == DEVMEM_UNDO_CTX_ADD, "then context 3 re-created");
	CHECK(a.kind[2] == DEVMEM_UNDO_CTX_DEL && a.id[2] == 1, "then context 1 deleted");
	CHECK(a.kind[3] == DEVMEM_UNDO_RSS, "then the RSS table");
	CHECK(a.kind[4] == DEVMEM_UNDO_CHANNELS, "then channels");
	CHECK(a.kind[5] == DEVMEM_UNDO_RINGS, "rings last");
	/* The failed step stays for a retry; the others are gone. */
	CHECK(log.n == 1 && log.v[0].kind == DEVMEM_UNDO_CTX_ADD, "the failed entry kept (%zu)",
	      log.n);
	a.n = 2;
	CHECK(devmem_undo_run(&log, record_apply, &a) == 0 && a.n == 3, "retry applies it");
	CHECK(log.n == 0, "log empty after the retry");
	a.n = 0;
	CHECK(devmem_undo_run(&log, record_apply, &a) == 0 && a.n == 0, "third run: nothing");
	/* Closing without restoring frees what the entries hold. */
	u = (struct devmem_undo){ .kind = DEVMEM_UNDO_RSS, .rss.size = 2 };
	u.rss.indir = calloc(2, sizeof(uint32_t));
	devmem_undo_push(&log, &u);
	devmem_undo_free(&log);
	CHECK(log.n == 0 && log.v == NULL, "freed");
}

static void test_args(void)
{
	struct devmem_nic *nic = devmem_nic_alloc("dtb", 42);
	struct devmem_flow f = { .family = AF_INET };
	struct devmem_flow_target t = { 0 };
	struct devmem_binding *b = NULL;
	unsigned int q = 0;
	uint32_t id;

	CHECK(nic != NULL, "alloc");
	CHECK(!strcmp(devmem_nic_name(nic), "dtb") && devmem_nic_ifindex(nic) == 42, "accessors");
	/* Checked before any kernel request (this handle has no socket). */
	CHECK(devmem_nic_set_queues(nic, 0) == -EINVAL, "0 queues");
	CHECK(strstr(devmem_last_error(), "dtb: 0 queues") != NULL, "%s", devmem_last_error());
	CHECK(devmem_nic_rss_ctx_del(nic, 0) == -EINVAL, "context 0");
	CHECK(strstr(devmem_last_error(), "main table") != NULL, "%s", devmem_last_error());
	CHECK(devmem_nic_flow_add(nic, &f, NULL, &id) == -EINVAL, "NULL target");
	CHECK(devmem_nic_flow_add(nic, &f, &t, NULL) == -EINVAL, "NULL rule");
	CHECK(devmem_nic_rss_ctx_add(nic, 0, 1, NULL) == -EINVAL, "NULL ctx");
	CHECK(devmem_nic_state(nic, NULL) == -EINVAL, "NULL state");
	CHECK(devmem_nic_qstats(nic, 0, NULL) == -EINVAL, "NULL qstats");
	CHECK(devmem_bind_rx(&b, nic, (struct devmem_mem *)&q, &q, 0) == -EINVAL, "no queues");
	CHECK(strstr(devmem_last_error(), "dtb: bind-rx needs at least one queue") != NULL, "%s",
	      devmem_last_error());
	CHECK(devmem_bind_rx(&b, nic, NULL, &q, 1) == -EINVAL, "NULL mem");
	CHECK(devmem_bind_tx(&b, NULL, NULL) == -EINVAL, "NULL nic");
	CHECK(b == NULL, "out untouched on failure");
	CHECK(devmem_nic_set_header_split(NULL, true) == -EINVAL, "NULL nic");
	CHECK(devmem_nic_restore(nic) == 0, "nothing to restore");
	devmem_nic_close(nic, true);
	devmem_nic_close(NULL, true);
	devmem_unbind(NULL);
}

static void test_open(void)
{
	struct devmem_nic *nic = (struct devmem_nic *)&nic;

	CHECK(devmem_nic_open(&nic, "nosuchdev0") == -ENODEV, "nonexistent interface");
	CHECK(strstr(devmem_last_error(), "nosuchdev0") != NULL, "name in '%s'",
	      devmem_last_error());
	CHECK(nic == (struct devmem_nic *)&nic, "out untouched on failure");
	CHECK(devmem_nic_open(&nic, "an-interface-name-too-long") == -EINVAL, "name too long");
	CHECK(devmem_nic_open(&nic, "") == -EINVAL, "empty name");
	CHECK(devmem_nic_open(NULL, "lo") == -EINVAL, "NULL out");
}

int main(void)
{
	test_flow_v4();
	test_flow_v6_ctx();
	test_undo();
	test_args();
	test_open();
	return check_done("t_nic");
}
