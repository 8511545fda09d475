// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Kernel error replies turned into messages (nl.c), on hand-built
 * NLMSG_ERROR and NLMSG_DONE messages: the extack text, the attribute the
 * offset points at (top level or nested) and its value, with the request
 * echoed or capped.
 */
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <string.h>

#include "internal.h"
#include "devtcp/check.h"

static uint8_t req_buf[512] __attribute__((aligned(4)));
static uint8_t err_buf[1024] __attribute__((aligned(4)));

/* A bind-rx like request: ifindex, then queues 3 and 9 in nests. Returns
 * it; the offset of queue 9's id attribute in *off9. */
static struct nlmsghdr *request(uint32_t *off9)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(req_buf);
	struct genlmsghdr *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	struct nlattr *nest;
	unsigned int q;

	nlh->nlmsg_type = 0x20;
	g->cmd = 13;
	mnl_attr_put_u32(nlh, 1, 7);
	for (q = 3; q <= 9; q += 6) {
		nest = mnl_attr_nest_start(nlh, 2);
		if (q == 9)
			*off9 = (uint8_t *)mnl_nlmsg_get_payload_tail(nlh) - req_buf;
		mnl_attr_put_u32(nlh, 1, q);
		mnl_attr_put_u32(nlh, 3, 0);
		mnl_attr_nest_end(nlh, nest);
	}
	return nlh;
}

/* NLMSG_ERROR for @req with @msg and offset @off (0: none). */
static struct nlmsghdr *error_msg(const struct nlmsghdr *req, int error, bool capped,
				  const char *msg, uint32_t off)
{
	struct nlmsghdr *nlh;
	struct nlmsgerr *e;

	memset(err_buf, 0, sizeof(err_buf));
	nlh = mnl_nlmsg_put_header(err_buf);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = NLM_F_ACK_TLVS | (capped ? NLM_F_CAPPED : 0);
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
	e->error = error;
	e->msg = *req;
	if (!capped) {
		/* The payload of the request follows the error. */
		size_t len = req->nlmsg_len - sizeof(*req);

		memcpy(mnl_nlmsg_put_extra_header(nlh, MNL_ALIGN(len)),
		       (const uint8_t *)req + sizeof(*req), len);
	}
	if (msg)
		mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, msg);
	if (off)
		mnl_attr_put_u32(nlh, NLMSGERR_ATTR_OFFS, off);
	return nlh;
}

