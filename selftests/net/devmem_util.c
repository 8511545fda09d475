// SPDX-License-Identifier: GPL-2.0
/* Shared by the devmem test programs; see devmem_util.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/udmabuf.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "devmem_util.h"

/*
 * netdev generic netlink numbers (Documentation/netlink/specs/netdev.yaml).
 * <linux/netdev.h> is not included: the host's is too old or missing, and
 * its enums cannot be tested for with #ifdef.
 */
#define NETDEV_FAMILY_NAME		"netdev"
#define NETDEV_FAMILY_VERSION		1
#define NETDEV_CMD_BIND_RX		13
#define NETDEV_CMD_BIND_TX		15
#define NETDEV_A_DMABUF_IFINDEX		1
#define NETDEV_A_DMABUF_QUEUES		2
#define NETDEV_A_DMABUF_FD		3
#define NETDEV_A_DMABUF_ID		4
#define NETDEV_A_DMABUF_RX_PAGE_SIZE	5
#define NETDEV_A_QUEUE_ID		1
#define NETDEV_A_QUEUE_TYPE		3
#define NETDEV_QUEUE_TYPE_RX		0

/* Requests and replies here are small; MNL_SOCKET_BUFFER_SIZE is not constant. */
#define NL_BUF_SIZE	16384

void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, strerror(errno));
	exit(1);
}

static void dmabuf_map(struct dmabuf *db, size_t size)
{
	db->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, db->fd, 0);
	if (db->map == MAP_FAILED)
		die("mmap dma-buf");
	db->size = size;
	db->id = 0;
}

/* A udmabuf over a sealed memfd. */
void dmabuf_create_udmabuf(struct dmabuf *db, size_t size)
{
	struct udmabuf_create create = {
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = 0,
		.size = size,
	};
	int memfd, devfd;

	memfd = memfd_create("devmem", MFD_ALLOW_SEALING);
	if (memfd < 0)
		die("memfd_create");
	if (ftruncate(memfd, size))
		die("ftruncate memfd");
	/* udmabuf refuses memfds that could shrink under it. */
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		die("F_ADD_SEALS F_SEAL_SHRINK");
	devfd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (devfd < 0)
		die("open /dev/udmabuf");
	create.memfd = memfd;
	db->fd = ioctl(devfd, UDMABUF_CREATE, &create);
	if (db->fd < 0)
		die("UDMABUF_CREATE");
	close(devfd);
	close(memfd);
	dmabuf_map(db, size);
}

/* A dma-buf of the system dma-heap. */
void dmabuf_create_heap(struct dmabuf *db, size_t size)
{
	struct dma_heap_allocation_data alloc = {
		.len = size,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	int heapfd;

	heapfd = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (heapfd < 0)
		die("open /dev/dma_heap/system");
	if (ioctl(heapfd, DMA_HEAP_IOCTL_ALLOC, &alloc))
		die("DMA_HEAP_IOCTL_ALLOC");
	close(heapfd);
	db->fd = alloc.fd;
	dmabuf_map(db, size);
}

void dmabuf_create(struct dmabuf *db, size_t size, int heap)
{
	if (heap)
		dmabuf_create_heap(db, size);
	else
		dmabuf_create_udmabuf(db, size);
}

void dmabuf_sync(const struct dmabuf *db, uint64_t flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	if (ioctl(db->fd, DMA_BUF_IOCTL_SYNC, &sync))
		die("DMA_BUF_IOCTL_SYNC");
}

/* Prints "WHAT failed: STRERROR: EXTACK" for a netlink error message. */
static void print_nl_error(const struct nlmsghdr *nlh, const char *what)
{
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	size_t off = sizeof(*err);
	const struct nlattr *attr;

	fprintf(stderr, "%s: %s failed: %s", program_invocation_short_name, what, strerror(-err->error));
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		/* The request is echoed unless capped; the TLVs follow it. */
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += mnl_nlmsg_get_payload_len(&err->msg);
		mnl_attr_for_each_payload((const void *)((const char *)err + off),
					  mnl_nlmsg_get_payload_len(nlh) - off) {
			if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG)
				fprintf(stderr, ": %s", mnl_attr_get_str(attr));
			/* Some checks only point at the attribute they refused. */
			if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_OFFS)
				fprintf(stderr, " (bad attribute at offset %u)",
					mnl_attr_get_u32(attr));
		}
	}
	fprintf(stderr, "\n");
}

