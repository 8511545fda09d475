// SPDX-License-Identifier: GPL-2.0
/*
 * devtcp-fault: wire fault injection of a devtcp device over rtnetlink
 * (IFLA_DEVTCP_FAULT; `ip link` cannot pass attributes of kinds it does not
 * know). Faults apply to what DEV sends.
 *
 *   devtcp-fault set DEV KEY VALUE...   keys left out keep their value
 *   devtcp-fault show DEV               one line of KEY VALUE pairs
 *   devtcp-fault off DEV                every fault off (the seed is kept)
 *
 * Keys: drop, reorder, dup, corrupt (probability: ppm, or a percentage
 * such as 1% or 0.1%), depth (frames), delay and jitter (us), rate (bit/s,
 * with an optional k, M or G suffix), seed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/devtcp.h>

struct key {
	const char *name;
	int type;
	int ppm;		/* a probability */
};

static const struct key keys[] = {
	{ "drop", IFLA_DEVTCP_FAULT_DROP, 1 },
	{ "reorder", IFLA_DEVTCP_FAULT_REORDER, 1 },
	{ "depth", IFLA_DEVTCP_FAULT_REORDER_DEPTH, 0 },
	{ "dup", IFLA_DEVTCP_FAULT_DUP, 1 },
	{ "corrupt", IFLA_DEVTCP_FAULT_CORRUPT, 1 },
	{ "delay", IFLA_DEVTCP_FAULT_DELAY, 0 },
	{ "jitter", IFLA_DEVTCP_FAULT_JITTER, 0 },
	{ "rate", IFLA_DEVTCP_FAULT_RATE, 0 },
	{ "seed", IFLA_DEVTCP_FAULT_SEED, 0 },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static void usage(void)
{
	fprintf(stderr,
		"usage: devtcp-fault set DEV KEY VALUE...\n"
		"       devtcp-fault show DEV\n"
		"       devtcp-fault off DEV\n"
		"keys: drop reorder dup corrupt (ppm or N%%), depth, delay jitter (us),\n"
		"      rate (bit/s, k/M/G), seed\n");
	exit(2);
}

static int is_u64(int type)
{
	return type == IFLA_DEVTCP_FAULT_RATE || type == IFLA_DEVTCP_FAULT_SEED;
}

/* Parses VALUE for KEY; exits with a message when it is not a number. */
static uint64_t parse_value(const struct key *k, const char *s)
{
	char *end;
	double d;
	uint64_t v;

	errno = 0;
	if (k->ppm && strchr(s, '%')) {
		d = strtod(s, &end);
		if (errno || end == s || strcmp(end, "%") || d < 0)
			goto bad;
		return (uint64_t)(d * 10000 + 0.5);
	}
	if (*s == '-')
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		goto bad;
	if (k->type == IFLA_DEVTCP_FAULT_RATE && *end && !end[1]) {
		switch (*end++) {
		case 'k': v *= 1000; break;
		case 'M': v *= 1000000; break;
		case 'G': v *= 1000000000; break;
		default: goto bad;
		}
	}
	if (*end)
		goto bad;
	/* Out of range values go to the kernel, which says why it refuses. */
	if (!is_u64(k->type) && v > UINT32_MAX)
		goto bad;
	return v;
bad:
	fprintf(stderr, "devtcp-fault: bad value for %s: %s\n", k->name, s);
	exit(2);
}

/* Sends one request; prints the kernel's error and extack message. */
static int rtnl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh, const char *what,
		     mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int seq = nlh->nlmsg_seq;
	struct nlmsgerr *err;
	struct nlattr *attr;
	int len, ret;

	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		len = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (len < 0)
			return -errno;
		nlh = (struct nlmsghdr *)buf;
		if (!mnl_nlmsg_ok(nlh, len) || nlh->nlmsg_seq != seq)
			return -EPROTO;
		if (nlh->nlmsg_type != NLMSG_ERROR) {
			ret = mnl_cb_run(buf, len, seq, mnl_socket_get_portid(nl), cb, data);
			if (ret < 0)
				return -EPROTO;
			continue;
		}
		break;
	}
	err = mnl_nlmsg_get_payload(nlh);
	if (!err->error)
		return 0;
	fprintf(stderr, "devtcp-fault: %s: %s", what, strerror(-err->error));
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		unsigned int off = sizeof(*err);

		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += mnl_nlmsg_get_payload_len(&err->msg);
		mnl_attr_for_each_payload((void *)((char *)err + off),
					  mnl_nlmsg_get_payload_len(nlh) - off) {
			if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG)
				fprintf(stderr, ": %s", mnl_attr_get_str(attr));
		}
	}
	fprintf(stderr, "\n");
	return err->error;
}

