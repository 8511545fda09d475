// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * btl/devtcp's wire checks and their crypto, without Open MPI: SHA-256
 * and HMAC-SHA256 against FIPS 180-4 and RFC 4231 vectors; a hello is
 * accepted only as made for this rank and this connection; frames of an
 * unregistered tag, with a control part shorter than a header, a link out
 * of range or unknown flags are refused; a put only lands inside a
 * registration for remote writes. Prints "ok: N checks"; exits 1 on any
 * failure.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "btl_devtcp_wire.h"

static int checks, failures;

#define CHECK(cond, ...)                                               \
	do {                                                           \
		checks++;                                              \
		if (!(cond)) {                                         \
			failures++;                                    \
			printf("FAIL: line %d: ", __LINE__);           \
			printf(__VA_ARGS__);                           \
			printf("\n");                                  \
		}                                                      \
	} while (0)

static void hex(const uint8_t *b, char *out)
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void sha(const void *data, size_t len, size_t repeat, const char *want)
{
	struct devtcp_sha256 s;
	uint8_t out[32];
	char got[65];

	devtcp_sha256_init(&s);
	for (size_t i = 0; i < repeat; i++)
		devtcp_sha256_update(&s, data, len);
	devtcp_sha256_final(&s, out);
	hex(out, got);
	CHECK(!strcmp(got, want), "sha256 of %zu x %zu bytes: %s, want %s", repeat, len, got, want);
}

static void hmac(const void *key, size_t key_len, const char *msg, const char *want)
{
	struct devtcp_hmac_sha256 h;
	uint8_t out[32];
	char got[65];

	devtcp_hmac_sha256_init(&h, key, key_len);
	devtcp_hmac_sha256_update(&h, msg, strlen(msg));
	devtcp_hmac_sha256_final(&h, out);
	hex(out, got);
	CHECK(!strcmp(got, want), "hmac of '%s': %s, want %s", msg, got, want);
}

static bool no_tag(uint8_t tag)
{
	return tag == 0x41;	/* only 0x41 has a receiver */
}

