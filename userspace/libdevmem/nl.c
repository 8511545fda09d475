// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Netlink with libmnl: one socket per user (a NIC handle, a binding, a
 * tool), generic netlink family ids resolved by name, requests acked,
 * dumps followed to NLMSG_DONE, and kernel errors turned into devmem_fail()
 * messages that keep the extack text and the attribute it points at.
 * Generic netlink for the library; rtnetlink link requests for the tools.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The kernel sends dump batches of at most 32 KiB. Requests: an attribute
 * holds at most 64 KiB (RSS tables of 2048 entries are 8 KiB). */
#define NL_RECV_SIZE	32768
#define NL_SEND_SIZE	(65536 + 4096)

struct devmem_nl {
	struct mnl_socket *sock;
	uint32_t portid;
	uint32_t seq;
	size_t hdr_len;		/* the family header before the attributes */
	struct devmem_nl_ext ext;
	uint8_t send[NL_SEND_SIZE];
	uint8_t recv[NL_RECV_SIZE];
};

static int nl_open(struct devmem_nl **out, int bus, const char *name, size_t hdr_len,
		   const char *what)
{
	struct devmem_nl *nl = calloc(1, sizeof(*nl));
	int one = 1, err;

	if (!nl)
		return devmem_fail(-ENOMEM, "%s: no memory for a netlink socket", what);
	nl->hdr_len = hdr_len;
	nl->sock = mnl_socket_open(bus);
	if (!nl->sock) {
		err = -errno;
		free(nl);
		return devmem_fail_errno(err, "%s: %s socket", what, name);
	}
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		devmem_nl_close(nl);
		return devmem_fail_errno(err, "%s: bind %s socket", what, name);
	}
	/* Error texts and offsets, without the echoed request. Kernels without
	 * them still work; the messages are only less precise. */
	mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
	nl->portid = mnl_socket_get_portid(nl->sock);
	nl->seq = 1;
	*out = nl;
	return 0;
}

int devmem_nl_open(struct devmem_nl **out, const char *what)
{
	return nl_open(out, NETLINK_GENERIC, "generic netlink", sizeof(struct genlmsghdr), what);
}

/* Link requests only: their attributes follow a struct ifinfomsg. */
DEVMEM_EXPORT int devmem_nl_open_route(struct devmem_nl **out, const char *what)
{
	return nl_open(out, NETLINK_ROUTE, "rtnetlink", sizeof(struct ifinfomsg), what);
}

DEVMEM_EXPORT void devmem_nl_close(struct devmem_nl *nl)
{
	if (!nl)
		return;
	if (nl->sock)
		mnl_socket_close(nl->sock);
	free(nl);
}

const struct devmem_nl_ext *devmem_nl_ext(const struct devmem_nl *nl)
{
	return &nl->ext;
}

/* A request of @type with an extra header of @extra bytes, zeroed. */
static struct nlmsghdr *msg_start(struct devmem_nl *nl, uint16_t type, uint16_t flags,
				  size_t extra)
{
	struct nlmsghdr *nlh;

	memset(nl->send, 0, sizeof(struct nlmsghdr) + extra);
	nlh = mnl_nlmsg_put_header(nl->send);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = nl->seq++;
	mnl_nlmsg_put_extra_header(nlh, extra);
	return nlh;
}

struct nlmsghdr *devmem_nl_msg(struct devmem_nl *nl, uint16_t family, uint8_t cmd,
			       uint8_t version, uint16_t flags)
{
	struct nlmsghdr *nlh = msg_start(nl, family, flags, sizeof(struct genlmsghdr));
	struct genlmsghdr *genl = mnl_nlmsg_get_payload(nlh);

	genl->cmd = cmd;
	genl->version = version;
	return nlh;
}

DEVMEM_EXPORT struct nlmsghdr *devmem_nl_link_msg(struct devmem_nl *nl, uint16_t type,
						  uint16_t flags, int ifindex)
{
	struct nlmsghdr *nlh = msg_start(nl, type, flags, sizeof(struct ifinfomsg));
	struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);

	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	return nlh;
}