/*
 * Sends a request with NLM_F_ACK and feeds each reply message to @cb until
 * the ack. Exits with the kernel's error and extack on failure.
 */
static void nl_request(struct mnl_socket *nl, struct nlmsghdr *req, const char *what,
		       mnl_cb_t cb, void *data)
{
	static uint8_t buf[NL_BUF_SIZE];
	uint32_t seq = req->nlmsg_seq;

	if (mnl_socket_sendto(nl, req, req->nlmsg_len) < 0)
		die(what);
	for (;;) {
		int len = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		struct nlmsghdr *nlh = (struct nlmsghdr *)buf;

		if (len < 0)
			die(what);
		for (; mnl_nlmsg_ok(nlh, len); nlh = mnl_nlmsg_next(nlh, &len)) {
			if (nlh->nlmsg_seq != seq)
				continue;
			if (nlh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);

				if (!err->error)
					return;
				print_nl_error(nlh, what);
				exit(1);
			}
			if (cb(nlh, data) < 0) {
				fprintf(stderr, "%s: %s: malformed reply\n", program_invocation_short_name, what);
				exit(1);
			}
		}
	}
}

static struct nlmsghdr *genl_put_header(void *buf, uint16_t type, uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *genl;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = time(NULL);
	genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
	genl->cmd = cmd;
	genl->version = version;
	return nlh;
}

/* Finds the u16 or u32 attribute @type in a generic netlink reply. */
struct genl_u32_attr {
	uint16_t type;
	int found;
	uint32_t value;
};

static int genl_find_u32_cb(const struct nlmsghdr *nlh, void *data)
{
	struct genl_u32_attr *want = data;
	const struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(attr) != want->type)
			continue;
		if (mnl_attr_get_payload_len(attr) == sizeof(uint16_t))
			want->value = mnl_attr_get_u16(attr);
		else if (mnl_attr_get_payload_len(attr) == sizeof(uint32_t))
			want->value = mnl_attr_get_u32(attr);
		else
			return MNL_CB_ERROR;
		want->found = 1;
	}
	return MNL_CB_OK;
}

static uint16_t netdev_family_id(struct mnl_socket *nl)
{
	static uint8_t buf[NL_BUF_SIZE];
	struct genl_u32_attr id = { .type = CTRL_ATTR_FAMILY_ID };
	struct nlmsghdr *nlh;

	nlh = genl_put_header(buf, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, NETDEV_FAMILY_NAME);
	nl_request(nl, nlh, "resolve genl family " NETDEV_FAMILY_NAME, genl_find_u32_cb, &id);
	if (!id.found) {
		fprintf(stderr, "%s: no family id for " NETDEV_FAMILY_NAME "\n", program_invocation_short_name);
		exit(1);
	}
	return id.value;
}

/*
 * Binds the dma-buf to RX queue @queue of @ifindex. The binding lives as long
 * as @nl stays open, so the caller keeps it open until exit.
 */
void netdev_bind_rx(struct mnl_socket *nl, int ifindex, unsigned int queue, struct dmabuf *db)
{
	netdev_bind_rx_page_size(nl, ifindex, queue, db, 0);
}

void netdev_bind_rx_page_size(struct mnl_socket *nl, int ifindex, unsigned int queue,
			      struct dmabuf *db, uint32_t rx_page_size)
{
	netdev_bind_rx_queues(nl, ifindex, &queue, 1, db, rx_page_size);
}

