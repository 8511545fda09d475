// SPDX-License-Identifier: GPL-2.0
/*
 * A NIC layer for rdpmd's client code without hardware (rdpm_nic_ops):
 * memfds stand in for dma-bufs, bindings and flow rules are numbered
 * records. The fuzzer and the unit tests of the client code run the real
 * request handling (clients.c) on top of it. A REGISTER fd must be a memfd
 * here, as it must be a dma-buf (dmabuf.c) in rdpmd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

struct fake_mem {
	int fd;
	size_t size;
};

struct fake_binding {
	uint32_t id, page_size;
};

static char error[128];
static uint32_t next_id = 1;
unsigned int fake_rules;		/* flow rules in place */

static int fail(int err, const char *what)
{
	snprintf(error, sizeof(error), "fake NIC layer: %s", what);
	return err;
}

static int mem_new(struct devmem_mem **out, int fd)
{
	struct fake_mem *m = calloc(1, sizeof(*m));
	struct stat st;

	if (!m || fstat(fd, &st)) {
		free(m);
		close(fd);
		return fail(-ENOMEM, "out of memory");
	}
	m->fd = fd;
	m->size = st.st_size;
	*out = (struct devmem_mem *)m;
	return 0;
}

static int mem_import(struct devmem_mem **out, int fd)
{
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (dup < 0)
		return fail(-errno, "dup of the client's fd");
	return mem_new(out, dup);
}

static int mem_shared(struct devmem_mem **out, size_t size, unsigned int shift)
{
	int fd = memfd_create("fake-shared", MFD_CLOEXEC);

	(void)shift;
	if (fd < 0)
		return fail(-errno, "memfd_create");
	if (ftruncate(fd, size)) {
		close(fd);
		return fail(-ENOMEM, "ftruncate of the shared memfd");
	}
	return mem_new(out, fd);
}

static void mem_free(struct devmem_mem *mem)
{
	struct fake_mem *m = (struct fake_mem *)mem;

	if (!m)
		return;
	close(m->fd);
	free(m);
}

static size_t mem_size(const struct devmem_mem *mem)
{
	return ((const struct fake_mem *)mem)->size;
}

static int mem_fd(const struct devmem_mem *mem)
{
	return ((const struct fake_mem *)mem)->fd;
}

static int bind_rx(struct devmem_binding **out, struct devmem_nic *nic, struct devmem_mem *mem,
		   const unsigned int *queues, unsigned int n, uint32_t page_size)
{
	struct fake_binding *b;

	(void)queues;
	if (!nic || !mem || !n)
		return fail(-EINVAL, "bind without a NIC, memory or queues");
	if (page_size & (page_size - 1))
		return fail(-EINVAL, "page size not a power of 2");
	b = calloc(1, sizeof(*b));
	if (!b)
		return fail(-ENOMEM, "out of memory");
	b->id = next_id++;
	b->page_size = page_size ? page_size : (uint32_t)sysconf(_SC_PAGESIZE);
	*out = (struct devmem_binding *)b;
	return 0;
}

static void unbind(struct devmem_binding *b)
{
	free(b);
}

static uint32_t binding_id(const struct devmem_binding *b)
{
	return ((const struct fake_binding *)b)->id;
}

static uint32_t binding_page_size(const struct devmem_binding *b)
{
	return ((const struct fake_binding *)b)->page_size;
}

static int flow_add(struct devmem_nic *nic, const struct devmem_flow *flow,
		    const struct devmem_flow_target *t, uint32_t *rule)
{
	(void)flow;
	(void)t;
	if (!nic)
		return fail(-ENODEV, "no NIC");
	*rule = next_id++;
	fake_rules++;
	return 0;
}

static int flow_del(struct devmem_nic *nic, uint32_t rule)
{
	(void)nic;
	(void)rule;
	fake_rules--;
	return 0;
}

/* A memfd is this layer's dma-buf; anything else is refused, as by dmabuf.c. */
static int dmabuf_check(int fd, char *why, size_t len)
{
	char path[64], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0 || (link[n] = 0, strncmp(link, "/memfd:", 7))) {
		snprintf(why, len, "the fd attached is not a (fake) dma-buf");
		return -EBADF;
	}
	return 0;
}

static const char *last_error(void)
{
	return error;
}

const struct rdpm_nic_ops fake_nic_ops = {
	.mem_import = mem_import,
	.mem_shared = mem_shared,
	.mem_free = mem_free,
	.mem_size = mem_size,
	.mem_fd = mem_fd,
	.bind_rx = bind_rx,
	.unbind = unbind,
	.binding_id = binding_id,
	.binding_page_size = binding_page_size,
	.flow_add = flow_add,
	.flow_del = flow_del,
	.dmabuf_check = dmabuf_check,
	.last_error = last_error,
};
