// SPDX-License-Identifier: LGPL-2.1-or-later
/* RDPM messages with file descriptors: rdpm_wire.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rdpm_wire.h"

union rdpm_ctl {
	char buf[CMSG_SPACE(RDPM_MSG_MAX_FDS * sizeof(int))];
	struct cmsghdr align;
};

ssize_t rdpm_send_fds(int s, const struct iovec *iov, int niov, const int *fds,
		      unsigned int nfds, int flags)
{
	union rdpm_ctl ctl;
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = niov };
	struct cmsghdr *cm;

	if (nfds > RDPM_MSG_MAX_FDS) {
		errno = EINVAL;
		return -1;
	}
	if (nfds) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	return sendmsg(s, &mh, flags | MSG_NOSIGNAL);
}

ssize_t rdpm_recv_fds(int s, struct iovec *iov, int niov, int *fds, unsigned int max_fds,
		      unsigned int *nfds, int *msg_flags, int flags)
{
	union rdpm_ctl ctl;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = niov, .msg_control = ctl.buf };
	ssize_t n;

	if (max_fds > RDPM_MSG_MAX_FDS)
		max_fds = RDPM_MSG_MAX_FDS;
	/* CMSG_LEN, not CMSG_SPACE: the kernel installs as many fds as fit
	 * after the header, and CMSG_SPACE's padding would fit one more. */
	mh.msg_controllen = max_fds ? CMSG_LEN(max_fds * sizeof(int)) : 0;
	if (!max_fds)
		mh.msg_control = NULL;
	n = recvmsg(s, &mh, flags | MSG_CMSG_CLOEXEC);
	*nfds = 0;
	*msg_flags = n < 0 ? 0 : mh.msg_flags;
	for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*nfds < max_fds)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return n;
}
