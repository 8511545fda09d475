// SPDX-License-Identifier: GPL-2.0
/* rdpmd's client code without a daemon or hardware (harness.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

struct rdpmd rdpmd;
static char conf_path[64];

static void die(const char *what)
{
	fprintf(stderr, "harness: %s\n", what);
	exit(1);
}

void harness_init(const char *conf)
{
	static bool closer;
	char err[256];
	int fd;

	if (rdpmd.epfd > 0)
		close(rdpmd.epfd);
	memset(&rdpmd, 0, sizeof(rdpmd));
	/* RELOAD reads the file again. */
	fd = memfd_create("rdpm.conf", 0);
	if (fd < 0 || write(fd, conf, strlen(conf)) != (ssize_t)strlen(conf))
		die("memfd of the configuration");
	snprintf(conf_path, sizeof(conf_path), "/proc/self/fd/%d", fd);
	rdpmd.conf_path = conf_path;
	if (rdpm_conf_parse(conf, &rdpmd.conf, err, sizeof(err)))
		die(err);
	rdpmd.ops = &fake_nic_ops;
	rdpmd.lfd = -1;
	rdpmd.epfd = epoll_create1(EPOLL_CLOEXEC);
	for (unsigned int i = 0; i < rdpmd.conf.nnics; i++) {
		struct rdpm_nic *n = &rdpmd.nics[i];

		n->conf = rdpmd.conf.nics[i];
		if (i)
			continue;
		/* Present: a token no code dereferences (only the fake layer sees it). */
		n->nic = (struct devmem_nic *)&rdpmd.nics[i];
		n->up = true;
		/* lo's: a socket on 127.0.0.1 proves a flow on it (STEER). */
		n->ifindex = 1;
		n->queues = 8;
		n->first = 8 - n->conf.reserve;
	}
	rdpmd.nnics = rdpmd.conf.nnics;
	if (rdpmd.epfd < 0 || rdpmd_clients_init())
		die("epoll or /dev/null");
	if (!closer && rdpm_closer_start(RDPM_CLOSER_DIRECT))
		die("closer");
	closer = true;
}

int harness_client(uid_t uid)
{
	struct ucred cr = { .pid = getpid(), .uid = uid, .gid = uid };
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -1;
	if (fcntl(sv[1], F_SETFL, O_NONBLOCK) || !rdpmd_client_add(sv[1], &cr)) {
		close(sv[0]);
		return -1;
	}
	return sv[0];
}

void harness_run(void)
{
	struct epoll_event evs[16];
	int n;

	do {
		n = epoll_wait(rdpmd.epfd, evs, 16, 0);
		for (int i = 0; i < n; i++)
			rdpmd_client_event(evs[i].data.ptr, evs[i].events);
		rdpmd_clients_tick();
		rdpmd_clients_reap();
	} while (n > 0);
}

int harness_recv(int fd, void *buf, size_t len, int *fd_out)
{
	struct iovec iov = { buf, len };
	int fds[4], flags;
	unsigned int nfds;
	ssize_t n = rdpm_recv_fds(fd, &iov, 1, fds, 4, &nfds, &flags, MSG_DONTWAIT);

	if (fd_out)
		*fd_out = -1;
	for (unsigned int i = 0; i < nfds; i++) {
		if (fd_out && *fd_out < 0)
			*fd_out = fds[i];
		else
			close(fds[i]);
	}
	return n > 0 ? (int)n : 0;
}

void harness_reset(void)
{
	rdpmd_clients_close_all();
	rdpmd_clients_init();
}

unsigned int harness_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned int n = 0;

	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}
