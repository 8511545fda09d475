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
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
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

/* What the fd of /proc link @link is, by its link alone: a path is the
 * host's business, not the client's, and a file name may hold any byte.
 * Never fstat(): on a stalled FUSE mount it blocks. A dma-buf's link is
 * "/dmabuf:NAME", which a path can spell too: rdpm_fd_class looks further. */
static enum rdpm_fd_class link_class(const char *link)
{
	if (!strncmp(link, "socket:", 7))
		return RDPM_FD_SOCKET;
	if (link[0] == '/')
		return RDPM_FD_FILE;
	if (!strncmp(link, "pipe:", 5))
		return RDPM_FD_PIPE;
	if (!strncmp(link, "anon_inode:", 11))
		return RDPM_FD_ANON;
	return RDPM_FD_NONE;
}

const char *rdpm_fd_class_name(unsigned int class)
{
	static const char *const names[] = {
		[RDPM_FD_DMABUF] = "a dma-buf", [RDPM_FD_SOCKET] = "a socket",
		[RDPM_FD_OTHER_SOCKET] = "a socket other than TCP/IP",
		[RDPM_FD_FILE] = "a file", [RDPM_FD_PIPE] = "a pipe",
		[RDPM_FD_ANON] = "an anonymous inode", [RDPM_FD_NONE] = "no file",
	};

	return class < sizeof(names) / sizeof(names[0]) ? names[class] : "no file";
}

/* @fd's fdinfo in @info (NUL-terminated); -errno. */
static int fd_info(int fd, char *info, size_t len)
{
	char path[64];
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	n = read(f, info, len - 1);
	close(f);
	info[n > 0 ? n : 0] = 0;
	return 0;
}

enum rdpm_fd_class rdpm_fd_class(int fd)
{
	char path[64], link[128], info[2048];
	int domain = 0, type = 0;
	socklen_t len = sizeof(int);
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return RDPM_FD_NONE;
	link[n] = 0;
	/* Only the dma-buf file system's files have an exporter. */
	if (!strncmp(link, "/dmabuf:", 8) && !fd_info(fd, info, sizeof(info)) &&
	    strstr(info, "\nexp_name:\t"))
		return RDPM_FD_DMABUF;
	if (link_class(link) != RDPM_FD_SOCKET)
		return link_class(link);
	/* Only a TCP/IP stream socket: one of another family may hold files
	 * in its queue (AF_UNIX) whose release the client controls. */
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    (domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM)
		return RDPM_FD_OTHER_SOCKET;
	return RDPM_FD_SOCKET;
}

int rdpm_dmabuf_check(int fd, char *why, size_t len)
{
	char path[64], link[128], info[2048];
	ssize_t n;
	int flags, err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		snprintf(why, len, "cannot look at the fd attached (%s)", strerror(errno));
		return errno == EMFILE || errno == ENFILE ? -errno : -EBADF;
	}
	link[n] = 0;
	if (strncmp(link, "/dmabuf:", 8)) {
		snprintf(why, len, "the fd attached is not a dma-buf (it is %s)",
			 rdpm_fd_class_name(link_class(link)));
		return -EBADF;
	}
	err = fd_info(fd, info, sizeof(info));
	if (err) {
		snprintf(why, len, "cannot look at the fd attached (%s)", strerror(-err));
		return err == -EMFILE || err == -ENFILE ? err : -EBADF;
	}
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