int main(void)
{
	struct devmem_nl_ext ext;
	struct nlmsghdr *req, *err;
	uint32_t off9 = 0, off_ifindex;
	int capped;

	req = request(&off9);
	off_ifindex = sizeof(struct nlmsghdr) + sizeof(struct genlmsghdr);
	for (capped = 0; capped <= 1; capped++) {
		memset(&ext, 0, sizeof(ext));
		err = error_msg(req, -EINVAL, capped, "rx queue index out of range", off9);
		devmem_nl_parse_ext(err, req, &ext);
		CHECK(!strcmp(ext.msg, "rx queue index out of range"), "capped %d: msg '%s'", capped,
		      ext.msg);
		CHECK(ext.has_bad_attr && ext.bad_nest == 2 && ext.bad_type == 1 &&
		      ext.bad_value == 9, "capped %d: nest %u type %u value %u", capped,
		      ext.bad_nest, ext.bad_type, ext.bad_value);
		CHECK(devmem_nl_fail(-EINVAL, &ext, "dtb: bind-rx") == -EINVAL, "returns err");
		CHECK(!strcmp(devmem_last_error(), "dtb: bind-rx: Invalid argument: rx queue index "
			      "out of range (the kernel refused attribute 1 in nest 2, value 9)"),
		      "got '%s'", devmem_last_error());
	}

	/* A top-level attribute, no message. */
	memset(&ext, 0, sizeof(ext));
	devmem_nl_parse_ext(error_msg(req, -ENODEV, true, NULL, off_ifindex), req, &ext);
	CHECK(ext.has_bad_attr && !ext.bad_nest && ext.bad_type == 1 && ext.bad_value == 7,
	      "nest %u type %u value %u", ext.bad_nest, ext.bad_type, ext.bad_value);
	devmem_nl_fail(-ENODEV, &ext, "dtb: rings-get");
	CHECK(!strcmp(devmem_last_error(), "dtb: rings-get: No such device (the kernel refused "
		      "attribute 1, value 7)"), "got '%s'", devmem_last_error());

	/* An offset inside no attribute: reported as an offset. */
	memset(&ext, 0, sizeof(ext));
	devmem_nl_parse_ext(error_msg(req, -EINVAL, true, "bad", off9 + 2), req, &ext);
	CHECK(!ext.has_bad_attr && ext.bad_off == off9 + 2, "offset only");
	devmem_nl_fail(-EINVAL, &ext, "x");
	CHECK(strstr(devmem_last_error(), "bad (the kernel refused the attribute at offset") != NULL,
	      "got '%s'", devmem_last_error());

	/* No extack at all: the errno text alone. */
	memset(&ext, 0, sizeof(ext));
	err = error_msg(req, -EPERM, true, NULL, 0);
	err->nlmsg_flags &= ~NLM_F_ACK_TLVS;
	devmem_nl_parse_ext(err, req, &ext);
	devmem_nl_fail(-EPERM, &ext, "dtb: channels-set");
	CHECK(!strcmp(devmem_last_error(), "dtb: channels-set: Operation not permitted"),
	      "got '%s'", devmem_last_error());

	/* A dump's NLMSG_DONE: the error, then the TLVs. */
	memset(&ext, 0, sizeof(ext));
	memset(err_buf, 0, sizeof(err_buf));
	err = mnl_nlmsg_put_header(err_buf);
	err->nlmsg_type = NLMSG_DONE;
	err->nlmsg_flags = NLM_F_MULTI | NLM_F_ACK_TLVS;
	*(int *)mnl_nlmsg_put_extra_header(err, sizeof(int)) = -EOPNOTSUPP;
	mnl_attr_put_strz(err, NLMSGERR_ATTR_MSG, "no qstats");
	devmem_nl_parse_ext(err, req, &ext);
	CHECK(!strcmp(ext.msg, "no qstats"), "done: msg '%s'", ext.msg);

	/* Kernel features: one name per bit, none for other values; the
	 * running kernel is asked and answers with known bits only (which ones
	 * is checked against the kernel in the VM, selftests/libdevmem/nic.sh). */
	CHECK(!strcmp(devmem_kernel_feature_name(DEVMEM_KF_BIND_RX), "bind-rx") &&
	      !strcmp(devmem_kernel_feature_name(DEVMEM_KF_BIND_TX), "bind-tx") &&
	      !strcmp(devmem_kernel_feature_name(DEVMEM_KF_ZCRX), "io_uring-zcrx") &&
	      !strcmp(devmem_kernel_feature_name(DEVMEM_KF_RSS_NETLINK), "ethtool-rss-netlink"),
	      "feature names");
	CHECK(!devmem_kernel_feature_name(0) && !devmem_kernel_feature_name(1u << 4) &&
	      !devmem_kernel_feature_name(DEVMEM_KF_BIND_RX | DEVMEM_KF_BIND_TX),
	      "no name for other values");
	unsigned int kf = ~0u;

	CHECK(devmem_kernel_features(&kf) == 0, "kernel features: %s", devmem_last_error());
	CHECK(!(kf & ~(DEVMEM_KF_BIND_RX | DEVMEM_KF_BIND_TX | DEVMEM_KF_ZCRX |
		       DEVMEM_KF_RSS_NETLINK)), "unknown feature bits 0x%x", kf);
	return check_done("t_nl");
}
