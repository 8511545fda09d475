// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target of rdpmd's request parser. The first input byte picks
 * the number of attached fds (0-2), the rest is the packet. Beyond not
 * crashing (ASan/UBSan), an accepted request must satisfy what the daemon
 * relies on: known type, version, exact length, terminated names.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int zero16(const uint8_t *a)
{
	static const uint8_t z[16];

	return !memcmp(a, z, sizeof(z));
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct rdpm_msg m;
	const char *why;
	unsigned char *copy;

	if (!size)
		return 0;
	/* An exact-size heap copy, so reads past the packet are caught. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	if (!rdpm_parse(copy, size - 1, data[0] % 3, &m, &why)) {
		if (m.hdr.magic != RDPM_MAGIC || m.hdr.length != size - 1 ||
		    !m.hdr.type || m.hdr.type > RDPM_TYPE_MAX ||
		    (m.hdr.type != RDPM_HELLO && m.hdr.version != RDPM_VERSION))
			abort();
		if (m.hdr.type == RDPM_REGISTER &&
		    (!rdpm_ifname_ok(m.u.reg.ifname, sizeof(m.u.reg.ifname)) || data[0] % 3 != 1))
			abort();
		/* At most one fd, and only on the requests that take one. */
		if (data[0] % 3 > 1)
			abort();
		/* STEER: family 0 (the socket's flow) only with a socket and
		 * nothing else named; without one, a local port. */
		if (m.hdr.type == RDPM_STEER && m.u.steer.family != AF_INET &&
		    m.u.steer.family != AF_INET6 &&
		    (m.u.steer.family || data[0] % 3 != 1 || m.u.steer.dport ||
		     m.u.steer.sport || !zero16(m.u.steer.src) || !zero16(m.u.steer.dst)))
			abort();
		if (m.hdr.type == RDPM_STEER && data[0] % 3 == 0 && !m.u.steer.dport)
			abort();
	} else if (!why || !why[0]) {
		abort();
	}
	free(copy);
	return 0;
}
