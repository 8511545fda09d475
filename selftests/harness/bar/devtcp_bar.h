/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The test exporter's interface (selftests only, never installed): an
 * ioctl on /dev/devtcp-bar that exports a range of the ivshmem device's
 * BAR 2 as a dma-buf.
 */
#ifndef _DEVTCP_BAR_H
#define _DEVTCP_BAR_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct devtcp_bar_export {
	__u64 offset;	/* in: into BAR 2, page aligned */
	__u64 size;	/* in: bytes, page aligned, 0 < size <= BAR size - offset */
	__s32 fd;	/* out: the dma-buf (O_RDWR | O_CLOEXEC) */
	__u32 pad;
};

#define DEVTCP_BAR_EXPORT	_IOWR('d', 0x42, struct devtcp_bar_export)

#endif
