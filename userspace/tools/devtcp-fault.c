// SPDX-License-Identifier: GPL-2.0
/*
 * devtcp-fault: wire fault injection of a devtcp device over rtnetlink
 * (IFLA_DEVTCP_FAULT; `ip link` cannot pass attributes of kinds it does not
 * know). Faults apply to what DEV sends, and dma-unreachable to DEV's DMA.
 *
 *   devtcp-fault set DEV KEY VALUE...   keys left out keep their value
 *   devtcp-fault show DEV               one line of KEY VALUE pairs
 *   devtcp-fault off DEV                every fault off (the seed is kept)
 *
 * Keys: drop, reorder, dup, corrupt (probability: ppm, or a percentage
 * such as 1% or 0.1%), depth (frames), delay and jitter (us), rate (bit/s,
 * with an optional k, M or G suffix), seed, dma-unreachable (0 or 1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/devtcp.h>

#include "devmem.h"
#include "fault_keys.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: devtcp-fault set DEV KEY VALUE...\n"
		"       devtcp-fault show DEV\n"
		"       devtcp-fault off DEV\n");
	fputs(FAULT_KEYS_HELP, stderr);
	exit(2);
}

/* Prints the IFLA_DEVTCP_FAULT nest of a getlink reply; *found = 1. */
static int show_cb(const struct nlmsghdr *nlh, void *found)
{
	struct nlattr *a, *b, *c;

	mnl_attr_for_each(a, nlh, sizeof(struct ifinfomsg)) {
		if (mnl_attr_get_type(a) != IFLA_LINKINFO)
			continue;
		mnl_attr_for_each_nested(b, a) {
			if (mnl_attr_get_type(b) != IFLA_INFO_DATA)
				continue;
			mnl_attr_for_each_nested(c, b) {
				if (mnl_attr_get_type(c) == IFLA_DEVTCP_FAULT) {
					fault_print(c);
					*(int *)found = 1;
				}
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct nlattr *linkinfo, *data;
	struct devmem_nl *nl;
	struct nlmsghdr *nlh;
	int ifindex, found = 0, err;
	const char *cmd, *dev;

	if (argc < 3)
		usage();
	cmd = argv[1];
	dev = argv[2];
	if (strcmp(cmd, "set") && strcmp(cmd, "show") && strcmp(cmd, "off"))
		usage();
	if (!strcmp(cmd, "set") ? argc < 5 : argc != 3)
		usage();
	ifindex = if_nametoindex(dev);
	if (!ifindex) {
		fprintf(stderr, "devtcp-fault: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (devmem_nl_open_route(&nl, "rtnetlink")) {
		fprintf(stderr, "devtcp-fault: %s\n", devmem_last_error());
		return 1;
	}

	if (!strcmp(cmd, "show")) {
		nlh = devmem_nl_link_msg(nl, RTM_GETLINK, 0, ifindex);
		err = devmem_nl_request(nl, nlh, show_cb, &found, "cannot read the device");
		if (err)
			fprintf(stderr, "devtcp-fault: %s\n", devmem_last_error());
		else if (!found) {
			fprintf(stderr, "devtcp-fault: %s is not a devtcp device\n", dev);
			err = -ENODEV;
		}
		devmem_nl_close(nl);
		return err ? 1 : 0;
	}

	nlh = devmem_nl_link_msg(nl, RTM_NEWLINK, 0, ifindex);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "devtcp");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	if (!strcmp(cmd, "off"))
		fault_put_off(nlh);
	else if (fault_put_keys(nlh, "devtcp-fault", argc - 3, argv + 3))
		usage();
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	err = devmem_nl_request(nl, nlh, NULL, NULL, "cannot set the faults");
	if (err)
		fprintf(stderr, "devtcp-fault: %s\n", devmem_last_error());
	devmem_nl_close(nl);
	return err ? 1 : 0;
}
