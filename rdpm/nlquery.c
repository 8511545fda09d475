// SPDX-License-Identifier: GPL-2.0
/*
 * Netlink dumps rdpmd's ownership checks read (libmnl): a socket's record
 * by cookie (NETLINK_SOCK_DIAG) and an interface's addresses (rtnetlink).
 * Each opens its own socket: they run at a STEER and once a second per
 * socket-proved rule, far from any hot path.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/inet_diag.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "nlquery.h"

/* Sends @req (a dump request) on a new @proto socket and runs @cb on each
 * answer. 0 or -errno. */
static int dump(int proto, struct nlmsghdr *req, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open(proto);
	unsigned int portid;
	ssize_t n;
	int ret;

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID)) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	req->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req->nlmsg_seq = (uint32_t)time(NULL);
	if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
		errno = 0;
		ret = mnl_cb_run(buf, (size_t)n, req->nlmsg_seq, portid, cb, data);
		if (ret < 0) {		/* an error answer sets errno */
			ret = -(errno ? errno : EPROTO);
			break;
		}
		if (ret == MNL_CB_STOP) {
			ret = 0;
			break;
		}
	}
out:
	mnl_socket_close(nl);
	return ret;
}

struct diag_want {
	uint64_t cookie;
	struct rdpm_diag *d;
	int found;
};

static int diag_attr_cb(const struct nlattr *a, void *data)
{
	struct rdpm_diag *d = data;

	if (mnl_attr_get_type(a) == INET_DIAG_SKV6ONLY && mnl_attr_get_payload_len(a) == 1)
		d->v6only = mnl_attr_get_u8(a);
	return MNL_CB_OK;
}

static int diag_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct inet_diag_msg *m = mnl_nlmsg_get_payload(nlh);
	struct diag_want *w = data;
	size_t n;

	if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(*m))
		return MNL_CB_ERROR;
	if (((uint64_t)m->id.idiag_cookie[1] << 32 | m->id.idiag_cookie[0]) != w->cookie)
		return MNL_CB_OK;
	n = m->idiag_family == AF_INET6 ? 16 : 4;
	*w->d = (struct rdpm_diag){ .family = m->idiag_family, .state = m->idiag_state,
				    .lport = ntohs(m->id.idiag_sport),
				    .pport = ntohs(m->id.idiag_dport), .ifindex = m->id.idiag_if,
				    .uid = m->idiag_uid, .inode = m->idiag_inode,
				    .v6only = -1 };
	memcpy(w->d->local, m->id.idiag_src, n);
	memcpy(w->d->peer, m->id.idiag_dst, n);
	w->found = 1;
	return mnl_attr_parse(nlh, sizeof(*m), diag_attr_cb, w->d);
}

int rdpm_diag_find(int family, uint16_t port, uint64_t cookie, struct rdpm_diag *d)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct inet_diag_req_v2 *r;
	/* The kernel filters by local port: "sport == port", else reject. */
	struct inet_diag_bc_op bc[2] = {
		{ .code = INET_DIAG_BC_S_EQ, .yes = sizeof(bc), .no = sizeof(bc) + 4 },
		{ .no = port },
	};
	struct diag_want w = { .cookie = cookie, .d = d };
	int err;

	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	r = mnl_nlmsg_put_extra_header(nlh, sizeof(*r));
	r->sdiag_family = (uint8_t)family;
	r->sdiag_protocol = IPPROTO_TCP;
	r->idiag_states = ~0u;
	mnl_attr_put(nlh, INET_DIAG_REQ_BYTECODE, sizeof(bc), bc);
	err = dump(NETLINK_SOCK_DIAG, nlh, diag_cb, &w);
	return err ? err : w.found;
}

struct addr_want {
	int ifindex, family;
	const uint8_t *addr;
	int found;
};

static int addr_attr_cb(const struct nlattr *a, void *data)
{
	struct addr_want *w = data;
	size_t n = w->family == AF_INET6 ? 16 : 4;
	uint16_t type = mnl_attr_get_type(a);

	/* IFA_LOCAL is the local end of a point-to-point IPv4 address,
	 * IFA_ADDRESS the peer there; elsewhere both are the local one. */
	if ((type == IFA_LOCAL || (type == IFA_ADDRESS && w->family == AF_INET6)) &&
	    mnl_attr_get_payload_len(a) == n && !memcmp(mnl_attr_get_payload(a), w->addr, n))
		w->found = 1;
	return MNL_CB_OK;
}

static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	struct addr_want *w = data;

	if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(*ifa))
		return MNL_CB_ERROR;
	if ((int)ifa->ifa_index != w->ifindex || ifa->ifa_family != w->family ||
	    (ifa->ifa_flags & IFA_F_TENTATIVE))
		return MNL_CB_OK;
	return mnl_attr_parse(nlh, sizeof(*ifa), addr_attr_cb, w);
}

int rdpm_if_has_addr(int ifindex, int family, const uint8_t *addr)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct addr_want w = { .ifindex = ifindex, .family = family, .addr = addr };
	struct ifaddrmsg *ifa;
	int err;

	nlh->nlmsg_type = RTM_GETADDR;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = (uint8_t)family;
	err = dump(NETLINK_ROUTE, nlh, addr_cb, &w);
	return err ? err : w.found;
}
