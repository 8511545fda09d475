// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The set-up messages and the data header, checked by wire.c's pure
 * functions: SHA-256 and HMAC against published vectors; a hello is taken
 * only when signed with the job's key over this challenge, for this
 * communicator, from a higher rank; headers outside their message are
 * refused. Communicator ids are fresh: two worlds, and a world and its
 * splits, never share one.
 */
#include "common.h"
#include "internal.h"
#include "greet.h"

static int fails;

#define EXPECT(cond, ...) do { \
	if (!(cond)) { printf("FAIL: " __VA_ARGS__); printf("\n"); fails++; } \
	else { printf("ok: " __VA_ARGS__); printf("\n"); } \
} while (0)

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void vectors(void)
{
	uint8_t d[32], key[20];
	char h[65];
	struct devtcp_sha256 s;
	struct devtcp_hmac_sha256 m;

	devtcp_sha256_init(&s);
	devtcp_sha256_update(&s, "abc", 3);
	devtcp_sha256_final(&s, d);
	hex(d, 32, h);
	EXPECT(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
	       "SHA-256(\"abc\") (FIPS 180-2)");
	char a[1000];

	memset(a, 'a', sizeof(a));
	devtcp_sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		devtcp_sha256_update(&s, a, sizeof(a));
	devtcp_sha256_final(&s, d);
	hex(d, 32, h);
	EXPECT(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
	       "SHA-256 of a million 'a's, in 1000-byte pieces");
	memset(key, 0x0b, sizeof(key));
	devtcp_hmac_sha256_init(&m, key, sizeof(key));
	devtcp_hmac_sha256_update(&m, "Hi There", 8);
	devtcp_hmac_sha256_final(&m, d);
	hex(d, 32, h);
	EXPECT(!strcmp(h, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
	       "HMAC-SHA-256 (RFC 4231 case 1)");
	devtcp_hmac_sha256_init(&m, "Jefe", 4);
	devtcp_hmac_sha256_update(&m, "what do ya want for nothing?", 28);
	devtcp_hmac_sha256_final(&m, d);
	hex(d, 32, h);
	EXPECT(!strcmp(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
	       "HMAC-SHA-256 (RFC 4231 case 2)");
}

static void hellos(void)
{
	uint8_t key[DC_KEY_LEN], other[DC_KEY_LEN], nonce[DC_NONCE_LEN] = { 1, 2, 3 };
	uint8_t nonce2[DC_NONCE_LEN] = { 9 };
	struct dc_hello_want want = { 0x1234, 1, 4, 2 };
	struct dc_hello h = { AUTH_MAGIC, 3, 1, 1, 0x1234, { 0 } }, out;
	const char *why = "";

	dc_key_of("a job's secret, long enough", 27, key);
	dc_key_of("another job's secret, as long", 29, other);
	dc_hello_sign(&h, key, nonce);
	EXPECT(!dc_hello_check(&h, sizeof(h), key, nonce, &want, &out, &why) && out.from == 3,
	       "a signed hello from rank 3 is taken");
	EXPECT(dc_hello_check(&h, sizeof(h), key, nonce2, &want, &out, &why) == -EACCES,
	       "... but not as the answer to another challenge (a replay): %s", why);
	EXPECT(dc_hello_check(&h, sizeof(h) - 1, key, nonce, &want, &out, &why) == -EPROTO,
	       "a short one is refused: %s", why);
	dc_hello_sign(&h, other, nonce);
	EXPECT(dc_hello_check(&h, sizeof(h), key, nonce, &want, &out, &why) == -EACCES,
	       "one signed with another job's key is refused: %s", why);
	h.id = 0x9999;
	dc_hello_sign(&h, key, nonce);
	EXPECT(dc_hello_check(&h, sizeof(h), key, nonce, &want, &out, &why) == -EPROTO,
	       "one for another communicator of the job is refused: %s", why);
	h.id = 0x1234;
	h.from = 0;
	dc_hello_sign(&h, key, nonce);
	EXPECT(dc_hello_check(&h, sizeof(h), key, nonce, &want, &out, &why) == -EPROTO,
	       "one from a lower rank is refused: %s", why);
	h.from = 3;
	h.idx = 2;
	dc_hello_sign(&h, key, nonce);
	EXPECT(dc_hello_check(&h, sizeof(h), key, nonce, &want, &out, &why) == -EPROTO,
	       "one for a connection index past nconns is refused: %s", why);
}

/* Registrations go through the same signed check as hellos, then their own. */
static void regs(void)
{
	uint8_t key[DC_KEY_LEN], other[DC_KEY_LEN], nonce[DC_NONCE_LEN] = { 4, 5, 6 };
	struct dc_reg r = { .magic = AUTH_MAGIC, .rank = 2, .size = 4 }, out;
	struct dc_hello h = { AUTH_MAGIC, 3, 1, 1, 0x1234, { 0 } };
	struct dc_hello_want want = { 0x1234, 1, 4, 2 };
	struct dc_hello hout;
	const char *why = "";

	dc_key_of("a job's secret, long enough", 27, key);
	dc_key_of("another job's secret, as long", 29, other);
	r.sa.ss_family = AF_INET6;
	dc_reg_sign(&r, key, nonce);
	EXPECT(!dc_reg_check(&r, sizeof(r), key, nonce, 4, &out, &why) && out.rank == 2,
	       "a signed registration of rank 2 is taken");
	EXPECT(dc_reg_check(&r, sizeof(r) + 1, key, nonce, 4, &out, &why) == -EPROTO &&
	       !strcmp(why, "not a registration (wrong length)"), "a long one is refused: %s", why);
	EXPECT(dc_reg_check(&r, sizeof(r), key, nonce, 8, &out, &why) == -EPROTO &&
	       strstr(why, "another world size"), "one for another world size is refused: %s",
	       why);
	dc_reg_sign(&r, other, nonce);
	EXPECT(dc_reg_check(&r, sizeof(r), key, nonce, 4, &out, &why) == -EACCES &&
	       !strcmp(why, "a registration without the job's secret"),
	       "one signed with another job's key is refused: %s", why);
	r.magic = WIRE_MAGIC;
	dc_reg_sign(&r, key, nonce);
	EXPECT(dc_reg_check(&r, sizeof(r), key, nonce, 4, &out, &why) == -EPROTO &&
	       !strcmp(why, "not a registration (bad magic)"), "one without AUTH_MAGIC: %s", why);
	h.magic = WIRE_MAGIC;
	dc_hello_sign(&h, key, nonce);
	EXPECT(dc_hello_check(&h, sizeof(h), key, nonce, &want, &hout, &why) == -EPROTO &&
	       !strcmp(why, "not a hello (bad magic)"), "a hello without AUTH_MAGIC: %s", why);
}

/* Fresh secrets in DEVCOLL_SECRET's form: 2 n hex digits and a NUL, no
 * byte beyond, a new one each time (40 bytes: past one 32-byte draw). */
static void random_hex(void)
{
	char a[90], b[90];
	size_t digits = 0;

	memset(a, 'Z', sizeof(a));
	memset(b, 'Z', sizeof(b));
	EXPECT(!dc_random_hex(a, 40) && !dc_random_hex(b, 40), "two secrets drawn");
	while (digits < 80 && strchr("0123456789abcdef", a[digits]) && a[digits])
		digits++;
	EXPECT(digits == 80 && a[80] == 0 && a[81] == 'Z', "80 hex digits, a NUL, no more: %zu",
	       digits);
	EXPECT(strcmp(a, b) && strcmp(a + 64, b + 64), "each is new, past the first draw too");
}

static void headers(void)
{
	struct wire_hdr h = { .magic = WIRE_MAGIC, .kind = K_ALLREDUCE, .total = 100, .off = 60,
			      .len = 40 };
	const char *why = "";

	EXPECT(!dc_wire_hdr_check(&h, &why), "a chunk ending at its message's end is taken");
	h.len = 41;
	EXPECT(dc_wire_hdr_check(&h, &why) == -EPROTO, "one past it is refused: %s", why);
	h.off = UINT64_MAX;
	h.len = 2;
	EXPECT(dc_wire_hdr_check(&h, &why) == -EPROTO, "an offset that wraps is refused: %s", why);
	h = (struct wire_hdr){ .magic = WIRE_MAGIC, .kind = 77 };
	EXPECT(dc_wire_hdr_check(&h, &why) == -EPROTO, "an unknown kind is refused: %s", why);
	h = (struct wire_hdr){ .magic = WIRE_MAGIC, .kind = K_ABORT, .len = 1u << 30 };
	EXPECT(dc_wire_hdr_check(&h, &why) == -EPROTO, "an abort of 1 GiB is refused: %s", why);
}

/* Each rank writes its communicators' ids: the world's, two splits'. */
static int ids(devcoll_comm *c, void *arg)
{
	uint64_t *out = (uint64_t *)arg + 3 * c->rank;
	devcoll_comm *a, *b;

	if (devcoll_comm_split(c, 0, c->rank, &a) || devcoll_comm_split(c, 0, c->rank, &b))
		return 1;
	int fd = *(int *)((uint64_t *)arg + 12);
	uint64_t v[3] = { c->id, a->id, b->id };

	if (pwrite(fd, v, sizeof(v), (off_t)((char *)out - (char *)arg)) != sizeof(v))
		return 1;
	devcoll_comm_destroy(a);
	devcoll_comm_destroy(b);
	return 0;
}

static void fresh_ids(void)
{
	uint64_t w[2][13];
	int st[2];
	char path[] = "/tmp/t_wire_ids.XXXXXX";
	int fd = mkstemp(path);

	unlink(path);
	for (int run = 0; run < 2; run++) {
		memset(w[run], 0, sizeof(w[run]));
		*(int *)&w[run][12] = fd;
		EXPECT(!run_world(2, NULL, ids, w[run], st, 20), "world %d ran", run);
		EXPECT(pread(fd, w[run], 6 * sizeof(uint64_t), 0) == 6 * sizeof(uint64_t), "ids read");
	}
	close(fd);
	EXPECT(w[0][0] == w[0][3] && w[0][1] == w[0][4] && w[0][2] == w[0][5],
	       "the ranks of a communicator agree on its id");
	EXPECT(w[0][0] != w[1][0], "two worlds have different ids (%016llx, %016llx)",
	       (unsigned long long)w[0][0], (unsigned long long)w[1][0]);
	EXPECT(w[0][1] != w[0][0] && w[0][2] != w[0][1] && w[0][2] != w[0][0],
	       "a world and two splits of it have three ids");
}

static uint32_t judge_any(void *arg, const uint8_t *nonce, const void *msg, const char **why)
{
	(void)arg, (void)nonce, (void)msg, (void)why;
	return DC_KEPT;
}

static void keep_fd(void *arg, const void *msg, int fd)
{
	(void)msg;
	*(int *)arg = fd;
}

/* A connection to @sa from @src (NULL: the route's address). */
static int connect_from(const char *src, const struct sockaddr_storage *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_storage s;
	socklen_t l;

	if (src && (dc_parse_addr(src, false, "src", &s, &l) || bind(fd, (struct sockaddr *)&s, l)))
		return -1;
	return connect(fd, (const struct sockaddr *)sa, sizeof(struct sockaddr_in)) ? -1 : fd;
}

/* A mesh listener lets only the ranks' addresses take a slot: a stranger
 * from 127.0.0.2 is closed at once (before any challenge), the rank from
 * 127.0.0.1 is served. */
static void allowlist(void)
{
	struct sockaddr_storage sa;
	struct endpoint allow;
	socklen_t l;
	int lfd = -1, kept = -1, stranger, friend;
	char buf[64];

	if (dc_parse_addr("127.0.0.1", false, "addr", &sa, &l) || dc_listen(&sa, l, &lfd)) {
		EXPECT(0, "listener: %s", devcoll_last_error());
		return;
	}
	allow.sa = sa;
	allow.len = l;
	stranger = connect_from("127.0.0.2", &sa);
	friend = connect_from(NULL, &sa);
	EXPECT(stranger >= 0 && friend >= 0, "two connections");
	EXPECT(send(friend, "8 bytes!", 8, 0) == 8, "the rank answers");
	struct dc_greeter g = { .lfd = lfd, .kind = DC_CH_HELLO, .msg_len = 8, .check = judge_any,
				.keep = keep_fd, .arg = &kept, .allow = &allow, .nallow = 1,
				.want = 1, .deadline = dc_now_ms() + 3000 };
	int ret = dc_greet(&g);

	EXPECT(ret == 0 && kept >= 0, "the rank's connection is kept (%d)", ret);
	EXPECT(g.strangers == 1 && strstr(g.last_why, "no rank's address"),
	       "the stranger is dropped as such: %u, \"%s\"", g.strangers, g.last_why);
	EXPECT(recv(stranger, buf, sizeof(buf), 0) == 0, "and got no challenge, only the close");
	EXPECT(recv(friend, buf, sizeof(buf), 0) == sizeof(struct dc_challenge) + sizeof(struct dc_verdict),
	       "the rank got its challenge and the verdict");
	close(kept);
	close(stranger);
	close(friend);
	close(lfd);
}

int main(void)
{
	allowlist();
	vectors();
	hellos();
	regs();
	random_hex();
	headers();
	fresh_ids();
	printf("%s\n", fails ? "FAIL" : "all passed");
	return fails ? 1 : 0;
}
