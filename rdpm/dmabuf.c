// SPDX-License-Identifier: GPL-2.0
/*
 * What rdpmd takes for a client's dma-buf: judged only from what the kernel
 * keeps of the open file itself, never from its file system: fstat or
 * fstatfs of a FUSE file waits for the FUSE server (which the client may
 * be), and so would the event loop. A dma-buf's /proc/self/fd link is
 * "/dmabuf:NAME" (the dma-buf file system's d_dname) and its fdinfo has
 * the exporter (exp_name); neither reads the file. The exporter must be
 * one the configuration lists (dmabuf_exporters): a driver's dma-buf that
 * the NIC should not write into is refused by name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdpmd.h"

int rdpm_dmabuf_info_check(const char *info, const struct rdpm_namelist *allowed, char *why,
			   size_t len)
{
	const char *p = strstr(info, "\nexp_name:\t");
	char name[RDPM_CONF_NAME];
	size_t n;

	if (!p) {
		snprintf(why, len, "the fd attached is not a dma-buf (no exporter in its fdinfo)");
		return -EBADF;
	}
	p += strlen("\nexp_name:\t");
	n = strcspn(p, "\n");
	if (n < sizeof(name)) {
		memcpy(name, p, n);
		name[n] = 0;
	}
	if (n >= sizeof(name) || !rdpm_namelist_has(allowed, name)) {
		snprintf(why, len, "dma-bufs of exporter \"%.*s\" are not taken (dmabuf_exporters "
			 "of [global])", (int)(n < 32 ? n : 32), p);
		return -EPERM;
	}
	return 0;
}

/* What the fd of /proc link @link is, in words: a path is the host's
 * business, not the client's, and a file name may hold any byte. Never
 * fstat(): on a stalled FUSE mount it blocks. */
static const char *fd_kind(const char *link)
{
	if (link[0] == '/')
		return "a file";
	if (!strncmp(link, "socket:", 7))
		return "a socket";
	if (!strncmp(link, "pipe:", 5))
		return "a pipe";
	if (!strncmp(link, "anon_inode:", 11))
		return "an anonymous inode";
	return "no file";
}

int rdpm_dmabuf_check(int fd, char *why, size_t len)
{
	char path[64], link[128], info[2048];
	ssize_t n;
	int f, flags, err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		snprintf(why, len, "cannot look at the fd attached (%s)", strerror(errno));
		return errno == EMFILE || errno == ENFILE ? -errno : -EBADF;
	}
	link[n] = 0;
	if (strncmp(link, "/dmabuf:", 8)) {
		snprintf(why, len, "the fd attached is not a dma-buf (it is %s)", fd_kind(link));
		return -EBADF;
	}
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0) {
		snprintf(why, len, "cannot look at the fd attached (%s)", strerror(errno));
		return errno == EMFILE || errno == ENFILE ? -errno : -EBADF;
	}
	n = read(f, info, sizeof(info) - 1);
	close(f);
	info[n > 0 ? n : 0] = 0;
	err = rdpm_dmabuf_info_check(info, &rdpmd.conf.dmabuf_exporters, why, len);
	if (err)
		return err;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) != O_RDWR) {
		snprintf(why, len, "the dma-buf fd attached is not open for reading and writing "
			 "(O_RDWR): the NIC writes into it");
		return -EACCES;
	}
	return 0;
}