/*
 * Finds the attribute at byte offset @off of request @req (top level or one
 * nest down) for messages like "the kernel refused queue-id 9".
 */
static void locate_bad_attr(const struct nlmsghdr *req, size_t hdr_len, uint32_t off,
			    struct devmem_nl_ext *ext)
{
	const struct nlattr *attr, *inner;
	const char *base = (const char *)req;

	mnl_attr_for_each(attr, req, hdr_len) {
		uint32_t at = (const char *)attr - base;

		if (at == off) {
			ext->bad_type = mnl_attr_get_type(attr);
			goto value;
		}
		if (off < at || off >= at + attr->nla_len)
			continue;
		mnl_attr_for_each_nested(inner, attr) {
			if ((uint32_t)((const char *)inner - base) != off)
				continue;
			ext->bad_nest = mnl_attr_get_type(attr);
			ext->bad_type = mnl_attr_get_type(inner);
			attr = inner;
			goto value;
		}
		return;
	}
	return;
value:
	ext->has_bad_attr = true;
	if (mnl_attr_get_payload_len(attr) == sizeof(uint32_t))
		ext->bad_value = mnl_attr_get_u32(attr);
	else if (mnl_attr_get_payload_len(attr) == sizeof(uint8_t))
		ext->bad_value = *(const uint8_t *)mnl_attr_get_payload(attr);
}

static void parse_ext(const struct nlmsghdr *nlh, const struct nlmsghdr *req, size_t hdr_len,
		      struct devmem_nl_ext *ext)
{
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	size_t off = sizeof(*err);
	const struct nlattr *attr;

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (nlh->nlmsg_type == NLMSG_DONE)
		off = sizeof(int);
	else if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += mnl_nlmsg_get_payload_len(&err->msg);
	if (off > mnl_nlmsg_get_payload_len(nlh))
		return;
	mnl_attr_for_each_payload((const void *)((const char *)mnl_nlmsg_get_payload(nlh) + off),
				  mnl_nlmsg_get_payload_len(nlh) - off) {
		switch (mnl_attr_get_type(attr)) {
		case NLMSGERR_ATTR_MSG:
			snprintf(ext->msg, sizeof(ext->msg), "%s", mnl_attr_get_str(attr));
			break;
		case NLMSGERR_ATTR_OFFS:
			ext->bad_off = mnl_attr_get_u32(attr);
			locate_bad_attr(req, hdr_len, ext->bad_off, ext);
			break;
		}
	}
}

void devmem_nl_parse_ext(const struct nlmsghdr *nlh, const struct nlmsghdr *req,
			 struct devmem_nl_ext *ext)
{
	parse_ext(nlh, req, sizeof(struct genlmsghdr), ext);
}

/* "WHAT: strerror: extack (attribute N at offset M)" */
int devmem_nl_fail(int err, const struct devmem_nl_ext *ext, const char *what)
{
	char attr[96] = "";

	if (ext->bad_off && !ext->has_bad_attr) {
		snprintf(attr, sizeof(attr), " (the kernel refused the attribute at offset %u)",
			 ext->bad_off);
	} else if (ext->has_bad_attr) {
		if (ext->bad_nest)
			snprintf(attr, sizeof(attr), " (the kernel refused attribute %u in nest %u, value %u)",
				 ext->bad_type, ext->bad_nest, ext->bad_value);
		else
			snprintf(attr, sizeof(attr), " (the kernel refused attribute %u, value %u)",
				 ext->bad_type, ext->bad_value);
	}
	return devmem_fail(err, "%s: %s%s%s%s", what, strerror(-err), ext->msg[0] ? ": " : "",
			   ext->msg, attr);
}

