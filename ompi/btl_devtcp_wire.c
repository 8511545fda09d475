// SPDX-License-Identifier: LGPL-2.1-or-later
/* The checks of received hellos and frame headers: see btl_devtcp_wire.h. */
#include "btl_devtcp_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *devtcp_verdict_str(enum devtcp_verdict v)
{
	switch (v) {
	case DEVTCP_OK: return "ok";
	case DEVTCP_BAD_MAGIC: return "not a btl/devtcp hello";
	case DEVTCP_BAD_VERSION: return "another btl/devtcp wire version";
	case DEVTCP_BAD_KIND: return "unknown connection kind";
	case DEVTCP_BAD_INDEX: return "data link number out of range";
	case DEVTCP_NOT_FOR_ME: return "hello meant for another rank";
	case DEVTCP_BAD_MAC: return "authentication failed (wrong job secret)";
	case DEVTCP_BAD_FLAGS: return "unknown frame flags";
	case DEVTCP_BAD_CTRL_LEN: return "control length out of range";
	case DEVTCP_BAD_DATA_LEN: return "payload length out of range";
	case DEVTCP_BAD_LINK: return "data link number out of range";
	case DEVTCP_UNKNOWN_TAG: return "message tag nobody receives";
	case DEVTCP_PUT_UNREGISTERED: return "put to a region not registered for it";
	case DEVTCP_PUT_OUTSIDE: return "put beyond its registered region";
	}
	return "?";
}

void devtcp_hello_mac(const uint8_t key[DEVTCP_KEY_LEN], const struct devtcp_hello *h,
		      const struct devtcp_tuple *t, uint8_t mac[DEVTCP_SHA256_LEN])
{
	struct devtcp_hmac_sha256 hm;

	devtcp_hmac_sha256_init(&hm, key, DEVTCP_KEY_LEN);
	devtcp_hmac_sha256_update(&hm, h, offsetof(struct devtcp_hello, mac));
	devtcp_hmac_sha256_update(&hm, &t->family, 1);
	devtcp_hmac_sha256_update(&hm, t->src, 16);
	devtcp_hmac_sha256_update(&hm, t->dst, 16);
	devtcp_hmac_sha256_update(&hm, &t->src_port, 2);
	devtcp_hmac_sha256_update(&hm, &t->dst_port, 2);
	devtcp_hmac_sha256_final(&hm, mac);
}

enum devtcp_verdict devtcp_hello_check(const struct devtcp_hello *h, int data_links,
				       uint32_t jobid, uint32_t vpid,
				       const uint8_t key[DEVTCP_KEY_LEN],
				       const struct devtcp_tuple *t)
{
	uint8_t mac[DEVTCP_SHA256_LEN];

	if (ntohl(h->magic) != DEVTCP_HELLO_MAGIC)
		return DEVTCP_BAD_MAGIC;
	if (ntohs(h->version) != DEVTCP_WIRE_VERSION)
		return DEVTCP_BAD_VERSION;
	if (h->kind != DEVTCP_LINK_CTRL && h->kind != DEVTCP_LINK_DATA)
		return DEVTCP_BAD_KIND;
	if (h->kind == DEVTCP_LINK_CTRL ? h->index != 0 : h->index >= data_links)
		return DEVTCP_BAD_INDEX;
	if (ntohl(h->to_jobid) != jobid || ntohl(h->to_vpid) != vpid)
		return DEVTCP_NOT_FOR_ME;
	devtcp_hello_mac(key, h, t, mac);
	return devtcp_mac_equal(mac, h->mac, sizeof(mac)) ? DEVTCP_OK : DEVTCP_BAD_MAC;
}

enum devtcp_verdict devtcp_frame_check(const struct devtcp_frame *f, const struct devtcp_limits *l)
{
	if (f->pad || (f->flags & ~(DEVTCP_FRAME_BYE | DEVTCP_FRAME_PUT)) ||
	    f->flags == (DEVTCP_FRAME_BYE | DEVTCP_FRAME_PUT))
		return DEVTCP_BAD_FLAGS;
	if (f->flags & DEVTCP_FRAME_BYE)
		return f->ctrl_len || f->data_len || f->link || f->tag ? DEVTCP_BAD_FLAGS
								      : DEVTCP_OK;
	if (f->link >= l->data_links || (!f->data_len && f->link))
		return DEVTCP_BAD_LINK;
	if (f->flags & DEVTCP_FRAME_PUT) {
		if (f->ctrl_len != sizeof(struct devtcp_put))
			return DEVTCP_BAD_CTRL_LEN;
		return f->data_len > DEVTCP_PUT_LIMIT ? DEVTCP_BAD_DATA_LEN : DEVTCP_OK;
	}
	if (f->ctrl_len < DEVTCP_MIN_CTRL || f->ctrl_len > l->max_ctrl)
		return DEVTCP_BAD_CTRL_LEN;
	if (f->data_len > l->max_data)
		return DEVTCP_BAD_DATA_LEN;
	return l->tag_ok(f->tag) ? DEVTCP_OK : DEVTCP_UNKNOWN_TAG;
}

enum devtcp_verdict devtcp_put_check(const struct devtcp_put *p, uint64_t len,
				     const struct devtcp_region *r)
{
	if (!r || !r->remote_write)
		return DEVTCP_PUT_UNREGISTERED;
	if (p->to < r->base || p->to - r->base > r->len || len > r->len - (p->to - r->base))
		return DEVTCP_PUT_OUTSIDE;
	return DEVTCP_OK;
}

enum devtcp_ctrl_event devtcp_ctrl_step(struct devtcp_ctrl_rx *rx, const struct devtcp_limits *l,
					devtcp_read_fn read, void *ctx, enum devtcp_verdict *v)
{
	struct devtcp_frame *f = &rx->frame;
	int rc;

	if (!rx->in_ctrl) {
		size_t want;

		rc = read(ctx, f, sizeof(*f), &rx->done);
		if (rc <= 0)
			return rc < 0 ? DEVTCP_CTRL_ERROR : DEVTCP_CTRL_LATER;
		rx->done = 0;
		*v = devtcp_frame_check(f, l);
		if (*v != DEVTCP_OK)
			return DEVTCP_CTRL_REFUSED;
		if (f->flags & DEVTCP_FRAME_BYE)
			return DEVTCP_CTRL_BYE;
		want = f->ctrl_len > DEVTCP_CTRL_ROOM ? f->ctrl_len : DEVTCP_CTRL_ROOM;
		if (rx->ctrl_cap < want) {
			unsigned char *p = realloc(rx->ctrl, want);

			if (!p) {
				errno = ENOMEM;
				return DEVTCP_CTRL_ERROR;
			}
			rx->ctrl = p;
			rx->ctrl_cap = want;
		}
		rx->in_ctrl = true;
	}
	rc = read(ctx, rx->ctrl, f->ctrl_len, &rx->done);
	if (rc <= 0)
		return rc < 0 ? DEVTCP_CTRL_ERROR : DEVTCP_CTRL_LATER;
	rx->done = 0;
	rx->in_ctrl = false;
	if (f->ctrl_len < DEVTCP_CTRL_ROOM)	/* no stale header bytes */
		memset(rx->ctrl + f->ctrl_len, 0, DEVTCP_CTRL_ROOM - f->ctrl_len);
	return f->flags & DEVTCP_FRAME_PUT ? DEVTCP_CTRL_PUT : DEVTCP_CTRL_MESSAGE;
}

void devtcp_ctrl_free(struct devtcp_ctrl_rx *rx)
{
	free(rx->ctrl);
	rx->ctrl = NULL;
	rx->ctrl_cap = 0;
}
