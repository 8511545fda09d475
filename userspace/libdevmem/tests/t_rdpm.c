// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * rdpm_connect() against a fake rdpmd that attaches more fds to its HELLO
 * reply than the protocol ever passes (one): the client opens at most one
 * of them, and rdpm_close() leaves no fd of the connection behind.
 */
#define _GNU_SOURCE
#include <dirent.h>
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

int main(void)
{
	connect_with(0);
	connect_with(1);
	connect_with(2);
	connect_with(8);
	return check_done("t_rdpm");
}
