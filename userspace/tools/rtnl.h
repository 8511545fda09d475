/* SPDX-License-Identifier: GPL-2.0 */
/* rtnetlink requests of the devtcp tools (libmnl). */
#ifndef DEVTCP_TOOLS_RTNL_H
#define DEVTCP_TOOLS_RTNL_H

#include <libmnl/libmnl.h>

/* An RTM_*LINK request for @ifindex (0: by name) into @buf. */
struct nlmsghdr *rtnl_link_request(char *buf, int type, int flags, int ifindex);

/*
 * Sends @nlh and reads the replies up to the ACK, passing data messages to
 * @cb. Returns 0 or a negative errno; a refusal is printed as
 * "PROG: WHAT: strerror: extack message".
 */
int rtnl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh, const char *prog,
	      const char *what, mnl_cb_t cb, void *data);

#endif
