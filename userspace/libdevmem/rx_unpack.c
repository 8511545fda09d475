// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devmem_rx_unpack: a devmem receive added to an unpack stream as one batch
 * (devmem_unpack_add), its dma-buf fragments held until the batch has run
 * and handed back to the kernel then, oldest first. On CUDA memory the GPU
 * reads a batch after the call returns, so the receive and the launch of
 * the next batch overlap it; the tokens go back on a later call, once the
 * batch's event says the kernel is done with them. On host memory a batch
 * runs within the call and its tokens go back before it returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RXU_LINEAR	(256u << 10)	/* linear bytes one receive takes */

struct dm_rx_pending {
	struct devmem_unpack *u;	/* whose batch numbers these are */
	struct rxu_held {
		struct devmem_frag f;
		uint32_t batch;
	} *q;				/* a ring, oldest at head */
	size_t head, count, cap;
	struct devmem_frag *frags;	/* one receive's */
	unsigned char *linear;		/* ... and its linear bytes */
};

static void pending_free(struct dm_rx_pending *p)
{
	if (!p)
		return;
	free(p->q);
	free(p->frags);
	free(p->linear);
	free(p);
}

/* Batch numbers count modulo 2^31 (devmem_unpack_add's): @b is done once
 * @done has reached it. */
static bool batch_done(uint32_t b, uint32_t done)
{
	return ((done - b) & 0x7fffffff) < 0x40000000;
}

/* Hands back the fragments of the batches @u has completed (all of them,
 * with @wait). */
static int release_done(struct devmem_rx *rx, struct dm_rx_pending *p, bool wait)
{
	int done, ret = 0;

	/* waiting covers batches of linear bytes only, which hold nothing */
	if (!p->u || (!p->count && !wait))
		return 0;
	done = devmem_unpack_completed(p->u, wait);
	if (done < 0)
		return done;
	while (p->count && batch_done(p->q[p->head].batch, (uint32_t)done)) {
		int r = devmem_rx_release(rx, &p->q[p->head].f);

		if (r && !ret)
			ret = r;
		p->head = (p->head + 1) % p->cap;
		p->count--;
	}
	if (!p->count)
		p->head = 0;
	int r = devmem_rx_flush(rx);

	return ret ? ret : r;
}

/* Hands @n fragments back at once (a receive that was not unpacked). */
static void give_back(struct devmem_rx *rx, const struct devmem_frag *f, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		devmem_rx_release(rx, &f[i]);
	devmem_rx_flush(rx);
}

/* Queues @f, of batch @batch, until it has run. */
static int hold(struct dm_rx_pending *p, const struct devmem_frag *f, uint32_t batch)
{
	if (p->count == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : DEVMEM_UNPACK_MAX_FRAGS;
		struct rxu_held *q = malloc(cap * sizeof(*q));

		if (!q)
			return devmem_fail(-ENOMEM, "devmem_rx_unpack: out of memory");
		for (size_t i = 0; i < p->count; i++)
			q[i] = p->q[(p->head + i) % p->cap];
		free(p->q);
		p->q = q;
		p->cap = cap;
		p->head = 0;
	}
	p->q[(p->head + p->count++) % p->cap] = (struct rxu_held){ *f, batch };
	return 0;
}

static int pending_get(struct devmem_rx *rx, struct dm_rx_pending **out)
{
	struct dm_rx_pending **slot = dm_rx_pending_of(rx), *p = *slot;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (p) {
			p->frags = malloc(DEVMEM_UNPACK_MAX_FRAGS * sizeof(*p->frags));
			p->linear = malloc(RXU_LINEAR);
		}
		if (!p || !p->frags || !p->linear) {
			pending_free(p);
			return devmem_fail(-ENOMEM, "devmem_rx_unpack: out of memory");
		}
		*slot = p;
	}
	*out = p;
	return 0;
}

DEVMEM_EXPORT ssize_t devmem_rx_unpack(struct devmem_rx *rx, struct devmem_unpack *u, size_t len,
				       int flags)
{
	struct dm_rx_pending *p = NULL;
	unsigned int nf = 0;
	uint64_t room;
	ssize_t n;
	int b, ret;

	if (!rx || !u)
		return devmem_fail(-EINVAL, "devmem_rx_unpack: rx and u must not be NULL");
	ret = pending_get(rx, &p);
	if (ret)
		return ret;
	if (p->count && p->u != u)
		return devmem_fail(-EINVAL, "devmem_rx_unpack: the socket still holds fragments of "
				   "another unpack handle's batches (devmem_rx_unpack_wait() "
				   "first)");
	p->u = u;
	ret = release_done(rx, p, false);
	if (ret)
		return ret;
	room = dm_unpack_room(u);
	if (!room)
		return devmem_fail(-ENOSPC, "devmem_rx_unpack: the stream's destination is full, or "
				   "none was begun (devmem_unpack_begin)");
	if (len > room)
		len = (size_t)room;
	n = devmem_rx_recv_upto(rx, len, flags, p->frags, DEVMEM_UNPACK_MAX_FRAGS, &nf, p->linear,
				RXU_LINEAR);
	if (n <= 0)
		return n;	/* a failed receive leaves no fragment with us */
	b = devmem_unpack_add(u, p->frags, nf);
	if (b < 0) {
		/* launches of the batch may have started: let them end */
		devmem_unpack_completed(u, true);
		give_back(rx, p->frags, nf);
		return b;
	}
	for (unsigned int i = 0; i < nf; i++) {
		if (!p->frags[i].dmabuf_id)
			continue;
		ret = hold(p, &p->frags[i], (uint32_t)b);
		if (ret) {	/* no room to remember it: wait, then give it back */
			devmem_unpack_completed(u, true);
			devmem_rx_release(rx, &p->frags[i]);
		}
	}
	ret = release_done(rx, p, false);
	return ret ? ret : n;
}

/* devmem_rx_close(): what is still held goes back without waiting. */
void dm_rx_pending_close(struct devmem_rx *rx)
{
	struct dm_rx_pending *p = *dm_rx_pending_of(rx);

	if (!p)
		return;
	for (; p->count; p->count--, p->head = (p->head + 1) % p->cap)
		devmem_rx_release(rx, &p->q[p->head].f);
	pending_free(p);
	*dm_rx_pending_of(rx) = NULL;
}

DEVMEM_EXPORT int devmem_rx_unpack_wait(struct devmem_rx *rx)
{
	struct dm_rx_pending *p = NULL;

	if (!rx)
		return devmem_fail(-EINVAL, "devmem_rx_unpack_wait: rx is NULL");
	p = *dm_rx_pending_of(rx);
	return p ? release_done(rx, p, true) : 0;
}
