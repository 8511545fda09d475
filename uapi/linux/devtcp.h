/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * devtcp link attributes (IFLA_INFO_DATA of link kind "devtcp").
 *
 * IFLA_DEVTCP_PEER carries a struct ifinfomsg followed by IFLA_* attributes
 * for the other end of the pair (name, netns, queue counts), as veth's
 * VETH_INFO_PEER does. Without it the peer is named "devtcp%d" in the same
 * namespace with the same queue counts.
 */
#ifndef _UAPI_LINUX_DEVTCP_H
#define _UAPI_LINUX_DEVTCP_H

enum {
	IFLA_DEVTCP_UNSPEC,
	IFLA_DEVTCP_PEER,
	__IFLA_DEVTCP_MAX
};

#define IFLA_DEVTCP_MAX (__IFLA_DEVTCP_MAX - 1)

#endif /* _UAPI_LINUX_DEVTCP_H */