int main(void)
{
	static const uint8_t key[DEVTCP_KEY_LEN] = "the acceptor's 32-byte secret..";
	uint8_t other[DEVTCP_KEY_LEN], k20[20], big[131];
	struct devtcp_tuple t = { .family = AF_INET, .src = { 127, 0, 0, 1 },
				  .dst = { 127, 0, 0, 1 }, .src_port = htons(40000),
				  .dst_port = htons(5000) }, t2 = t;
	struct devtcp_hello h = {
		.magic = htonl(DEVTCP_HELLO_MAGIC), .version = htons(DEVTCP_WIRE_VERSION),
		.kind = DEVTCP_LINK_DATA, .index = 1, .jobid = htonl(7), .vpid = htonl(1),
		.to_jobid = htonl(7), .to_vpid = htonl(0), .nonce = "0123456789abcde",
	}, bad;
	struct devtcp_limits l = { .max_ctrl = 1000, .max_data = 5000, .data_links = 2,
				   .tag_ok = no_tag };
	struct devtcp_frame ok = { .tag = 0x41, .ctrl_len = 100, .data_len = 5000, .link = 1 }, f;
	struct devtcp_region r = { .base = 0x10000, .len = 4096, .remote_write = true }, ro = r;
	struct devtcp_put p = { .handle = 1, .to = 0x10000 };
	char a1000[1000];

	sha("abc", 3, 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha("", 0, 1, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, 1,
	    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(a1000, 'a', sizeof(a1000));
	sha(a1000, sizeof(a1000), 1000,
	    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	memset(k20, 0x0b, sizeof(k20));
	hmac(k20, sizeof(k20), "Hi There",
	     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac("Jefe", 4, "what do ya want for nothing?",
	     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(big, 0xaa, sizeof(big));
	hmac(big, sizeof(big), "Test Using Larger Than Block-Size Key - Hash Key First",
	     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");

	/* hellos */
	devtcp_hello_mac(key, &h, &t, h.mac);
	CHECK(devtcp_hello_check(&h, 2, 7, 0, key, &t) == DEVTCP_OK, "a good hello");
	memset(other, 1, sizeof(other));
	CHECK(devtcp_hello_check(&h, 2, 7, 0, other, &t) == DEVTCP_BAD_MAC, "another secret");
	t2.src_port = htons(40001);
	CHECK(devtcp_hello_check(&h, 2, 7, 0, key, &t2) == DEVTCP_BAD_MAC,
	      "the same hello on another connection");
	CHECK(devtcp_hello_check(&h, 2, 7, 2, key, &t) == DEVTCP_NOT_FOR_ME, "for another rank");
	CHECK(devtcp_hello_check(&h, 1, 7, 0, key, &t) == DEVTCP_BAD_INDEX, "link 1 of 1");
	for (size_t i = 0; i < offsetof(struct devtcp_hello, mac); i++) {
		bad = h;
		((uint8_t *)&bad)[i] ^= 0x10;
		CHECK(devtcp_hello_check(&bad, 8, 7, 0, key, &t) != DEVTCP_OK,
		      "a hello with byte %zu changed", i);
	}
	bad = h;
	bad.version = htons(2);
	CHECK(devtcp_hello_check(&bad, 2, 7, 0, key, &t) == DEVTCP_BAD_VERSION, "version 2");
	bad = h;
	bad.kind = DEVTCP_LINK_CTRL;
	devtcp_hello_mac(key, &bad, &t, bad.mac);
	CHECK(devtcp_hello_check(&bad, 2, 7, 0, key, &t) == DEVTCP_BAD_INDEX,
	      "a control connection with index 1");

	/* frames */
	CHECK(devtcp_frame_check(&ok, &l) == DEVTCP_OK, "a good frame");
	f = ok, f.tag = 0xee;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_UNKNOWN_TAG, "tag 0xee");
	f = ok, f.ctrl_len = 0, f.data_len = 0, f.link = 0;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_CTRL_LEN, "no control part");
	f = ok, f.ctrl_len = DEVTCP_MIN_CTRL - 1;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_CTRL_LEN, "a control part under a header");
	f = ok, f.ctrl_len = 1001;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_CTRL_LEN, "a control part too long");
	f = ok, f.data_len = 5001;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_DATA_LEN, "a payload too long");
	f = ok, f.link = 2;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_LINK, "link 2 of 2");
	f = ok, f.flags = 0x80;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_FLAGS, "unknown flags");
	f = ok, f.pad = 1;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_FLAGS, "padding not zero");
	f = (struct devtcp_frame){ .flags = DEVTCP_FRAME_BYE };
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_OK, "bye");
	f.ctrl_len = 8;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_FLAGS, "bye with a body");
	f = (struct devtcp_frame){ .flags = DEVTCP_FRAME_PUT, .ctrl_len = 16, .data_len = 1 << 20 };
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_OK, "a put");
	f.ctrl_len = 8;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_CTRL_LEN, "a put with a raw address only");
	f.ctrl_len = 16, f.data_len = DEVTCP_PUT_LIMIT + 1;
	CHECK(devtcp_frame_check(&f, &l) == DEVTCP_BAD_DATA_LEN, "a put over 1 GiB");

	/* puts */
	CHECK(devtcp_put_check(&p, 4096, &r) == DEVTCP_OK, "a put filling its region");
	CHECK(devtcp_put_check(&p, 4096, NULL) == DEVTCP_PUT_UNREGISTERED, "no region");
	ro.remote_write = false;
	CHECK(devtcp_put_check(&p, 1, &ro) == DEVTCP_PUT_UNREGISTERED, "a region not for puts");
	CHECK(devtcp_put_check(&p, 4097, &r) == DEVTCP_PUT_OUTSIDE, "one byte too many");
	p.to = 0xffff;
	CHECK(devtcp_put_check(&p, 1, &r) == DEVTCP_PUT_OUTSIDE, "one byte before");
	p.to = 0x11000;
	CHECK(devtcp_put_check(&p, 0, &r) == DEVTCP_OK, "nothing at the end");
	CHECK(devtcp_put_check(&p, 1, &r) == DEVTCP_PUT_OUTSIDE, "one byte after");
	p.to = UINT64_MAX - 7;
	CHECK(devtcp_put_check(&p, 16, &r) == DEVTCP_PUT_OUTSIDE, "wrapping around");
	p.to = 0x10800;
	CHECK(devtcp_put_check(&p, UINT64_MAX, &r) == DEVTCP_PUT_OUTSIDE, "a huge length");

	if (failures)
		printf("FAIL: %d of %d checks\n", failures, checks);
	else
		printf("ok: %d checks\n", checks);
	return failures != 0;
}
