// SPDX-License-Identifier: GPL-2.0
/*
 * What rdpmd's ownership checks ask the kernel (libmnl): one socket's
 * record, looked up by its tuple and cookie (NETLINK_SOCK_DIAG, an exact
 * request, no dump; the re-check of socket-proved rules asks it every
 * second, on one netlink socket kept open), and an interface's addresses
 * (rtnetlink, a dump on a socket of its own, at STEER only).
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/inet_diag.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
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

/* rdpmd's sock_diag socket, opened at the first use and again after an
 * error (a reply not read to its end must not answer the next request). */
static struct mnl_socket *diag_nl;
static uint32_t diag_seq;

static void diag_close(void)
{
	if (diag_nl)
		mnl_socket_close(diag_nl);
	diag_nl = NULL;
}

static int diag_open(void)
{
	int fd;

	if (diag_nl)
		return 0;
	diag_nl = mnl_socket_open2(NETLINK_SOCK_DIAG, SOCK_CLOEXEC);
	if (!diag_nl)
		return -errno;
	fd = mnl_socket_get_fd(diag_nl);
	/* The kernel answers while sendto runs: a read never needs to wait. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) ||
	    mnl_socket_bind(diag_nl, 0, MNL_SOCKET_AUTOPID)) {
		int err = -errno;

		diag_close();
		return err;
	}
	return 0;
}

int rdpm_diag_find(const struct rdpm_diag_key *k, struct rdpm_diag *d)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct diag_want w = { .cookie = k->cookie, .d = d };
	struct inet_diag_req_v2 *r;
	size_t n = k->family == AF_INET6 ? 16 : 4;
	ssize_t got;
	int ret;

	ret = diag_open();
	if (ret)
		return ret;
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	/* Not a dump: the kernel looks the tuple up (as a packet would find
	 * the socket) and answers only if that socket has the cookie; the
	 * ack ends the answer. */
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = ++diag_seq;
	r = mnl_nlmsg_put_extra_header(nlh, sizeof(*r));
	r->sdiag_family = (uint8_t)k->family;
	r->sdiag_protocol = IPPROTO_TCP;
	r->idiag_states = ~0u;
	r->id.idiag_sport = htons(k->lport);
	r->id.idiag_dport = htons(k->pport);
	memcpy(r->id.idiag_src, k->local, n);
	memcpy(r->id.idiag_dst, k->peer, n);
	r->id.idiag_if = k->ifindex;
	r->id.idiag_cookie[0] = (uint32_t)k->cookie;
	r->id.idiag_cookie[1] = (uint32_t)(k->cookie >> 32);
	if (mnl_socket_sendto(diag_nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		diag_close();
		return ret;
	}
	for (;;) {
		got = mnl_socket_recvfrom(diag_nl, buf, sizeof(buf));
		if (got <= 0) {
			ret = got < 0 ? -errno : -EIO;
			break;
		}
		errno = 0;
		ret = mnl_cb_run(buf, (size_t)got, diag_seq, mnl_socket_get_portid(diag_nl),
				 diag_cb, &w);
		if (ret < 0) {		/* an error answer sets errno */
			ret = -(errno ? errno : EPROTO);
			break;
		}
		if (ret == MNL_CB_STOP)
			return w.found;
	}
	/* ENOENT: no socket has the tuple, or the one that has it another
	 * cookie. The answer was read to its end. */
	if (ret == -ENOENT)
		return 0;
	diag_close();
	return ret;
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
