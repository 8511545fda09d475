// SPDX-License-Identifier: GPL-2.0
/* rdpm_parse(): every request type accepted when well-formed, and each way
 * a request can be malformed refused with its errno. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "devtcp/check.h"
#include "proto.h"

struct pkt {
	struct rdpm_hdr h;
	unsigned char body[RDPM_MAX_MSG + 64];
};

static size_t mk(struct pkt *p, uint16_t type, const void *body, size_t blen)
{
	memset(p, 0, sizeof(*p));
	p->h = (struct rdpm_hdr){ RDPM_MAGIC, RDPM_VERSION, type, sizeof(p->h) + blen, 42 };
	if (body)
		memcpy(p->body, body, blen);
	return sizeof(p->h) + blen;
}

static int parse(const struct pkt *p, size_t len, int nfds, struct rdpm_msg *m)
{
	const char *why = NULL;
	int r = rdpm_parse(p, len, nfds, m, &why);

	CHECK(why && (r == 0 || why[0]), "an error without a reason (%d)", r);
	return r;
}

int main(void)
{
	struct rdpm_hello hello = { 1, 1, 0 };
	struct rdpm_register reg = { .ifname = "eth1", .nqueues = 2 };
	struct rdpm_steer st = { .handle = 3, .family = AF_INET, .dport = 5000 };
	struct rdpm_unsteer un = { 9 };
	struct rdpm_status status = { RDPM_STATUS_JSON };
	struct rdpm_window win = { .handle = 3, .bytes = 1 << 20 };
	struct rdpm_msg m;
	struct pkt p;
	size_t len;

	/* Well-formed requests. */
	len = mk(&p, RDPM_HELLO, &hello, sizeof(hello));
	CHECK(parse(&p, len, 0, &m) == 0 && m.hdr.id == 42, "hello");
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == 0 && m.u.reg.nqueues == 2, "register");
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 0, &m) == 0 && m.u.steer.dport == 5000, "steer");
	st.family = AF_INET6;
	st.src[15] = 1;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 0, &m) == 0, "steer v6");
	len = mk(&p, RDPM_UNSTEER, &un, sizeof(un));
	CHECK(parse(&p, len, 0, &m) == 0 && m.u.unsteer.flow == 9, "unsteer");
	len = mk(&p, RDPM_STATUS, &status, sizeof(status));
	CHECK(parse(&p, len, 0, &m) == 0, "status");
	len = mk(&p, RDPM_RELOAD, NULL, 0);
	CHECK(parse(&p, len, 0, &m) == 0, "reload");
	len = mk(&p, RDPM_WINDOW, &win, sizeof(win));
	CHECK(parse(&p, len, 1, &m) == 0 && m.u.window.bytes == 1 << 20, "window");

	/* Header problems. */
	len = mk(&p, RDPM_HELLO, &hello, sizeof(hello));
	CHECK(parse(&p, 0, 0, &m) == -EPROTO && m.hdr.magic == 0, "empty");
	CHECK(parse(&p, sizeof(p.h) - 1, 0, &m) == -EPROTO, "short header");
	CHECK(parse(&p, len - 1, 0, &m) == -EPROTO && m.hdr.id == 42,
	      "truncated body (length mismatch), id still echoed");
	p.h.magic++;
	CHECK(parse(&p, len, 0, &m) == -EPROTO, "magic");
	len = mk(&p, RDPM_HELLO, NULL, RDPM_MAX_MSG);
	CHECK(parse(&p, len, 0, &m) == -EMSGSIZE, "oversized");
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	p.h.version = 2;
	CHECK(parse(&p, len, 0, &m) == -EPROTONOSUPPORT, "version");
	len = mk(&p, RDPM_HELLO, &hello, sizeof(hello));
	p.h.version = 9;
	CHECK(parse(&p, len, 0, &m) == 0, "HELLO takes any header version");
	len = mk(&p, 0, NULL, 0);
	CHECK(parse(&p, len, 0, &m) == -EOPNOTSUPP, "type 0");
	len = mk(&p, RDPM_TYPE_MAX + 1, NULL, 0);
	CHECK(parse(&p, len, 0, &m) == -EOPNOTSUPP, "type max+1");
	len = mk(&p, RDPM_HELLO | RDPM_REPLY, &hello, sizeof(hello));
	CHECK(parse(&p, len, 0, &m) == -EOPNOTSUPP, "a reply sent as a request");
	len = mk(&p, RDPM_HELLO, NULL, sizeof(hello) + 1);
	CHECK(parse(&p, len, 0, &m) == -EBADMSG, "body too long");

	/* Descriptors. */
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "register without fd");
	CHECK(parse(&p, len, 2, &m) == -EINVAL, "register with two fds");
	len = mk(&p, RDPM_UNSTEER, &un, sizeof(un));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "fd on unsteer");
	len = mk(&p, RDPM_WINDOW, &win, sizeof(win));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "window without the socket");

	/* Fields. */
	hello.flags = 1;
	len = mk(&p, RDPM_HELLO, &hello, sizeof(hello));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "hello flags");
	hello = (struct rdpm_hello){ 2, 1, 0 };
	len = mk(&p, RDPM_HELLO, &hello, sizeof(hello));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "hello range");
	memset(reg.ifname, 'a', sizeof(reg.ifname));
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "unterminated name");
	memset(reg.ifname, 0, sizeof(reg.ifname));
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "empty name");
	strcpy(reg.ifname, "a/b");
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "slash in name");
	memset(reg.ifname, 0, sizeof(reg.ifname));
	strcpy(reg.ifname, "eth1");
	reg.ifname[10] = 'x';
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "bytes after the name's NUL");
	reg.ifname[10] = 0;
	reg.nqueues = RDPM_MAX_QUEUES + 1;
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "too many queues");
	reg.nqueues = 1;
	reg.flags = 14;	/* 16 KiB buffers */
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == 0 && m.u.reg.flags == 14, "page shift 14");
	reg.flags = 32;
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "page shift 32");
	reg.flags = 0x40;
	len = mk(&p, RDPM_REGISTER, &reg, sizeof(reg));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "unknown register flag");
	reg.flags = 0;
	st = (struct rdpm_steer){ .handle = 3, .family = AF_INET, .dport = 5000 };
	st.family = 7;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 0, &m) == -EAFNOSUPPORT, "family");
	st.family = AF_INET;
	st.pad[1] = 1;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "pad");
	st.pad[1] = 0;
	st.dst[5] = 1;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "v4 address tail");
	st.dst[5] = 0;
	st.dport = 0;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "port 0");
	CHECK(parse(&p, len, 1, &m) == 0, "port 0 with a socket: the socket's");
	st.family = 0;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 1, &m) == 0, "family 0 with a socket: the socket's tuple");
	CHECK(parse(&p, len, 0, &m) == -EAFNOSUPPORT, "family 0 without a socket");
	st.sport = 9;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "family 0 with a port");
	st.sport = 0;
	st.src[0] = 10;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "family 0 with an address");
	st.src[0] = 0;
	st.family = AF_INET;
	st.dport = 1;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 2, &m) == -EINVAL, "two fds on steer");
	st.handle = 0;
	len = mk(&p, RDPM_STEER, &st, sizeof(st));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "handle 0");
	un.flow = 0;
	len = mk(&p, RDPM_UNSTEER, &un, sizeof(un));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "flow 0");
	status.flags = 2;
	len = mk(&p, RDPM_STATUS, &status, sizeof(status));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "status flags");
	win.pad = 1;
	len = mk(&p, RDPM_WINDOW, &win, sizeof(win));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "window padding");
	win = (struct rdpm_window){ .handle = 0, .bytes = 1 };
	len = mk(&p, RDPM_WINDOW, &win, sizeof(win));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "window handle 0");
	win = (struct rdpm_window){ .handle = 1, .bytes = 0 };
	len = mk(&p, RDPM_WINDOW, &win, sizeof(win));
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "window of 0 bytes");

	/* JOIN: no fd (rdpmd sends one back), a share, known flags only. */
	struct rdpm_join join = { .ifname = "eth1", .flags = 14, .bytes = 1 << 20 };

	len = mk(&p, RDPM_JOIN, &join, sizeof(join));
	CHECK(parse(&p, len, 0, &m) == 0 && m.u.join.bytes == 1 << 20 && m.u.join.flags == 14,
	      "join");
	CHECK(parse(&p, len, 1, &m) == -EINVAL, "join with an fd attached");
	CHECK(parse(&p, len - 1, 0, &m) == -EPROTO, "join cut short");
	join.bytes = 0;
	len = mk(&p, RDPM_JOIN, &join, sizeof(join));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "join: a share of 0 bytes");
	join.bytes = 1;
	join.pad = 1;
	len = mk(&p, RDPM_JOIN, &join, sizeof(join));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "join padding");
	join.pad = 0;
	join.flags = 32;
	len = mk(&p, RDPM_JOIN, &join, sizeof(join));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "join page shift over 31");
	/* 0 (the page size) and 12 to 21 are buffer sizes; 1 to 11 are not,
	 * and are refused before rdpmd allocates anything. */
	for (unsigned int shift = 0; shift < 32; shift++) {
		bool ok = !shift || (shift >= 12 && shift <= 21);

		join.flags = shift;
		len = mk(&p, RDPM_JOIN, &join, sizeof(join));
		CHECK((parse(&p, len, 0, &m) == 0) == ok, "join page shift %u %s", shift,
		      ok ? "taken" : "refused");
	}
	join.flags = 1u << 6;
	len = mk(&p, RDPM_JOIN, &join, sizeof(join));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "join unknown flag");
	join.flags = 0;
	memcpy(join.ifname, "eth1\0x", 7);
	len = mk(&p, RDPM_JOIN, &join, sizeof(join));
	CHECK(parse(&p, len, 0, &m) == -EINVAL, "join: bytes after the name's NUL");
	return check_done("t_proto");
}