DEVMEM_EXPORT int devmem_nl_request(struct devmem_nl *nl, struct nlmsghdr *req, devmem_nl_cb cb,
				    void *data, const char *what)
{
	bool dump = req->nlmsg_flags & NLM_F_DUMP;
	uint32_t seq = req->nlmsg_seq;
	int err = 0, cb_err = 0;

	memset(&nl->ext, 0, sizeof(nl->ext));
	if (mnl_socket_sendto(nl->sock, req, req->nlmsg_len) < 0)
		return devmem_fail_errno(-errno, "%s: netlink send", what);
	for (;;) {
		int len = mnl_socket_recvfrom(nl->sock, nl->recv, sizeof(nl->recv));
		const struct nlmsghdr *nlh = (const struct nlmsghdr *)nl->recv;

		if (len < 0)
			return devmem_fail_errno(-errno, "%s: netlink receive", what);
		for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
			/* Stale replies of an earlier, failed request. */
			if (nlh->nlmsg_seq != seq || nlh->nlmsg_pid != nl->portid)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

				if (!e->error)
					return cb_err;
				err = e->error;
				parse_ext(nlh, req, nl->hdr_len, &nl->ext);
				nl->ext.err = err;
				return devmem_nl_fail(err, &nl->ext, what);
			}
			if (nlh->nlmsg_type == NLMSG_DONE) {
				if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int))
					err = *(const int *)mnl_nlmsg_get_payload(nlh);
				if (err < 0) {
					parse_ext(nlh, req, nl->hdr_len, &nl->ext);
					nl->ext.err = err;
					return devmem_nl_fail(err, &nl->ext, what);
				}
				/* A dump acks with DONE; the explicit ack may follow. */
				if (dump)
					return cb_err;
				continue;
			}
			if (nlh->nlmsg_type < NLMSG_MIN_TYPE)
				continue;
			/* Keep reading to the ack after a callback error so the
			 * socket stays in step for the next request. */
			if (cb && !cb_err)
				cb_err = cb(nlh, data);
		}
	}
}

struct family_reply {
	bool found;
	uint16_t id;
	uint64_t ops;
};

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *attr, *op, *a;
	struct family_reply *f = data;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(attr) == CTRL_ATTR_FAMILY_ID &&
		    mnl_attr_get_payload_len(attr) == sizeof(uint16_t)) {
			f->id = mnl_attr_get_u16(attr);
			f->found = true;
		}
		if (mnl_attr_get_type(attr) != CTRL_ATTR_OPS)
			continue;
		mnl_attr_for_each_nested(op, attr)
			mnl_attr_for_each_nested(a, op)
				if (mnl_attr_get_type(a) == CTRL_ATTR_OP_ID &&
				    mnl_attr_get_u32(a) < 64)
					f->ops |= 1ull << mnl_attr_get_u32(a);
	}
	return 0;
}

int devmem_nl_family(struct devmem_nl *nl, const char *name, uint16_t *id, uint64_t *ops,
		     const char *what)
{
	struct family_reply f = { 0 };
	struct nlmsghdr *nlh;
	char ctx[128];
	int err;

	nlh = devmem_nl_msg(nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, 0);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, name);
	snprintf(ctx, sizeof(ctx), "%s: generic netlink family %s", what, name);
	err = devmem_nl_request(nl, nlh, family_cb, &f, ctx);
	if (err == -ENOENT)
		return devmem_fail(-ENOENT, "%s: the kernel has no generic netlink family '%s' "
				   "(too old, or built without it)", what, name);
	if (err)
		return err;
	if (!f.found)
		return devmem_fail(-EPROTO, "%s: the reply has no family id", ctx);
	*id = f.id;
	if (ops)
		*ops = f.ops;
	return 0;
}

uint64_t devmem_nl_uint(const struct nlattr *attr)
{
	/* NLA_UINT attributes are 4 or 8 bytes. */
	if (mnl_attr_get_payload_len(attr) == sizeof(uint64_t))
		return mnl_attr_get_u64(attr);
	if (mnl_attr_get_payload_len(attr) == sizeof(uint32_t))
		return mnl_attr_get_u32(attr);
	if (mnl_attr_get_payload_len(attr) == sizeof(uint16_t))
		return mnl_attr_get_u16(attr);
	if (mnl_attr_get_payload_len(attr) == sizeof(uint8_t))
		return *(const uint8_t *)mnl_attr_get_payload(attr);
	return 0;
}