/* One binding of @db to several RX queues. */
void netdev_bind_rx_queues(struct mnl_socket *nl, int ifindex, const unsigned int *queues,
			   unsigned int nqueues, struct dmabuf *db, uint32_t rx_page_size)
{
	static uint8_t buf[NL_BUF_SIZE];
	struct genl_u32_attr id = { .type = NETDEV_A_DMABUF_ID };
	uint16_t family = netdev_family_id(nl);
	struct nlmsghdr *nlh;
	struct nlattr *nest;

	nlh = genl_put_header(buf, family, NETDEV_CMD_BIND_RX, NETDEV_FAMILY_VERSION);
	mnl_attr_put_u32(nlh, NETDEV_A_DMABUF_IFINDEX, ifindex);
	for (unsigned int i = 0; i < nqueues; i++) {
		nest = mnl_attr_nest_start(nlh, NETDEV_A_DMABUF_QUEUES);
		mnl_attr_put_u32(nlh, NETDEV_A_QUEUE_ID, queues[i]);
		mnl_attr_put_u32(nlh, NETDEV_A_QUEUE_TYPE, NETDEV_QUEUE_TYPE_RX);
		mnl_attr_nest_end(nlh, nest);
	}
	mnl_attr_put_u32(nlh, NETDEV_A_DMABUF_FD, db->fd);
	if (rx_page_size)
		mnl_attr_put_u32(nlh, NETDEV_A_DMABUF_RX_PAGE_SIZE, rx_page_size);
	nl_request(nl, nlh, "bind-rx", genl_find_u32_cb, &id);
	if (!id.found) {
		fprintf(stderr, "%s: bind-rx reply has no dmabuf id\n", program_invocation_short_name);
		exit(1);
	}
	db->id = id.value;
}

/* bind-tx: the dma-buf is mapped for the device to read from on send. */
void netdev_bind_tx(struct mnl_socket *nl, int ifindex, struct dmabuf *db)
{
	static uint8_t buf[NL_BUF_SIZE];
	struct genl_u32_attr id = { .type = NETDEV_A_DMABUF_ID };
	uint16_t family = netdev_family_id(nl);
	struct nlmsghdr *nlh;

	nlh = genl_put_header(buf, family, NETDEV_CMD_BIND_TX, NETDEV_FAMILY_VERSION);
	mnl_attr_put_u32(nlh, NETDEV_A_DMABUF_IFINDEX, ifindex);
	mnl_attr_put_u32(nlh, NETDEV_A_DMABUF_FD, db->fd);
	nl_request(nl, nlh, "bind-tx", genl_find_u32_cb, &id);
	if (!id.found) {
		fprintf(stderr, "%s: bind-tx reply has no dmabuf id\n", program_invocation_short_name);
		exit(1);
	}
	db->id = id.value;
}

int ifindex_of(const char *ifname)
{
	int ifindex = if_nametoindex(ifname);

	if (!ifindex)
		die(ifname);
	return ifindex;
}

struct mnl_socket *netdev_nl_open(void)
{
	struct mnl_socket *nl = mnl_socket_open(NETLINK_GENERIC);
	int one = 1;

	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		die("generic netlink socket");
	if (mnl_socket_setsockopt(nl, NETLINK_EXT_ACK, &one, sizeof(one)) ||
	    mnl_socket_setsockopt(nl, NETLINK_CAP_ACK, &one, sizeof(one)))
		die("NETLINK_EXT_ACK");
	return nl;
}

int tcp_accept_one(int v6, int port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int one = 1, ls, s;

	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		len = sizeof(*s4);
	}
	ls = socket(ss.ss_family, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket");
	if (setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("SO_REUSEADDR");
	if (bind(ls, (struct sockaddr *)&ss, len))
		die("bind");
	if (listen(ls, 1))
		die("listen");
	/* Tell a waiting script that we listen. */
	printf("listening on port %d\n", port);
	fflush(stdout);
	s = accept(ls, NULL, NULL);
	if (s < 0)
		die("accept");
	close(ls);
	return s;
}

int tcp_connect(const char *addr, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	char service[16];
	int s, err;

	snprintf(service, sizeof(service), "%d", port);
	err = getaddrinfo(addr, service, &hints, &ai);
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, addr,
			gai_strerror(err));
		exit(1);
	}
	s = socket(ai->ai_family, SOCK_STREAM, 0);
	if (s < 0)
		die("socket");
	if (connect(s, ai->ai_addr, ai->ai_addrlen))
		die("connect");
	freeaddrinfo(ai);
	return s;
}
