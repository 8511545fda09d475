// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target of libdevmem's token handling: a receive's fragments go
 * through a devmem_rx (devmem_rx_next, the refusal and failure paths, and
 * devmem_rx_recv_upto over a recvmsg that serves the input), the caller
 * releasing what it is handed. Every dma-buf token the receive's cmsgs
 * carry must reach SO_DEVMEM_DONTNEED exactly once (recorded by the
 * fake_sock.h's setsockopt; rx.c itself is the production code), whether the walk
 * ends, is refused or fails. Only the cmsgs after one of a wrong length
 * cannot be found, so their tokens are not expected.
 *
 * Input: a mode byte (bit 0: recv_upto, else devmem_rx_next), the bytes
 * received (2 bytes), the declared dma-buf's id (1 byte, 0: none) and size
 * (2 bytes, in 64-byte units), then the control buffer.
 */
#include <stdbool.h>
#include "../tests/fake_sock.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static uint32_t expected[FAKE_MAX_TOKENS];
static size_t nexpected;

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
	fake_nreturned = 0;
	if (data[0] & 1) {
		/* a receive of 0 bytes is the end of the stream: no cmsgs come */
		if (!bytes)
			goto out;
		fake_reset();
		fake_queue(ctrl, n, bytes);
		ret = (int)devmem_rx_recv_upto(rx, 65536, MSG_DONTWAIT, frags, 256, &nf, lin,
					       bytes ? bytes : 1);
		expect_tokens(ctrl, fake_recvs[0].ctrllen);	/* what fit */
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
	if (fake_nreturned != nexpected)
		abort();
	qsort(fake_returned, fake_nreturned, sizeof(uint32_t), cmp_u32);
	qsort(expected, nexpected, sizeof(uint32_t), cmp_u32);
	if (memcmp(fake_returned, expected, fake_nreturned * sizeof(uint32_t)))
		abort();
out:
	devmem_rx_close(rx);
	free(ctrl);
	free(lin);
	return 0;
}
