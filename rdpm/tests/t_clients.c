// SPDX-License-Identifier: GPL-2.0
/*
 * rdpmd's request handling (clients.c) over socketpairs, on the fake NIC
 * layer of rdpm/fuzz (no hardware): the quotas on JOIN shares, per
 * connection and per uid, released when a share leaves; max_bindings of
 * all users together; page shift 0 and
 * 12 naming one shared buffer; EEXIST replies that tell a tenant nothing
 * of other tenants; and no fd left behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "devtcp/check.h"
#include "harness.h"

static const char conf[] =
	"[global]\nmax_joins_per_client = 3\nmax_joins_per_user = 5\nmax_bindings = 7\n"
	"[nic fz0]\nusers = *\nreserve = 3\nqueues_per_binding = 1\nshared_bytes = 1M\n"
	"max_bytes = 64M\n";

struct reply {
	uint16_t type;
	int err;
	char text[512];
	union {
		struct rdpm_join_reply join;
		struct rdpm_register_reply reg;
	} u;
	int fd;
};

static uint32_t next_id = 1;

/* Sends request @type with @body (and @fd unless -1), runs rdpmd, and
 * returns its reply in @r. */
static void request(int s, uint16_t type, const void *body, size_t blen, int fd,
		    struct reply *r)
{
	struct {
		struct rdpm_hdr h;
		char body[256];
	} m = { .h = { RDPM_MAGIC, RDPM_VERSION, type, sizeof(struct rdpm_hdr) + blen,
		       next_id++ } };
	struct iovec iov = { &m, sizeof(m.h) + blen };
	char buf[RDPM_MAX_MSG + 1] = "";
	int n;

	memcpy(m.body, body, blen);
	memset(r, 0, sizeof(*r));
	CHECK(rdpm_send_fds(s, &iov, 1, &fd, fd >= 0, 0) > 0, "send request %u", type);
	harness_run();
	n = harness_recv(s, buf, sizeof(buf) - 1, &r->fd);
	CHECK(n >= (int)sizeof(struct rdpm_hdr), "a reply to request %u", type);
	if (n < (int)sizeof(struct rdpm_hdr))
		return;
	memcpy(&r->type, buf + offsetof(struct rdpm_hdr, type), sizeof(r->type));
	if (r->type == RDPM_ERROR) {
		struct rdpm_error e;

		memcpy(&e, buf + sizeof(struct rdpm_hdr), sizeof(e));
		r->err = e.err;
		snprintf(r->text, sizeof(r->text), "%.511s",
			 buf + sizeof(struct rdpm_hdr) + sizeof(e));
	} else {
		memcpy(&r->u, buf + sizeof(struct rdpm_hdr),
		       n - sizeof(struct rdpm_hdr) < sizeof(r->u) ? n - sizeof(struct rdpm_hdr) :
		       sizeof(r->u));
	}
}

static int client(uid_t uid)
{
	struct rdpm_hello hello = { 1, 1, 0 };
	struct reply r;
	int s = harness_client(uid);

	CHECK(s >= 0, "client of uid %u admitted", uid);
	request(s, RDPM_HELLO, &hello, sizeof(hello), -1, &r);
	CHECK(r.type == (RDPM_HELLO | RDPM_REPLY), "HELLO of uid %u", uid);
	return s;
}

/* JOIN fz0 with a share of 64 KiB and page shift @shift; the reply in @r
 * (its fd, when one came, closed already). */
static void join(int s, unsigned int shift, struct reply *r)
{
	struct rdpm_join j = { .ifname = "fz0", .flags = shift, .bytes = 64 << 10 };

	request(s, RDPM_JOIN, &j, sizeof(j), -1, r);
	if (r->fd >= 0)
		close(r->fd);
}

static void unregister(int s, uint32_t handle)
{
	struct rdpm_unregister u = { handle };
	struct reply r;

	request(s, RDPM_UNREGISTER, &u, sizeof(u), -1, &r);
	CHECK(r.type == (RDPM_UNREGISTER | RDPM_REPLY), "UNREGISTER %u", handle);
}

