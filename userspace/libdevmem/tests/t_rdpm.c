// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * rdpm_connect() against a fake rdpmd that attaches more fds to its HELLO
 * reply than the protocol ever passes (one): the client opens at most one
 * of them, and rdpm_close() leaves no fd of the connection behind. And the
 * framing under it (userspace/common/rdpm_wire.c): bounds, flags, CLOEXEC.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devtcp/check.h"
#include "devmem.h"
#include "devmem_rdpm.h"
#include "rdpm_proto.h"
#include "rdpm_wire.h"

static unsigned int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* The fake daemon: one connection, its HELLO answered with @nfds memfds. */
static void fake_rdpmd(int ls, unsigned int nfds)
{
	struct {
		struct rdpm_hdr h;
		struct rdpm_hello_reply r;
	} m = { { RDPM_MAGIC, RDPM_VERSION, RDPM_HELLO | RDPM_REPLY, sizeof(m), 0 },
		{ RDPM_VERSION, 0, RDPM_MAX_MSG } };
	char buf[RDPM_MAX_MSG];
	struct iovec iov = { &m, sizeof(m) };
	struct rdpm_hdr req;
	int c = accept(ls, NULL, NULL), fds[8];
	ssize_t n;

	for (unsigned int i = 0; i < nfds; i++)
		fds[i] = memfd_create("passed", 0);
	n = recv(c, buf, sizeof(buf), 0);
	if (c < 0 || n < (ssize_t)sizeof(req))
		_exit(1);
	memcpy(&req, buf, sizeof(req));
	m.h.id = req.id;
	if (rdpm_send_fds(c, &iov, 1, fds, nfds, 0) != sizeof(m))
		_exit(1);
	while (recv(c, buf, sizeof(buf), 0) > 0)	/* until the client closes */
		;
	_exit(0);
}

static void connect_with(unsigned int nfds)
{
	char dir[] = "/tmp/t_rdpm.XXXXXX", path[64];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rdpm_client *c = NULL;
	unsigned int before, during;
	int ls, status, err;
	pid_t pid;

	CHECK(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof(path), "%s/rdpm.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECK(ls >= 0 && !bind(ls, (struct sockaddr *)&sa, sizeof(sa)) && !listen(ls, 1),
	      "listen on %s", path);
	pid = fork();
	if (pid == 0)
		fake_rdpmd(ls, nfds);
	close(ls);
	before = open_fds();
	err = rdpm_connect(&c, path);
	CHECK(!err, "rdpm_connect with %u fds attached to HELLO's reply: %d %s", nfds, err,
	      devmem_last_error());
	during = open_fds();
	/* the connection's socket, and one passed fd at most */
	CHECK(during <= before + 2, "%u fds passed: %u fds open after rdpm_connect, %u before",
	      nfds, during, before);
	if (!err)
		rdpm_close(c);
	CHECK(open_fds() == before, "%u fds passed: %u fds open after rdpm_close, %u before",
	      nfds, open_fds(), before);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status),
	      "the fake rdpmd (status 0x%x)", status);
	unlink(path);
	rmdir(dir);
}

/* rdpm_recv_fds on a SEQPACKET pair: 3 fds sent, @max taken. */
static void wire_bounds(unsigned int max)
{
	int sp[2], in[3], out[3] = { -1, -1, -1 }, flags;
	char msg[8] = "request", buf[8], small[4];
	struct iovec iov = { msg, sizeof(msg) }, riov = { buf, sizeof(buf) };
	unsigned int before, nfds, want = max < 3 ? max : 3;
	ssize_t n;

	CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), "socketpair");
	for (int i = 0; i < 3; i++)
		in[i] = memfd_create("wire", 0);
	CHECK(rdpm_send_fds(sp[0], &iov, 1, in, 3, 0) == sizeof(msg), "send 3 fds");
	before = open_fds();
	n = rdpm_recv_fds(sp[1], &riov, 1, out, max, &nfds, &flags, 0);
	CHECK(n == sizeof(msg) && !memcmp(buf, msg, n), "the bytes (%zd)", n);
	CHECK(nfds == want, "max %u: %u fds taken, want %u", max, nfds, want);
	CHECK(open_fds() == before + want, "max %u: %u fds opened, want %u", max,
	      open_fds() - before, want);
	CHECK(!!(flags & MSG_CTRUNC) == (max < 3), "max %u: msg_flags 0x%x", max, flags);
	for (unsigned int i = 0; i < nfds; i++) {
		CHECK(fcntl(out[i], F_GETFD) == FD_CLOEXEC, "fd %u close-on-exec", i);
		close(out[i]);
	}
	/* a message longer than the buffer: MSG_TRUNC, its fd still taken */
	CHECK(rdpm_send_fds(sp[0], &iov, 1, in, 1, 0) == sizeof(msg), "send 1 fd");
	riov = (struct iovec){ small, sizeof(small) };
	n = rdpm_recv_fds(sp[1], &riov, 1, out, 1, &nfds, &flags, 0);
	CHECK(n == sizeof(small) && (flags & MSG_TRUNC) && nfds == 1, "truncated: %zd 0x%x %u",
	      n, flags, nfds);
	if (nfds)
		close(out[0]);
	CHECK(rdpm_send_fds(sp[0], &iov, 1, in, RDPM_MSG_MAX_FDS + 1, 0) < 0 && errno == EINVAL,
	      "more fds than a message carries");
	for (int i = 0; i < 3; i++)
		close(in[i]);
	close(sp[0]);
	close(sp[1]);
}

int main(void)
{
	wire_bounds(0);
	wire_bounds(1);
	wire_bounds(3);
	wire_bounds(RDPM_MSG_MAX_FDS);
	connect_with(0);
	connect_with(1);
	connect_with(2);
	connect_with(8);
	return check_done("t_rdpm");
}
