// SPDX-License-Identifier: GPL-2.0
/*
 * The request parser. Everything a client sends goes through here first, so
 * it trusts nothing: the length must match the packet, the body must have
 * the exact size of its type, pad and flag bits must be zero, strings must
 * be terminated. It is fuzzed (rdpm/fuzz) and unit-tested (rdpm/tests).
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "proto.h"

bool rdpm_ifname_ok(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (n == 0 || n == size)
		return false;
	/* What the kernel accepts as a name (dev_valid_name). */
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = s[i];

		if (b == '/' || b == ':' || b <= ' ' || b == 0x7f)
			return false;
	}
	/* Bytes after the NUL must be zero: no hidden payload. */
	for (size_t i = n; i < size; i++)
		if (s[i])
			return false;
	return true;
}

static bool zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

static const size_t body_size[RDPM_TYPE_MAX + 1] = {
	[RDPM_HELLO] = sizeof(struct rdpm_hello),
	[RDPM_REGISTER] = sizeof(struct rdpm_register),
	[RDPM_STEER] = sizeof(struct rdpm_steer),
	[RDPM_UNSTEER] = sizeof(struct rdpm_unsteer),
	[RDPM_UNREGISTER] = sizeof(struct rdpm_unregister),
	[RDPM_STATUS] = sizeof(struct rdpm_status),
	[RDPM_DRAIN] = sizeof(struct rdpm_drain),
	[RDPM_RELOAD] = 0,
	[RDPM_WINDOW] = sizeof(struct rdpm_window),
	[RDPM_JOIN] = sizeof(struct rdpm_join),
};

#define FAIL(e, w) do { *why = (w); return (e); } while (0)