static void join_quotas(void)
{
	int a = client(1000), b = client(1000), c = client(1001);
	uint32_t first = 0;
	struct reply r;

	for (int i = 0; i < 3; i++) {
		join(a, 0, &r);
		CHECK(r.type == (RDPM_JOIN | RDPM_REPLY) && r.fd >= 0,
		      "share %d of a connection, with the buffer's fd", i);
		first = first ? first : r.u.join.handle;
	}
	join(a, 0, &r);
	CHECK(r.err == -EDQUOT && strstr(r.text, "max_joins_per_client"),
	      "a 4th share of one connection is refused: %d %s", r.err, r.text);
	join(b, 0, &r);
	join(b, 0, &r);
	CHECK(r.type == (RDPM_JOIN | RDPM_REPLY), "uid 1000's 5th share, on a second connection");
	join(b, 0, &r);
	CHECK(r.err == -EDQUOT && strstr(r.text, "max_joins_per_user"),
	      "uid 1000's 6th share is refused: %d %s", r.err, r.text);
	join(c, 0, &r);
	CHECK(r.type == (RDPM_JOIN | RDPM_REPLY), "another uid's shares are its own");
	/* Leaving gives the share back; so does disconnecting. */
	unregister(a, first);
	join(b, 0, &r);
	CHECK(r.type == (RDPM_JOIN | RDPM_REPLY), "a share again once one left");
	join(b, 0, &r);
	CHECK(r.err == -EDQUOT, "... and no more");
	close(a);
	harness_run();
	a = client(1000);
	join(a, 0, &r);
	CHECK(r.type == (RDPM_JOIN | RDPM_REPLY), "shares again once a connection went");
	CHECK(rdpmd.counters.refused_joins == 3, "refused_joins counts them (%llu)",
	      (unsigned long long)rdpmd.counters.refused_joins);
	close(a);
	close(b);
	close(c);
	harness_reset();
}

/* max_bindings bounds the buffers of all users together. */
static void global_cap(void)
{
	int s[3] = { client(1000), client(1001), client(1002) };
	struct reply r;

	for (int i = 0; i < 7; i++) {
		join(s[i % 3], 0, &r);
		CHECK(r.type == (RDPM_JOIN | RDPM_REPLY), "buffer %d of all users", i + 1);
	}
	join(s[2], 0, &r);
	CHECK(r.err == -EDQUOT && strstr(r.text, "max_bindings") && !strstr(r.text, "uid"),
	      "the 8th buffer of all users is refused, naming no one: %d %s", r.err, r.text);
	CHECK(rdpmd.counters.refused_bindings == 1, "refused_bindings counts it");
	for (int i = 0; i < 3; i++)
		close(s[i]);
	harness_reset();
}

/* REGISTER of memfd @fd on fz0 (a dma-buf to the fake layer). */
static void reg(int s, int fd, struct reply *r)
{
	struct rdpm_register g = { .ifname = "fz0", .nqueues = 1 };

	request(s, RDPM_REGISTER, &g, sizeof(g), fd, r);
}

static void page_shift_zero(void)
{
	int a = client(1000), b = client(1000);
	struct reply r0, r12, r16;

	join(a, 0, &r0);
	join(b, 12, &r12);
	CHECK(r0.type == (RDPM_JOIN | RDPM_REPLY) && r12.type == (RDPM_JOIN | RDPM_REPLY),
	      "shares with page shift 0 and 12");
	if (sysconf(_SC_PAGESIZE) == 4096)
		CHECK(r12.u.join.dmabuf_id == r0.u.join.dmabuf_id && r12.u.join.members == 2,
		      "page shift 0 is the page size: one buffer (dmabuf %u and %u, %u members)",
		      r0.u.join.dmabuf_id, r12.u.join.dmabuf_id, r12.u.join.members);
	join(b, 16, &r16);
	CHECK(r16.err == -EEXIST && strstr(r16.text, "one shared buffer per uid and NIC"),
	      "64 KiB buffers: no second shared buffer of the uid: %d %s", r16.err, r16.text);
	close(a);
	close(b);
	harness_reset();
}

