/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RDPM messages with file descriptors (SCM_RIGHTS), for rdpmd, its closer
 * helper, libdevmem's client and their tests: one sendmsg or recvmsg each.
 * Compiled into each user (hidden in libdevmem), never exported.
 */
#ifndef DEVTCP_RDPM_WIRE_H
#define DEVTCP_RDPM_WIRE_H

#include <sys/types.h>

struct iovec;

/* The most fds one SCM_RIGHTS message can carry (the kernel's SCM_MAX_FD). */
#define RDPM_MSG_MAX_FDS	253

/*
 * sendmsg() of @iov with @nfds fds of @fds attached (none if 0), with
 * MSG_NOSIGNAL added to @flags. sendmsg's result; -1 with EINVAL when
 * @nfds exceeds RDPM_MSG_MAX_FDS.
 */
ssize_t rdpm_send_fds(int s, const struct iovec *iov, int niov, const int *fds,
		      unsigned int nfds, int flags);

/*
 * recvmsg() of @s into @iov with MSG_CMSG_CLOEXEC added to @flags: the fds
 * passed in @fds, *@nfds of them. The kernel installs at most @max_fds
 * (clamped to RDPM_MSG_MAX_FDS), dropping the rest unopened and setting
 * MSG_CTRUNC; any beyond that are closed. recvmsg's msg_flags (MSG_TRUNC,
 * MSG_CTRUNC) in *@msg_flags, 0 on errors.
 */
ssize_t rdpm_recv_fds(int s, struct iovec *iov, int niov, int *fds, unsigned int max_fds,
		      unsigned int *nfds, int *msg_flags, int flags);

#endif
