// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target of btl/devtcp's wire checks (btl_devtcp_wire.c): the
 * first input byte picks hello, frame, put or a control-connection byte
 * stream (devtcp_ctrl_step, the endpoint's reader), the rest fills what
 * that reads (zeros past the input's end). Beyond not crashing
 * (ASan/UBSan), whatever a check accepts must satisfy what the endpoint
 * relies on; the assertions below restate it independently.
 */
#include <arpa/inet.h>
#include <errno.h>
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

/* What a frame the receiver accepts is, restated. */
static bool frame_valid(const struct devtcp_frame *f, const struct devtcp_limits *l)
{
	if (f->pad || f->link >= l->data_links || (!f->data_len && f->link))
		return false;
	if (f->flags == DEVTCP_FRAME_BYE)
		return !f->ctrl_len && !f->data_len && !f->tag && !f->link;
	if (f->flags == DEVTCP_FRAME_PUT)
		return f->ctrl_len == sizeof(struct devtcp_put) && f->data_len <= DEVTCP_PUT_LIMIT;
	return !f->flags && f->ctrl_len >= DEVTCP_MIN_CTRL && f->ctrl_len <= l->max_ctrl &&
	       f->data_len <= l->max_data && tag_ok(f->tag);
}

/* The receiver's limits, from the input; max_ctrl at most what the
 * endpoint allows (btl_max_send_size and 4 KiB). */
static void take_limits(struct devtcp_limits *l)
{
	uint32_t max_ctrl;
	uint8_t links;

	take(&max_ctrl, sizeof(max_ctrl));
	take(&l->max_data, sizeof(l->max_data));
	take(&links, 1);
	take(tags, sizeof(tags));
	l->max_ctrl = max_ctrl % (266240 + 1);
	l->data_links = links % 8 + 1;
	l->tag_ok = tag_ok;
}

static void fuzz_frame(void)
{
	struct devtcp_frame f;
	struct devtcp_limits l;

	take(&f, sizeof(f));
	take_limits(&l);
	if ((devtcp_frame_check(&f, &l) == DEVTCP_OK) != frame_valid(&f, &l))
		abort();
}

/* The control connection as a byte string, handed out in pieces of 1 to
 * 64 bytes (from the input); then nothing more, or EOF. */
struct stream {
	const unsigned char *at;
	size_t left, pos;
	uint8_t piece;
	bool eof;
};

static int stream_read(void *ctx, void *dst, size_t want, size_t *done)
{
	struct stream *s = ctx;

	while (*done < want) {
		size_t n = want - *done;

		if (!s->left) {
			errno = 0;
			return s->eof ? -1 : 0;
		}
		if (n > s->piece)
			n = s->piece;
		if (n > s->left)
			n = s->left;
		memcpy((char *)dst + *done, s->at, n);
		s->at += n;
		s->left -= n;
		s->pos += n;
		*done += n;
		if (s->piece & 1)	/* odd pieces: one at a time, as a socket may */
			return 0;
	}
	return 1;
}

/*
 * devtcp_ctrl_step (the endpoint's reader of the control connection) over
 * a byte string: every frame it passes on is one the receiver accepts and
 * is the stream's bytes where the frame began; a control part is the
 * bytes after it, in a buffer of at least DEVTCP_CTRL_ROOM bytes that is
 * zero past the part; a refused frame is one the receiver refuses; no
 * byte is taken twice or skipped.
 */
static void fuzz_stream(void)
{
	const unsigned char *start;
	struct devtcp_ctrl_rx rx = { 0 };
	struct devtcp_limits l;
	struct stream s;
	uint8_t how;
	size_t frame_at = 0;

	take_limits(&l);
	take(&how, 1);
	s = (struct stream){ .at = in, .left = left, .piece = how % 64 + 1, .eof = how & 0x80 };
	start = in;
	for (int steps = 0; steps < 10000; steps++) {
		enum devtcp_verdict v = DEVTCP_OK;
		enum devtcp_ctrl_event ev = devtcp_ctrl_step(&rx, &l, stream_read, &s, &v);
		const struct devtcp_frame *f = &rx.frame;

		if (!rx.in_ctrl && rx.done == 0 && ev != DEVTCP_CTRL_LATER && ev != DEVTCP_CTRL_ERROR) {
			/* a whole message (or frame) went by: it is the stream's */
			if (memcmp(f, start + frame_at, sizeof(*f)))
				abort();
		}
		switch (ev) {
		case DEVTCP_CTRL_ERROR:
			if (!s.eof || s.left)
				abort();	/* only EOF fails a string reader */
			goto out;
		case DEVTCP_CTRL_LATER:
			if (s.left && !(s.piece & 1))
				abort();	/* bytes there, yet it waits */
			if (!s.left)
				goto out;
			continue;
		case DEVTCP_CTRL_REFUSED:
			if (v == DEVTCP_OK || frame_valid(f, &l) || s.pos != frame_at + sizeof(*f))
				abort();
			goto out;
		case DEVTCP_CTRL_BYE:
			if (f->flags != DEVTCP_FRAME_BYE || !frame_valid(f, &l) ||
			    s.pos != frame_at + sizeof(*f))
				abort();
			frame_at = s.pos;
			continue;
		case DEVTCP_CTRL_MESSAGE:
		case DEVTCP_CTRL_PUT:
			if (!frame_valid(f, &l) || (ev == DEVTCP_CTRL_PUT) != (f->flags == DEVTCP_FRAME_PUT) ||
			    s.pos != frame_at + sizeof(*f) + f->ctrl_len ||
			    rx.ctrl_cap < DEVTCP_CTRL_ROOM || rx.ctrl_cap < f->ctrl_len ||
			    memcmp(rx.ctrl, start + frame_at + sizeof(*f), f->ctrl_len))
				abort();
			for (size_t i = f->ctrl_len; i < DEVTCP_CTRL_ROOM; i++)
				if (rx.ctrl[i])
					abort();
			frame_at = s.pos;
			continue;
		}
	}
out:
	devtcp_ctrl_free(&rx);
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
	switch (data[0] % 4) {
	case 0: fuzz_hello(); break;
	case 1: fuzz_frame(); break;
	case 2: fuzz_put(); break;
	case 3: fuzz_stream(); break;
	}
	return 0;
}