int rdpm_parse(const void *buf, size_t len, int nfds, struct rdpm_msg *m, const char **why)
{
	const unsigned char *p = buf;
	unsigned int shift;
	size_t blen;

	memset(m, 0, sizeof(*m));
	*why = "";
	if (len < sizeof(m->hdr))
		FAIL(-EPROTO, "truncated: shorter than the message header");
	memcpy(&m->hdr, p, sizeof(m->hdr));
	if (m->hdr.magic != RDPM_MAGIC)
		FAIL(-EPROTO, "bad magic: not an RDPM message");
	if (len > RDPM_MAX_MSG)
		FAIL(-EMSGSIZE, "oversized: longer than RDPM_MAX_MSG");
	if (m->hdr.length != len)
		FAIL(-EPROTO, "length field does not match the packet (truncated or padded)");
	/* HELLO negotiates: any version in its header; the rest must speak ours. */
	if (m->hdr.type != RDPM_HELLO && m->hdr.version != RDPM_VERSION)
		FAIL(-EPROTONOSUPPORT, "unsupported protocol version");
	if (m->hdr.type == 0 || m->hdr.type > RDPM_TYPE_MAX)
		FAIL(-EOPNOTSUPP, "unknown message type (not a request)");
	blen = len - sizeof(m->hdr);
	if (blen != body_size[m->hdr.type])
		FAIL(-EBADMSG, "body size does not match the message type");
	if (nfds < 0 || nfds > 1)
		FAIL(-EINVAL, "more than one file descriptor attached");
	if (m->hdr.type == RDPM_REGISTER && nfds != 1)
		FAIL(-EINVAL, "REGISTER without a dma-buf fd (SCM_RIGHTS)");
	if (m->hdr.type == RDPM_WINDOW && nfds != 1)
		FAIL(-EINVAL, "WINDOW without a TCP socket fd (SCM_RIGHTS)");
	if (m->hdr.type != RDPM_REGISTER && m->hdr.type != RDPM_WINDOW &&
	    m->hdr.type != RDPM_STEER && nfds)
		FAIL(-EINVAL, "a file descriptor attached to a message that takes none");
	memcpy(&m->u, p + sizeof(m->hdr), blen);

	switch (m->hdr.type) {
	case RDPM_HELLO:
		if (m->u.hello.flags)
			FAIL(-EINVAL, "HELLO: unknown flags");
		if (!m->u.hello.min_version || m->u.hello.min_version > m->u.hello.max_version)
			FAIL(-EINVAL, "HELLO: empty version range");
		break;
	case RDPM_REGISTER:
		if (!rdpm_ifname_ok(m->u.reg.ifname, sizeof(m->u.reg.ifname)))
			FAIL(-EINVAL, "REGISTER: bad interface name");
		if (m->u.reg.nqueues > RDPM_MAX_QUEUES)
			FAIL(-EINVAL, "REGISTER: more queues than RDPM_MAX_QUEUES");
		if (m->u.reg.flags & ~RDPM_REGISTER_PAGE_SHIFT)
			FAIL(-EINVAL, "REGISTER: unknown flags");
		if ((m->u.reg.flags & RDPM_REGISTER_PAGE_SHIFT) > 31)
			FAIL(-EINVAL, "REGISTER: page shift over 31");
		break;
	case RDPM_STEER: {
		const struct rdpm_steer *s = &m->u.steer;

		if (!s->handle)
			FAIL(-EINVAL, "STEER: buffer handle 0");
		if (!zero(s->pad, sizeof(s->pad)))
			FAIL(-EINVAL, "STEER: non-zero padding");
		/* With a socket, family 0 asks for the socket's own tuple. */
		if (nfds && !s->family) {
			if (!zero(s->src, 16) || !zero(s->dst, 16) || s->sport || s->dport)
				FAIL(-EINVAL, "STEER: family 0 (the socket's tuple) with "
				     "addresses or ports");
			break;
		}
		if (s->family != AF_INET && s->family != AF_INET6)
			FAIL(-EAFNOSUPPORT, "STEER: family is neither AF_INET nor AF_INET6");
		if (s->family == AF_INET && (!zero(s->src + 4, 12) || !zero(s->dst + 4, 12)))
			FAIL(-EINVAL, "STEER: IPv4 address with bytes beyond the first 4");
		if (!nfds && !s->dport)
			FAIL(-EINVAL, "STEER: local (destination) port 0");
		break;
	}
	case RDPM_UNSTEER:
		if (!m->u.unsteer.flow)
			FAIL(-EINVAL, "UNSTEER: flow handle 0");
		break;
	case RDPM_UNREGISTER:
		if (!m->u.unreg.handle)
			FAIL(-EINVAL, "UNREGISTER: buffer handle 0");
		break;
	case RDPM_STATUS:
		if (m->u.status.flags & ~RDPM_STATUS_JSON)
			FAIL(-EINVAL, "STATUS: unknown flags");
		break;
	case RDPM_DRAIN:
		if (!rdpm_ifname_ok(m->u.drain.ifname, sizeof(m->u.drain.ifname)))
			FAIL(-EINVAL, "DRAIN: bad interface name");
		break;
	case RDPM_JOIN:
		if (!rdpm_ifname_ok(m->u.join.ifname, sizeof(m->u.join.ifname)))
			FAIL(-EINVAL, "JOIN: bad interface name");
		if (m->u.join.flags & ~RDPM_REGISTER_PAGE_SHIFT)
			FAIL(-EINVAL, "JOIN: unknown flags");
		shift = m->u.join.flags & RDPM_REGISTER_PAGE_SHIFT;
		if (shift && (shift < RDPM_JOIN_MIN_SHIFT || shift > RDPM_JOIN_MAX_SHIFT))
			FAIL(-EINVAL, "JOIN: page shift neither 0 (the page size) nor 12 to 21 "
			     "(4 KiB to 2 MiB buffers)");
		if (m->u.join.pad)
			FAIL(-EINVAL, "JOIN: non-zero padding");
		if (!m->u.join.bytes)
			FAIL(-EINVAL, "JOIN: a share of 0 bytes");
		break;
	case RDPM_WINDOW:
		if (!m->u.window.handle)
			FAIL(-EINVAL, "WINDOW: buffer handle 0");
		if (m->u.window.pad)
			FAIL(-EINVAL, "WINDOW: non-zero padding");
		if (!m->u.window.bytes)
			FAIL(-EINVAL, "WINDOW: a share of 0 bytes");
		break;
	}
	return 0;
}
