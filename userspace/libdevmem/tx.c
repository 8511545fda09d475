// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Send: sendmsg(MSG_ZEROCOPY) with an SCM_DEVMEM_DMABUF cmsg, the iov
 * holding offsets into the bound dma-buf, and the zero-copy completions the
 * kernel queues on the socket's error queue once the device has read a send.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/errqueue.h>

#include <linux/devmem_compat.h>

#include "internal.h"

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY	5
#endif

struct devmem_tx {
	int sock;
	uint32_t dmabuf_id;
	size_t size;			/* of the dma-buf */
	struct devmem_zc zc;
};

DEVMEM_EXPORT int devmem_tx_open(struct devmem_tx **out, int sock, struct devmem_binding *binding)
{
	struct devmem_tx *tx;
	int one = 1;

	if (setsockopt(sock, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		return devmem_fail_errno(-errno, "devmem_tx_open: SO_ZEROCOPY on fd %d", sock);
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return devmem_fail(-ENOMEM, "devmem_tx_open: out of memory");
	tx->sock = sock;
	tx->dmabuf_id = devmem_binding_id(binding);
	tx->size = devmem_mem_size(devmem_binding_mem(binding));
	*out = tx;
	return 0;
}

DEVMEM_EXPORT void devmem_tx_close(struct devmem_tx *tx, int timeout_ms)
{
	if (!tx)
		return;
	if (tx->zc.next != tx->zc.done_below)
		devmem_tx_wait(tx, tx->zc.next - 1, timeout_ms);
	free(tx);
}

DEVMEM_EXPORT ssize_t devmem_tx_send(struct devmem_tx *tx, uint64_t off, size_t len, int flags,
				     uint32_t *id)
{
	char ctrl[CMSG_SPACE(sizeof(uint32_t))] __attribute__((aligned(8))) = { 0 };
	struct iovec iov = { .iov_base = (void *)(uintptr_t)off, .iov_len = len };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctrl,
		.msg_controllen = sizeof(ctrl),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	ssize_t n;

	if (!len || off > tx->size || len > tx->size - off)
		return devmem_fail(-EINVAL, "devmem_tx_send: range %llu+%zu is not inside the "
				   "%zu-byte dma-buf", (unsigned long long)off, len, tx->size);
	if (devmem_zc_full(&tx->zc))
		return devmem_fail(-ENOBUFS, "devmem_tx_send: %u sends not completed: reap "
				   "completions first (devmem_tx_reap)", DEVMEM_ZC_WINDOW);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_DEVMEM_DMABUF;
	cm->cmsg_len = CMSG_LEN(sizeof(uint32_t));
	memcpy(CMSG_DATA(cm), &tx->dmabuf_id, sizeof(tx->dmabuf_id));
	do {
		n = sendmsg(tx->sock, &msg, flags | MSG_ZEROCOPY);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		n = -errno;
		if (n == -ENODEV)
			return devmem_fail(n, "devmem_tx_send: fd %d: the route does not go out "
					   "through the device dmabuf %u is bound to", tx->sock,
					   tx->dmabuf_id);
		if (n == -EAGAIN)
			return devmem_fail(n, "devmem_tx_send: socket buffer full");
		return devmem_fail_errno(n, "devmem_tx_send: fd %d, dmabuf %u, %llu+%zu",
					 tx->sock, tx->dmabuf_id, (unsigned long long)off, len);
	}
	/* Every zero-copy send that moved bytes takes the next id. */
	if (id)
		*id = tx->zc.next;
	tx->zc.next++;
	return n;
}

/* Reads every completion queued now; returns how many sends completed. */
static int tx_read_errqueue(struct devmem_tx *tx)
{
	int completed = 0;

	for (;;) {
		char ctrl[CMSG_SPACE(sizeof(struct sock_extended_err)) + 64]
			__attribute__((aligned(8)));
		struct msghdr msg = { .msg_control = ctrl, .msg_controllen = sizeof(ctrl) };
		const struct sock_extended_err *ee;
		struct cmsghdr *cm;
		int n;

		if (recvmsg(tx->sock, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return completed;
			if (errno == EINTR)
				continue;
			return devmem_fail_errno(-errno, "devmem_tx_reap: MSG_ERRQUEUE on fd %d",
						 tx->sock);
		}
		cm = CMSG_FIRSTHDR(&msg);
		if (!cm)
			continue;
		ee = (const struct sock_extended_err *)CMSG_DATA(cm);
		if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
			continue;	/* timestamps and ICMP errors are not ours */
		if (ee->ee_errno)
			return devmem_fail(-(int)ee->ee_errno, "devmem_tx_reap: fd %d: zero-copy "
					   "error %s", tx->sock, strerror(ee->ee_errno));
		n = devmem_zc_complete(&tx->zc, ee->ee_info, ee->ee_data);
		if (n < 0)
			return n;
		completed += n;
	}
}

static int elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

DEVMEM_EXPORT int devmem_tx_reap(struct devmem_tx *tx, int timeout_ms)
{
	struct pollfd pfd = { .fd = tx->sock, .events = 0 };	/* POLLERR always */
	int n = tx_read_errqueue(tx);

	if (n || !timeout_ms || tx->zc.next == tx->zc.done_below)
		return n;
	if (poll(&pfd, 1, timeout_ms) < 0)
		return devmem_fail_errno(-errno, "devmem_tx_reap: poll");
	return tx_read_errqueue(tx);
}

DEVMEM_EXPORT bool devmem_tx_done(const struct devmem_tx *tx, uint32_t id)
{
	return devmem_zc_done(&tx->zc, id);
}

DEVMEM_EXPORT int devmem_tx_wait(struct devmem_tx *tx, uint32_t id, int timeout_ms)
{
	struct timespec t0;

	if ((int32_t)(id - tx->zc.next) >= 0)
		return devmem_fail(-EINVAL, "devmem_tx_wait: send %u was never made (next is %u)",
				   id, tx->zc.next);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!devmem_zc_done_upto(&tx->zc, id)) {
		int left = timeout_ms < 0 ? -1 : timeout_ms - elapsed_ms(&t0);
		int n;

		if (timeout_ms >= 0 && left <= 0)
			return devmem_fail(-ETIMEDOUT, "devmem_tx_wait: fd %d: send %u not "
					   "completed after %d ms (%u pending)", tx->sock, id,
					   timeout_ms, devmem_tx_pending(tx));
		n = devmem_tx_reap(tx, left);
		if (n < 0)
			return n;
	}
	return 0;
}

DEVMEM_EXPORT uint32_t devmem_tx_pending(const struct devmem_tx *tx)
{
	return tx->zc.next - tx->zc.done_below - tx->zc.ahead;
}

/* -- zero-copy id bookkeeping, shared with the unit tests -- */

int devmem_zc_complete(struct devmem_zc *zc, uint32_t lo, uint32_t hi)
{
	int n = 0;

	/* The range is inclusive and may wrap around 2^32. */
	for (uint32_t id = lo;; id++) {
		if (id - zc->done_below >= zc->next - zc->done_below)
			return devmem_fail(-EPROTO, "zero-copy completion for send %u, which is "
					   "not outstanding", id);
		if (!zc->done[id % DEVMEM_ZC_WINDOW]) {
			zc->done[id % DEVMEM_ZC_WINDOW] = 1;
			zc->ahead++;
			n++;
		}
		if (id == hi)
			break;
	}
	while (zc->done_below != zc->next && zc->done[zc->done_below % DEVMEM_ZC_WINDOW]) {
		zc->done[zc->done_below++ % DEVMEM_ZC_WINDOW] = 0;
		zc->ahead--;
	}
	return n;
}

bool devmem_zc_done(const struct devmem_zc *zc, uint32_t id)
{
	if ((int32_t)(id - zc->done_below) < 0)
		return true;
	if (id - zc->done_below >= zc->next - zc->done_below)
		return false;
	return zc->done[id % DEVMEM_ZC_WINDOW];
}

bool devmem_zc_done_upto(const struct devmem_zc *zc, uint32_t id)
{
	return (int32_t)(id - zc->done_below) < 0;
}

bool devmem_zc_full(const struct devmem_zc *zc)
{
	return zc->next - zc->done_below >= DEVMEM_ZC_WINDOW;
}
