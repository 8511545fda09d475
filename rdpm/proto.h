/* SPDX-License-Identifier: GPL-2.0 */
/* rdpmd's request parser: bytes in, a validated request or an error out. */
#ifndef RDPM_PROTO_PARSE_H
#define RDPM_PROTO_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include "rdpm_proto.h"

/*
 * A JOIN's page shift: 0 is the system page size (the same buffer as its
 * log2), else log2 of the receive buffers, from the smallest page any
 * architecture has to a huge page. Others are refused before any memory
 * is allocated.
 */
#define RDPM_JOIN_MIN_SHIFT	12
#define RDPM_JOIN_MAX_SHIFT	21

struct rdpm_msg {
	struct rdpm_hdr hdr;		/* zero unless a whole header arrived */
	union {
		struct rdpm_hello hello;
		struct rdpm_register reg;
		struct rdpm_steer steer;
		struct rdpm_unsteer unsteer;
		struct rdpm_unregister unreg;
		struct rdpm_status status;
		struct rdpm_drain drain;
		struct rdpm_window window;
		struct rdpm_join join;
	} u;
};

/*
 * Parses the request of @len bytes at @buf that arrived with @nfds file
 * descriptors. Returns 0 with @m filled, or a negative errno with a static
 * reason in *@why; @m->hdr then holds the header if it could be read (so
 * the error reply can echo its id). Pure: no state, no I/O.
 */
int rdpm_parse(const void *buf, size_t len, int nfds, struct rdpm_msg *m, const char **why);

/* Whether @s (within @size bytes) is a NUL-terminated interface name. */
bool rdpm_ifname_ok(const char *s, size_t size);

#endif