static struct nlmsghdr *new_request(char *buf, int type, int ifindex)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifm;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = time(NULL);
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	return nlh;
}

struct show {
	int found;
	uint64_t val[NKEYS];
};

static int show_cb(const struct nlmsghdr *nlh, void *data)
{
	struct show *sh = data;
	struct nlattr *a, *b, *c, *d;
	unsigned int i;

	mnl_attr_for_each(a, nlh, sizeof(struct ifinfomsg)) {
		if (mnl_attr_get_type(a) != IFLA_LINKINFO)
			continue;
		mnl_attr_for_each_nested(b, a) {
			if (mnl_attr_get_type(b) != IFLA_INFO_DATA)
				continue;
			mnl_attr_for_each_nested(c, b) {
				if (mnl_attr_get_type(c) != IFLA_DEVTCP_FAULT)
					continue;
				sh->found = 1;
				mnl_attr_for_each_nested(d, c) {
					for (i = 0; i < NKEYS; i++) {
						if (keys[i].type != mnl_attr_get_type(d))
							continue;
						sh->val[i] = is_u64(keys[i].type) ?
							mnl_attr_get_u64(d) : mnl_attr_get_u32(d);
					}
				}
			}
		}
	}
	return MNL_CB_OK;
}

int main(int argc, char **argv)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlattr *linkinfo, *data, *fault;
	struct show sh = { 0 };
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	const char *cmd, *dev;
	int ifindex, one = 1, err, i;
	unsigned int k;

	if (argc < 3)
		usage();
	cmd = argv[1];
	dev = argv[2];
	if (strcmp(cmd, "set") && strcmp(cmd, "show") && strcmp(cmd, "off"))
		usage();
	if (!strcmp(cmd, "set") ? argc < 5 || (argc - 3) % 2 : argc != 3)
		usage();
	ifindex = if_nametoindex(dev);
	if (!ifindex) {
		fprintf(stderr, "devtcp-fault: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		perror("devtcp-fault: rtnetlink");
		return 1;
	}
	mnl_socket_setsockopt(nl, NETLINK_EXT_ACK, &one, sizeof(one));

	if (!strcmp(cmd, "show")) {
		nlh = new_request(buf, RTM_GETLINK, ifindex);
		err = rtnl_talk(nl, nlh, "cannot read the device", show_cb, &sh);
		if (!err && !sh.found) {
			fprintf(stderr, "devtcp-fault: %s is not a devtcp device\n", dev);
			err = -ENODEV;
		}
		if (!err) {
			for (k = 0; k < NKEYS; k++)
				printf("%s%s %llu", k ? " " : "", keys[k].name,
				       (unsigned long long)sh.val[k]);
			printf("\n");
		}
		mnl_socket_close(nl);
		return err ? 1 : 0;
	}

	nlh = new_request(buf, RTM_NEWLINK, ifindex);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "devtcp");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	fault = mnl_attr_nest_start(nlh, IFLA_DEVTCP_FAULT);
	if (!strcmp(cmd, "off")) {
		for (k = 0; k < NKEYS; k++) {
			if (keys[k].type == IFLA_DEVTCP_FAULT_SEED)
				continue;
			if (is_u64(keys[k].type))
				mnl_attr_put_u64(nlh, keys[k].type, 0);
			else
				mnl_attr_put_u32(nlh, keys[k].type, 0);
		}
	}
	for (i = 3; i + 1 < argc; i += 2) {
		for (k = 0; k < NKEYS && strcmp(keys[k].name, argv[i]); k++)
			;
		if (k == NKEYS) {
			fprintf(stderr, "devtcp-fault: unknown key %s\n", argv[i]);
			usage();
		}
		if (is_u64(keys[k].type))
			mnl_attr_put_u64(nlh, keys[k].type, parse_value(&keys[k], argv[i + 1]));
		else
			mnl_attr_put_u32(nlh, keys[k].type, parse_value(&keys[k], argv[i + 1]));
	}
	mnl_attr_nest_end(nlh, fault);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	err = rtnl_talk(nl, nlh, "cannot set the faults", NULL, NULL);
	mnl_socket_close(nl);
	return err ? 1 : 0;
}
