/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libdevmem internals shared between its source files; not installed. */
#ifndef LIBDEVMEM_INTERNAL_H
#define LIBDEVMEM_INTERNAL_H

#include <stdarg.h>

#include "devmem.h"

#define DEVMEM_EXPORT __attribute__((visibility("default")))

/*
 * Records the thread's error message (printf-style, without a trailing
 * newline) and returns @err, a negative errno, so that callers can write
 * "return devmem_fail(-EINVAL, "%s: queue %u does not exist", ...)".
 */
int devmem_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, appending ": strerror(-err)". */
int devmem_fail_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* rx.c: token batches for SO_DEVMEM_DONTNEED, and the cmsg walk. */
#include <sys/socket.h>
#include <linux/devmem_compat.h>

/* Kernel limits of one SO_DEVMEM_DONTNEED call (net/core/sock.c). */
#define DEVMEM_DONTNEED_MAX_TOKENS	128
#define DEVMEM_DONTNEED_MAX_FRAGS	1024

/* Tokens waiting to go back to the kernel, as coalesced ranges. */
struct devmem_token_batch {
	struct dmabuf_token ranges[DEVMEM_DONTNEED_MAX_TOKENS];
	unsigned int n;			/* ranges in use */
	unsigned int frags;		/* tokens in them */
};

/* Adds @token, coalescing with the last range; 1 (nothing added) when the
 * batch is full and must be flushed first. */
int devmem_tokens_add(struct devmem_token_batch *tb, uint32_t token);
/* SO_DEVMEM_DONTNEED of the batch on @sock; empties it. */
int devmem_tokens_flush(struct devmem_token_batch *tb, int sock);

/*
 * Walks the cmsgs of one recvmsg(MSG_SOCK_DEVMEM) that returned @bytes with
 * linear bytes at @data. *@started false and the counters 0 before the first
 * call. Returns 1 and the next fragment, 0 at the end, -EPROTO when the
 * cmsgs do not add up to @bytes.
 */
int devmem_rx_parse_next(struct msghdr *msg, struct cmsghdr **cursor, bool *started,
			 const uint8_t *data, size_t bytes, size_t *linear_used,
			 size_t *reported, struct devmem_frag *frag);

/*
 * tx.c: zero-copy send ids. Every sendmsg(MSG_ZEROCOPY) that moves bytes
 * takes the next id; the kernel reports completed ids as inclusive ranges,
 * possibly out of order.
 */
#define DEVMEM_ZC_WINDOW	65536	/* sends outstanding at most */

struct devmem_zc {
	uint32_t next;			/* id of the next send */
	uint32_t done_below;		/* every id below has completed */
	uint32_t ahead;			/* completed ids at or above done_below */
	uint8_t done[DEVMEM_ZC_WINDOW];	/* by id % window, for ids >= done_below */
};

/* Records completion of ids lo..hi; returns how many were new. */
int devmem_zc_complete(struct devmem_zc *zc, uint32_t lo, uint32_t hi);
bool devmem_zc_done(const struct devmem_zc *zc, uint32_t id);
bool devmem_zc_done_upto(const struct devmem_zc *zc, uint32_t id);
bool devmem_zc_full(const struct devmem_zc *zc);

/*
 * CUDA device memory behind devmem_mem_cuda() (cuda.c). mem.c owns the
 * dma-buf fd; the allocation, its context and libcuda stay with @cuda.
 */
struct devmem_cuda;

/* Allocates @size bytes (rounded up to the page size, in @rsize) on CUDA
 * device @device and exports them as a dma-buf (@fd). */
int devmem_cuda_alloc(struct devmem_cuda **out, int device, size_t size, int *fd,
		      size_t *rsize);
/* Copies @len bytes at @off between the device memory and @host. */
int devmem_cuda_copy(struct devmem_cuda *cuda, uint64_t off, void *host, size_t len,
		     bool to_device);
void devmem_cuda_free(struct devmem_cuda *cuda);

#endif
