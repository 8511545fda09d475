// SPDX-License-Identifier: GPL-2.0
/* Shared by the devmem test programs; see devmem_util.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libmnl/libmnl.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/genetlink.h>
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
#include <unistd.h>

#include "devmem_util.h"
#include "devtcp_bar.h"
#include "internal.h"
#include "devtcp/nl_numbers.h"

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
	/*
	 * udmabuf builds the table it syncs CPU access through at the first
	 * DMA_BUF_IOCTL_SYNC, without a lock: the processes of --conns, forked
	 * after this, would each build one at once and leak all but one
	 * (kmemleak). Built here, while this process alone holds the buffer.
	 */
	dmabuf_sync(db, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ);
	dmabuf_sync(db, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ);
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

/*
 * BAR 2 of the device the exporter is bound to, write-combined as the device
 * model maps it: a first mapping of another type (resource2 is UC-) would
 * have PAT give the model's mapping that type too, silently.
 */
static void bar_resource_path(char *path, size_t len)
{
	const char *drv = "/sys/bus/pci/drivers/devtcp_bar";
	struct dirent *de;
	DIR *d = opendir(drv);

	if (!d)
		die(drv);
	while ((de = readdir(d)))
		if (strchr(de->d_name, ':')) {
			snprintf(path, len, "%s/%s/resource2_wc", drv, de->d_name);
			closedir(d);
			return;
		}
	closedir(d);
	errno = ENODEV;
	die("no device bound to devtcp_bar");
}

void dmabuf_create_bar(struct dmabuf *db, size_t size)
{
	struct devtcp_bar_export req = { .offset = 0, .size = size };
	char path[PATH_MAX];
	int devfd, resfd;

	devfd = open("/dev/devtcp-bar", O_RDWR | O_CLOEXEC);
	if (devfd < 0)
		die("open /dev/devtcp-bar");
	if (ioctl(devfd, DEVTCP_BAR_EXPORT, &req))
		die("DEVTCP_BAR_EXPORT");
	close(devfd);
	db->fd = req.fd;
	bar_resource_path(path, sizeof(path));
	resfd = open(path, O_RDWR | O_CLOEXEC);
	if (resfd < 0)
		die(path);
	db->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, resfd, 0);
	if (db->map == MAP_FAILED)
		die("mmap BAR 2");
	close(resfd);
	memset(db->map, 0x5a, size);
	db->size = size;
	db->id = 0;
}

void dmabuf_create(struct dmabuf *db, size_t size, int kind)
{
	if (kind == DMABUF_HEAP)
		dmabuf_create_heap(db, size);
	else if (kind == DMABUF_BAR)
		dmabuf_create_bar(db, size);
	else
		dmabuf_create_udmabuf(db, size);
}

void dmabuf_sync(const struct dmabuf *db, uint64_t flags)
{
	struct dma_buf_sync sync = { .flags = flags };

	if (ioctl(db->fd, DMA_BUF_IOCTL_SYNC, &sync))
		die("DMA_BUF_IOCTL_SYNC");
}

/* Exits with what libdevmem's netlink helpers said (extack included). */
__attribute__((noreturn)) static void die_nl(void)
{
	fprintf(stderr, "%s: %s\n", program_invocation_short_name, devmem_last_error());
	exit(1);
}

static int dmabuf_id_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr))
		if (mnl_attr_get_type(attr) == DM_NETDEV_A_DMABUF_ID)
			*(uint32_t *)data = mnl_attr_get_u32(attr);
	return 0;
}

/* A bind-rx or bind-tx request of @db on @ifindex, up to the queues. */
static struct nlmsghdr *bind_msg(struct devmem_nl *nl, uint8_t cmd, int ifindex,
				 const struct dmabuf *db)
{
	uint16_t family;
	struct nlmsghdr *nlh;

	if (devmem_nl_family(nl, DM_NETDEV_FAMILY_NAME, &family, NULL, "netdev"))
		die_nl();
	nlh = devmem_nl_msg(nl, family, cmd, DM_NETDEV_FAMILY_VERSION, 0);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_IFINDEX, ifindex);
	mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_FD, db->fd);
	return nlh;
}

/* Sends a bind request; the dmabuf id of the reply into @db. */
static void bind_send(struct devmem_nl *nl, struct nlmsghdr *nlh, struct dmabuf *db,
		      const char *what)
{
	db->id = 0;
	if (devmem_nl_request(nl, nlh, dmabuf_id_cb, &db->id, what))
		die_nl();
	if (!db->id) {
		fprintf(stderr, "%s: %s reply has no dmabuf id\n", program_invocation_short_name,
			what);
		exit(1);
	}
}

/*
 * Binds the dma-buf to RX queue @queue of @ifindex. The binding lives as long
 * as @nl stays open, so the caller keeps it open until exit.
 */
void netdev_bind_rx(struct devmem_nl *nl, int ifindex, unsigned int queue, struct dmabuf *db)
{
	netdev_bind_rx_page_size(nl, ifindex, queue, db, 0);
}

void netdev_bind_rx_page_size(struct devmem_nl *nl, int ifindex, unsigned int queue,
			      struct dmabuf *db, uint32_t rx_page_size)
{
	netdev_bind_rx_queues(nl, ifindex, &queue, 1, db, rx_page_size);
}

/* One binding of @db to several RX queues. */
void netdev_bind_rx_queues(struct devmem_nl *nl, int ifindex, const unsigned int *queues,
			   unsigned int nqueues, struct dmabuf *db, uint32_t rx_page_size)
{
	struct nlmsghdr *nlh = bind_msg(nl, DM_NETDEV_CMD_BIND_RX, ifindex, db);
	struct nlattr *nest;

	for (unsigned int i = 0; i < nqueues; i++) {
		nest = mnl_attr_nest_start(nlh, DM_NETDEV_A_DMABUF_QUEUES);
		mnl_attr_put_u32(nlh, DM_NETDEV_A_QUEUE_ID, queues[i]);
		mnl_attr_put_u32(nlh, DM_NETDEV_A_QUEUE_TYPE, DM_NETDEV_QUEUE_TYPE_RX);
		mnl_attr_nest_end(nlh, nest);
	}
	if (rx_page_size)
		mnl_attr_put_u32(nlh, DM_NETDEV_A_DMABUF_RX_PAGE_SIZE, rx_page_size);
	bind_send(nl, nlh, db, "bind-rx");
}

/* bind-tx: the dma-buf is mapped for the device to read from on send. */
void netdev_bind_tx(struct devmem_nl *nl, int ifindex, struct dmabuf *db)
{
	bind_send(nl, bind_msg(nl, DM_NETDEV_CMD_BIND_TX, ifindex, db), db, "bind-tx");
}

int ifindex_of(const char *ifname)
{
	int ifindex = if_nametoindex(ifname);

	if (!ifindex)
		die(ifname);
	return ifindex;
}

struct devmem_nl *netdev_nl_open(void)
{
	struct devmem_nl *nl;

	if (devmem_nl_open(&nl, "netdev netlink"))
		die_nl();
	return nl;
}

void netdev_nl_close(struct devmem_nl *nl)
{
	devmem_nl_close(nl);
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
