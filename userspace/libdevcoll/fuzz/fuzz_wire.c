// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target of what libdevcoll reads from the network (wire.c): the
 * first byte picks the message (registration, hello, data header) and
 * whether the rest is signed with the test key first, so that the checks
 * behind the MAC are reached too. Beyond not crashing (ASan/UBSan), what
 * is accepted must hold what the callers rely on.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const uint8_t nonce[DC_NONCE_LEN] = { 7 };
	uint8_t key[DC_KEY_LEN];
	const char *why = NULL;
	unsigned char *m;
	size_t n;
	int ret;

	if (!size)
		return 0;
	n = size - 1;
	m = malloc(n ? n : 1);	/* exact size: reads past it are caught */
	if (!m)
		return 0;
	memcpy(m, data + 1, n);
	memset(key, 0x5a, sizeof(key));
	switch (data[0] % 3) {
	case 0: {
		struct dc_reg r;

		if ((data[0] & 0x80) && n == sizeof(r))
			dc_reg_sign((struct dc_reg *)m, key, nonce);
		ret = dc_reg_check(m, n, key, nonce, 4, &r, &why);
		if (!ret && (r.rank == 0 || r.rank >= 4 || r.size != 4 ||
			     (r.sa.ss_family != AF_INET && r.sa.ss_family != AF_INET6)))
			abort();
		break;
	}
	case 1: {
		struct dc_hello_want w = { 42, 1, 4, 2 };
		struct dc_hello h;

		if ((data[0] & 0x80) && n == sizeof(h))
			dc_hello_sign((struct dc_hello *)m, key, nonce);
		ret = dc_hello_check(m, n, key, nonce, &w, &h, &why);
		if (!ret && (h.id != 42 || h.from <= 1 || h.from >= 4 || h.idx >= 2 || h.to != 1))
			abort();
		break;
	}
	default: {
		struct wire_hdr h;

		if (n != sizeof(h))
			goto out;
		memcpy(&h, m, sizeof(h));
		ret = dc_wire_hdr_check(&h, &why);
		if (!ret && h.kind != K_ABORT && (h.off > h.total || h.len > h.total - h.off))
			abort();
		if (!ret && h.kind == K_ABORT && h.len > DC_ABORT_MSG_MAX)
			abort();
		break;
	}
	}
	if (ret && (!why || !why[0]))
		abort();	/* every refusal says why */
out:
	free(m);
	return 0;
}
