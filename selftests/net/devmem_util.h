/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the devmem test programs share: dma-buf providers (udmabuf, system
 * dma-heap), netdev netlink bind-rx/bind-tx (libdevmem's netlink helpers),
 * and TCP set-up.
 * Failures print "PROG: what: reason" and exit 1; the tests read the reason.
 */
#ifndef DEVMEM_UTIL_H
#define DEVMEM_UTIL_H

#include <stddef.h>
#include <stdint.h>

struct devmem_nl;

struct dmabuf {
	int fd;
	uint32_t id;		/* dmabuf id of the binding, 0 while unbound */
	uint8_t *map;		/* read-write CPU mapping of the whole buffer */
	size_t size;
};

__attribute__((noreturn)) void die(const char *what);

/* A udmabuf over a sealed memfd of @size bytes (a multiple of the page size). */
void dmabuf_create_udmabuf(struct dmabuf *db, size_t size);
/* A dma-buf from /dev/dma_heap/system. */
void dmabuf_create_heap(struct dmabuf *db, size_t size);
/*
 * A dma-buf of the test exporter (selftests/harness/bar): BAR 2 of the VM's
 * ivshmem device, without struct pages and without CPU access through the
 * dma-buf; db->map maps the BAR itself (sysfs resource2), filled with 0x5a
 * so that nothing of an earlier run passes for received data.
 */
void dmabuf_create_bar(struct dmabuf *db, size_t size);
enum dmabuf_kind { DMABUF_UDMABUF, DMABUF_HEAP, DMABUF_BAR };
/* One of @kind (udmabuf; -H: the system dma-heap's; --bar: the BAR's). */
void dmabuf_create(struct dmabuf *db, size_t size, int kind);
/* DMA_BUF_IOCTL_SYNC with @flags (DMA_BUF_SYNC_START/END | READ/WRITE). */
void dmabuf_sync(const struct dmabuf *db, uint64_t flags);

/* The interface index of @ifname; exits if there is no such interface. */
int ifindex_of(const char *ifname);
/*
 * A netdev generic netlink socket with extended acks. A binding lives as long
 * as the socket that made it stays open.
 */
struct devmem_nl *netdev_nl_open(void);
/* Closes it: its bindings go with it. */
void netdev_nl_close(struct devmem_nl *nl);
/* bind-rx of @db to RX queue @queue of @ifindex; sets db->id or exits. */
void netdev_bind_rx(struct devmem_nl *nl, int ifindex, unsigned int queue, struct dmabuf *db);
/* The same with the rx-page-size attribute (the buffer size of the binding;
 * a power of two >= PAGE_SIZE), left out when @rx_page_size is 0. */
void netdev_bind_rx_queues(struct devmem_nl *nl, int ifindex, const unsigned int *queues,
			   unsigned int nqueues, struct dmabuf *db, uint32_t rx_page_size);
void netdev_bind_rx_page_size(struct devmem_nl *nl, int ifindex, unsigned int queue,
			      struct dmabuf *db, uint32_t rx_page_size);
/* bind-tx of @db for sending on @ifindex; sets db->id or exits. */
void netdev_bind_tx(struct devmem_nl *nl, int ifindex, struct dmabuf *db);

/* Listens on @port (any address, IPv6 if @v6), prints "listening on port
 * PORT" for a waiting script and returns the one connection accepted. */
int tcp_accept_one(int v6, int port);
/* Connects to @addr (IPv4 or IPv6 literal) port @port. */
int tcp_connect(const char *addr, int port);

#endif
