// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target of btl/devtcp's wire checks (btl_devtcp_wire.c): the
 * first input byte picks hello, frame or put, the rest fills what that
 * check reads (zeros past the input's end). Beyond not crashing
 * (ASan/UBSan), whatever a check accepts must satisfy what the endpoint
 * relies on; the assertions below restate it independently.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "btl_devtcp_wire.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The seeds' key and the rank they are meant for (gen_corpus.py). */
static const uint8_t key[DEVTCP_KEY_LEN] = "devtcp fuzz key, 32 bytes long.";
#define ME_JOBID 7
#define ME_VPID 0

static const unsigned char *in;
static size_t left;

static void take(void *to, size_t n)
{
	size_t k = n < left ? n : left;

	memset(to, 0, n);
	memcpy(to, in, k);
	in += k;
	left -= k;
}

static uint8_t tags[32];	/* registered tags, from the input */

static bool tag_ok(uint8_t tag)
{
	return tags[tag / 8] & (1u << (tag % 8));
}

static void fuzz_hello(void)
{
	struct devtcp_hello h;
	struct devtcp_tuple t;
	uint8_t links, mac[DEVTCP_SHA256_LEN];

	take(&h, sizeof(h));
	take(&t, sizeof(t));
	take(&links, 1);
	links = links % 8 + 1;
	if (devtcp_hello_check(&h, links, ME_JOBID, ME_VPID, key, &t) != DEVTCP_OK)
		return;
	devtcp_hello_mac(key, &h, &t, mac);
	if (ntohl(h.magic) != DEVTCP_HELLO_MAGIC || ntohs(h.version) != DEVTCP_WIRE_VERSION ||
	    (h.kind != DEVTCP_LINK_CTRL && h.kind != DEVTCP_LINK_DATA) ||
	    (h.kind == DEVTCP_LINK_CTRL && h.index) || h.index >= links ||
	    ntohl(h.to_jobid) != ME_JOBID || ntohl(h.to_vpid) != ME_VPID ||
	    memcmp(mac, h.mac, sizeof(mac)))
		abort();
}

static void fuzz_frame(void)
{
	struct devtcp_frame f;
	struct devtcp_limits l = { .tag_ok = tag_ok };
	uint32_t max_ctrl;
	uint8_t links;

	take(&f, sizeof(f));
	take(&max_ctrl, sizeof(max_ctrl));
	take(&l.max_data, sizeof(l.max_data));
	take(&links, 1);
	take(tags, sizeof(tags));
	l.max_ctrl = max_ctrl;
	l.data_links = links % 8 + 1;
	if (devtcp_frame_check(&f, &l) != DEVTCP_OK)
		return;
	if (f.pad || f.link >= l.data_links || (!f.data_len && f.link))
		abort();
	if (f.flags == DEVTCP_FRAME_BYE) {
		if (f.ctrl_len || f.data_len || f.tag || f.link)
			abort();
	} else if (f.flags == DEVTCP_FRAME_PUT) {
		if (f.ctrl_len != sizeof(struct devtcp_put) || f.data_len > DEVTCP_PUT_LIMIT)
			abort();
	} else if (f.flags || f.ctrl_len < DEVTCP_MIN_CTRL || f.ctrl_len > l.max_ctrl ||
		   f.data_len > l.max_data || !tag_ok(f.tag)) {
		abort();
	}
}

static void fuzz_put(void)
{
	struct devtcp_put p;
	struct devtcp_region r;
	uint64_t len;
	uint8_t have;

	take(&p, sizeof(p));
	take(&len, sizeof(len));
	take(&r.base, sizeof(r.base));
	take(&r.len, sizeof(r.len));
	take(&have, 1);
	r.remote_write = have & 2;
	if (devtcp_put_check(&p, len, have & 1 ? &r : NULL) != DEVTCP_OK)
		return;
	/* all of [to, to + len) inside [base, base + len), in exact arithmetic */
	if (!(have & 1) || !r.remote_write || p.to < r.base ||
	    (unsigned __int128)p.to + len > (unsigned __int128)r.base + r.len)
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	if (!size)
		return 0;
	in = data + 1;
	left = size - 1;
	switch (data[0] % 3) {
	case 0: fuzz_hello(); break;
	case 1: fuzz_frame(); break;
	case 2: fuzz_put(); break;
	}
	return 0;
}