/*
 * The first share of a uid on a NIC makes its shared buffer (shared_bytes,
 * 1 MiB): the uid is charged all of it, once, against max_bytes (64 MiB),
 * however small its shares and however many.
 */
static void join_charged(void)
{
	int buf = memfd_create("buf", MFD_CLOEXEC), a = client(1003), b = client(1003);
	struct reply r;

	CHECK(buf >= 0 && !ftruncate(buf, (64 << 20) - (512 << 10)), "a 63.5 MiB memfd");
	join(a, 0, &r);
	CHECK(r.type == (RDPM_JOIN | RDPM_REPLY) && r.u.join.size >= 1 << 20,
	      "a 64 KiB share of a %llu-byte shared buffer", (unsigned long long)r.u.join.size);
	join(b, 0, &r);
	CHECK(r.type == (RDPM_JOIN | RDPM_REPLY), "a second share of it, charged nothing more");
	reg(a, buf, &r);
	CHECK(r.err == -EDQUOT && strstr(r.text, "max_bytes"),
	      "63.5 MiB more with the 1 MiB shared buffer exceed max_bytes: %d %s", r.err,
	      r.text);
	close(a);
	close(b);
	harness_run();
	a = client(1003);
	reg(a, buf, &r);
	CHECK(r.type == (RDPM_REGISTER | RDPM_REPLY),
	      "... and fit once the shared buffer is gone: %d %s", r.err, r.text);
	close(buf);
	close(a);
	harness_reset();
}

static void eexist_says_nothing_of_others(void)
{
	int buf = memfd_create("buf", MFD_CLOEXEC);
	int a = client(1000), b = client(1001), root = client(0);
	struct reply r;

	CHECK(buf >= 0 && !ftruncate(buf, 1 << 20), "a memfd");
	reg(a, buf, &r);
	CHECK(r.type == (RDPM_REGISTER | RDPM_REPLY), "uid 1000 registers it: %s", r.text);
	reg(b, buf, &r);
	CHECK(r.err == -EEXIST, "uid 1001 registering the same buffer: EEXIST (%d)", r.err);
	CHECK(!strstr(r.text, "another") && !strstr(r.text, "handle") && !strstr(r.text, "pid") &&
	      !strstr(r.text, "uid"), "... saying nothing of the other tenant: \"%s\"", r.text);
	reg(a, buf, &r);
	CHECK(r.err == -EEXIST && strstr(r.text, "on this connection (handle"),
	      "its owner is told its handle: \"%s\"", r.text);
	reg(root, buf, &r);
	CHECK(r.err == -EEXIST && strstr(r.text, "uid 1000"), "an admin is told whose: \"%s\"",
	      r.text);
	close(buf);
	close(a);
	close(b);
	close(root);
	harness_reset();
}

/* Text a client chose (a file name, say) cannot forge a log line. */
static void log_escapes(void)
{
	int p[2], saved = dup(STDERR_FILENO);
	char line[256] = "";
	ssize_t n;

	CHECK(saved >= 0 && !pipe(p), "pipe");
	dup2(p[1], STDERR_FILENO);
	rdpm_log(LOG_WARNING, "refused: %s", "x\n<0>forged\\\x80\x7f");
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(p[1]);
	n = read(p[0], line, sizeof(line) - 1);
	close(p[0]);
	CHECK(n > 0 && !strcmp(line, "<4>refused: x\\x0a<0>forged\\x5c\\x80\\x7f\n"),
	      "control, non-ASCII bytes and backslashes escaped: %s", line);
}

int main(void)
{
	unsigned int fds;

	log_escapes();

	harness_init(conf);
	fds = harness_fds();
	join_quotas();
	global_cap();
	page_shift_zero();
	join_charged();
	eexist_says_nothing_of_others();
	CHECK(harness_fds() == fds, "no fd left behind (%u, %u before)", harness_fds(), fds);
	CHECK(!fake_rules, "no flow rule left behind");
	rdpmd_clients_close_all();
	return check_done("t_clients");
}
