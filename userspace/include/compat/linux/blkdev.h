/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * <linux/blkdev.h> of the kernel's uapi (6.12+), which the forky liburing
 * headers include: the host's (bookworm) linux-libc-dev is older. Found with
 * -idirafter, so a host that has the real one uses it.
 */
#ifndef _UAPI_LINUX_BLKDEV_H
#define _UAPI_LINUX_BLKDEV_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define BLOCK_URING_CMD_DISCARD			_IO(0x12, 0)

#endif
