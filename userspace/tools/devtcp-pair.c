// SPDX-License-Identifier: GPL-2.0
/*
 * devtcp-pair: create and delete devtcp NIC pairs through rtnetlink, naming
 * both ends and placing them in network namespaces in one request (iproute2
 * cannot pass a peer for link kinds it does not know).
 *
 *   devtcp-pair add NAME PEER [-q QUEUES] [-m MTU] [-n NETNS] [-N PEER_NETNS]
 *                   [fault KEY VALUE...]
 *   devtcp-pair del NAME [-n NETNS]
 *
 * NETNS names a namespace of `ip netns` (/run/netns/NETNS). Faults (the keys
 * of devtcp-fault) apply to what NAME sends from its first frame on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/devtcp.h>

#include "devmem.h"
#include "fault_keys.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: devtcp-pair add NAME PEER [-q QUEUES] [-m MTU] [-n NETNS] [-N PEER_NETNS]\n"
		"                       [fault KEY VALUE...]\n"
		"       devtcp-pair del NAME [-n NETNS]\n");
	fputs(FAULT_KEYS_HELP, stderr);
	exit(2);
}

static int netns_fd(const char *name)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "devtcp-pair: network namespace %s: %s\n", name, strerror(errno));
		exit(1);
	}
	return fd;
}

static void put_link_attrs(struct nlmsghdr *nlh, const char *name, unsigned int queues,
			   unsigned int mtu, int ns_fd)
{
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	if (queues) {
		mnl_attr_put_u32(nlh, IFLA_NUM_TX_QUEUES, queues);
		mnl_attr_put_u32(nlh, IFLA_NUM_RX_QUEUES, queues);
	}
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	if (ns_fd >= 0)
		mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, ns_fd);
}

int main(int argc, char **argv)
{
	const char *ns = NULL, *peer_ns = NULL, *cmd, *name, *peer = NULL;
	unsigned int queues = 0, mtu = 0;
	struct nlattr *linkinfo, *data, *peer_attr;
	struct devmem_nl *nl;
	struct nlmsghdr *nlh;
	int opt, nfaults = 0, err;
	char **faults = NULL;

	if (argc < 3)
		usage();
	cmd = argv[1];
	name = argv[2];
	optind = 3;
	if (!strcmp(cmd, "add")) {
		if (argc < 4)
			usage();
		peer = argv[3];
		optind = 4;
	} else if (strcmp(cmd, "del")) {
		usage();
	}
	/* '+': stop at the first word that is no option ("fault"). */
	while ((opt = getopt(argc, argv, "+q:m:n:N:")) != -1) {
		switch (opt) {
		case 'q': queues = strtoul(optarg, NULL, 0); break;
		case 'm': mtu = strtoul(optarg, NULL, 0); break;
		case 'n': ns = optarg; break;
		case 'N': peer_ns = optarg; break;
		default: usage();
		}
	}
	if (peer && optind < argc && !strcmp(argv[optind], "fault") && optind + 1 < argc) {
		faults = argv + optind + 1;
		nfaults = argc - optind - 1;
		optind = argc;
	}
	if (optind != argc || strlen(name) >= IFNAMSIZ || (peer && strlen(peer) >= IFNAMSIZ))
		usage();

	/* Work from inside NAME's namespace: deletion finds it there. */
	if (ns && setns(netns_fd(ns), CLONE_NEWNET)) {
		fprintf(stderr, "devtcp-pair: cannot enter %s: %s\n", ns, strerror(errno));
		return 1;
	}
	if (devmem_nl_open_route(&nl, "rtnetlink")) {
		fprintf(stderr, "devtcp-pair: %s\n", devmem_last_error());
		return 1;
	}

	if (!strcmp(cmd, "del")) {
		nlh = devmem_nl_link_msg(nl, RTM_DELLINK, 0, 0);
		mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
		err = devmem_nl_request(nl, nlh, NULL, NULL, "cannot delete the pair");
	} else {
		nlh = devmem_nl_link_msg(nl, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, 0);
		put_link_attrs(nlh, name, queues, mtu, -1);
		linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
		mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "devtcp");
		data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
		peer_attr = mnl_attr_nest_start(nlh, IFLA_DEVTCP_PEER);
		/* The peer's struct ifinfomsg, then its attributes. */
		memset(mnl_nlmsg_get_payload_tail(nlh), 0, sizeof(struct ifinfomsg));
		nlh->nlmsg_len += MNL_ALIGN(sizeof(struct ifinfomsg));
		put_link_attrs(nlh, peer, queues, mtu, peer_ns ? netns_fd(peer_ns) : -1);
		mnl_attr_nest_end(nlh, peer_attr);
		if (faults && fault_put_keys(nlh, "devtcp-pair", nfaults, faults))
			usage();
		mnl_attr_nest_end(nlh, data);
		mnl_attr_nest_end(nlh, linkinfo);
		err = devmem_nl_request(nl, nlh, NULL, NULL, "cannot create the pair");
	}
	if (err)
		fprintf(stderr, "devtcp-pair: %s\n", devmem_last_error());
	devmem_nl_close(nl);
	return err ? 1 : 0;
}
