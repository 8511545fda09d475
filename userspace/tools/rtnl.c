// SPDX-License-Identifier: GPL-2.0
/* rtnetlink requests of the devtcp tools: one request, its ACK or extack. */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rtnl.h"

struct nlmsghdr *rtnl_link_request(char *buf, int type, int flags, int ifindex)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifm;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = time(NULL);
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	return nlh;
}

/* The kernel's extack message of an error reply, or NULL. */
static const char *extack_msg(const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	unsigned int off = sizeof(*err);
	struct nlattr *attr;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NULL;
	/* Without NLM_F_CAPPED the request is echoed before the TLVs. */
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += mnl_nlmsg_get_payload_len(&err->msg);
	mnl_attr_for_each_payload((void *)((char *)err + off),
				  mnl_nlmsg_get_payload_len(nlh) - off) {
		if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG)
			return mnl_attr_get_str(attr);
	}
	return NULL;
}

int rtnl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh, const char *prog,
	      const char *what, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int seq = nlh->nlmsg_seq;
	const struct nlmsgerr *err;
	const char *msg;
	int len;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		len = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (len < 0)
			return -errno;
		nlh = (struct nlmsghdr *)buf;
		if (!mnl_nlmsg_ok(nlh, len) || nlh->nlmsg_seq != seq)
			return -EPROTO;
		if (nlh->nlmsg_type == NLMSG_ERROR)
			break;
		if (!cb || mnl_cb_run(buf, len, seq, mnl_socket_get_portid(nl), cb, data) < 0)
			return -EPROTO;
	}
	err = mnl_nlmsg_get_payload(nlh);
	if (!err->error)
		return 0;
	msg = extack_msg(nlh);
	fprintf(stderr, "%s: %s: %s%s%s\n", prog, what, strerror(-err->error),
		msg ? ": " : "", msg ? msg : "");
	return err->error;
}
