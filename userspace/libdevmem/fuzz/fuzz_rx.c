// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target of libdevmem's token handling: a receive's fragments go
 * through a devmem_rx (devmem_rx_next, the refusal and failure paths, and
 * devmem_rx_recv_upto over a recvmsg that serves the input), the caller
 * releasing what it is handed. Every dma-buf token the receive's cmsgs
 * carry must reach SO_DEVMEM_DONTNEED exactly once (recorded by the
 * setsockopt below; rx.c itself is the production code), whether the walk
 * ends, is refused or fails. Only the cmsgs after one of a wrong length
 * cannot be found, so their tokens are not expected.
 *
 * Input: a mode byte (bit 0: recv_upto, else devmem_rx_next), the bytes
 * received (2 bytes), the declared dma-buf's id (1 byte, 0: none) and size
 * (2 bytes, in 64-byte units), then the control buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "internal.h"

#define MAX_TOKENS 4096

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static uint32_t returned[MAX_TOKENS], expected[MAX_TOKENS];
static size_t nreturned, nexpected;

/* The release seam: what SO_DEVMEM_DONTNEED would hand back. */
int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (level == SOL_SOCKET && name == SO_DEVMEM_DONTNEED) {
		const struct dmabuf_token *t = val;
		int frags = 0;

		for (size_t i = 0; i < len / sizeof(*t); i++)
			for (uint32_t k = 0; k < t[i].token_count; k++, frags++) {
				if (nreturned == MAX_TOKENS)
					abort();
				returned[nreturned++] = t[i].token_start + k;
			}
		return frags;
	}
	return (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

/* The receive recvmsg serves: the input's cmsgs and byte count, once. */
static const uint8_t *in_ctrl;
static size_t in_ctrllen, in_bytes;
static bool served;

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	size_t n = in_ctrllen < msg->msg_controllen ? in_ctrllen : msg->msg_controllen;

	(void)fd, (void)flags;
	if (served) {
		errno = EAGAIN;
		return -1;
	}
	served = true;
	memcpy(msg->msg_control, in_ctrl, n);
	msg->msg_controllen = n;
	in_ctrllen = n;		/* what the oracle may see */
	return (ssize_t)(in_bytes < msg->msg_iov->iov_len ? in_bytes : msg->msg_iov->iov_len);
}

/* The oracle: the dma-buf tokens of @ctrl's cmsgs, up to one whose length
 * does not fit (an independent reading of the cmsg layout). */
static void expect_tokens(const uint8_t *ctrl, size_t len)
{
	size_t at = 0;

	nexpected = 0;
	while (len - at >= sizeof(struct cmsghdr)) {
		struct cmsghdr h;
		struct dmabuf_cmsg dc;
		bool devmem;

		memcpy(&h, ctrl + at, sizeof(h));
		devmem = h.cmsg_level == SOL_SOCKET && (h.cmsg_type == SCM_DEVMEM_DMABUF ||
							h.cmsg_type == SCM_DEVMEM_LINEAR);
		if (h.cmsg_len < CMSG_LEN(devmem ? sizeof(dc) : 0) || h.cmsg_len > len - at)
			return;
		if (devmem && h.cmsg_type == SCM_DEVMEM_DMABUF) {
			memcpy(&dc, ctrl + at + CMSG_LEN(0), sizeof(dc));
			expected[nexpected++] = dc.frag_token;
		}
		at += CMSG_ALIGN(h.cmsg_len);
		if (at >= len)
			return;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static int sock = -1;
	struct devmem_rx *rx = NULL;
	struct devmem_frag f, frags[256];
	unsigned int nf = 0;
	uint8_t *ctrl, *lin;
	size_t bytes, n;
	uint64_t buf_size;
	int ret;

	if (size < 6)
		return 0;
	if (sock < 0)
		sock = socket(AF_INET, SOCK_STREAM, 0);
	bytes = data[1] | (size_t)data[2] << 8;
	buf_size = (data[4] | (uint64_t)data[5] << 8) * 64;
	n = size - 6;
	/* 8-byte aligned, exact size: reads past it are caught */
	ctrl = aligned_alloc(8, (n + 7) & ~(size_t)7);
	lin = malloc(bytes ? bytes : 1);
	if (!ctrl || !lin || devmem_rx_open(&rx, sock, 65536))
		abort();
	memcpy(ctrl, data + 6, n);
	if (data[3] && buf_size)
		devmem_rx_set_buffer(rx, data[3], buf_size);
	nreturned = 0;
	if (data[0] & 1) {
		/* a receive of 0 bytes is the end of the stream: no cmsgs come */
		if (!bytes)
			goto out;
		in_ctrl = ctrl;
		in_ctrllen = n;
		in_bytes = bytes;
		served = false;
		ret = (int)devmem_rx_recv_upto(rx, 65536, MSG_DONTWAIT, frags, 256, &nf, lin,
					       bytes ? bytes : 1);
		expect_tokens(ctrl, in_ctrllen);
		for (unsigned int i = 0; ret > 0 && i < nf; i++)
			devmem_rx_release(rx, &frags[i]);
	} else {
		struct msghdr msg = { .msg_control = n ? ctrl : NULL, .msg_controllen = n };

		dm_rx_took(rx, &msg, lin, bytes);
		expect_tokens(ctrl, n);
		for (int steps = 0; (ret = devmem_rx_next(rx, &f)) == 1; steps++) {
			if (steps > 100000)
				abort();	/* the walk must end */
			devmem_rx_release(rx, &f);
		}
		if (devmem_rx_next(rx, &f) == 1)
			abort();	/* nothing after the end or a failure */
	}
	if (devmem_rx_flush(rx) || devmem_rx_held(rx))
		abort();
	/* every token exactly once: the two multisets are equal */
	if (nreturned != nexpected)
		abort();
	qsort(returned, nreturned, sizeof(uint32_t), cmp_u32);
	qsort(expected, nexpected, sizeof(uint32_t), cmp_u32);
	if (memcmp(returned, expected, nreturned * sizeof(uint32_t)))
		abort();
out:
	devmem_rx_close(rx);
	free(ctrl);
	free(lin);
	return 0;
}
