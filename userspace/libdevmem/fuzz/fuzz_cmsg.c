// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target of libdevmem's cmsg parser (devmem_rx_parse_next), what
 * a devmem receive is made of. The input: the bytes received (3 bytes,
 * below 1 MiB; a 4th byte unused), the declared dma-buf's id (1 byte, 0:
 * none) and size (3 bytes, in 64-byte units), then the control buffer. Beyond not crashing
 * (ASan/UBSan), every fragment handed out must lie where it claims: linear
 * ones within the bytes received, dma-buf ones within the declared buffer,
 * and all of them (refused ones too) add up to what was received.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct devmem_rx_walk w = { 0 };
	struct msghdr msg = { 0 };
	struct devmem_frag f;
	size_t bytes, n, sum = 0;
	uint8_t *ctrl, *lin;
	int ret, steps = 0;

	if (size < 8)
		return 0;
	bytes = (data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16) % (1u << 20);
	w.dmabuf_id = data[4];
	w.dmabuf_size = (data[5] | (uint64_t)data[6] << 8 | (uint64_t)data[7] << 16) * 64;
	n = size - 8;
	/* exact sizes, so that reads past either are caught */
	ctrl = malloc(n ? n : 1);
	lin = malloc(bytes ? bytes : 1);
	if (!ctrl || !lin)
		goto out;
	memcpy(ctrl, data + 8, n);
	msg.msg_control = n ? ctrl : NULL;
	msg.msg_controllen = n;
	while ((ret = devmem_rx_parse_next(&msg, &w, lin, bytes, &f)) == 1 || ret == -EBADMSG) {
		if (++steps > 100000)
			abort();	/* the walk must end */
		sum += f.len;
		if (sum > bytes)
			abort();
		if (ret == -EBADMSG)
			continue;	/* refused: the caller returns its token */
		if (f.linear) {
			if ((const uint8_t *)f.linear < lin || f.len > bytes ||
			    (const uint8_t *)f.linear + f.len > lin + bytes || f.dmabuf_id)
				abort();
		} else {
			if (!f.dmabuf_id || f.offset + f.len < f.offset ||
			    (w.dmabuf_id && (f.dmabuf_id != w.dmabuf_id ||
					     f.offset + f.len > w.dmabuf_size)))
				abort();
		}
	}
	if (!ret && sum != bytes && steps)
		abort();	/* the end of a walk covers what was received */
out:
	free(ctrl);
	free(lin);
	return 0;
}
