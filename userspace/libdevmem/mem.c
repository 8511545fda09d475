// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Memory to receive into and send from, always a dma-buf: udmabuf over a
 * sealed memfd, a dma-heap buffer, or CUDA device memory (cuda.c). Host
 * memory is mapped once; CPU access goes through DMA_BUF_IOCTL_SYNC.
 */
#define _GNU_SOURCE	/* memfd_create, fallocate, F_ADD_SEALS */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB	(21u << 26)	/* log2(2 MiB) << MFD_HUGE_SHIFT */
#endif

#define HUGE_2M		(2ul << 20)

struct devmem_mem {
	enum devmem_mem_kind kind;
	int fd;			/* the dma-buf */
	size_t size;
	void *map;		/* host memory: the whole dma-buf, shared */
	struct devmem_cuda *cuda;
};

/* "3 GiB", "64 MiB", "12 KiB" when exact, else bytes: for messages. */
struct size_str {
	char buf[32];
};

static const char *size_str(size_t size, struct size_str *s)
{
	if (size && !(size % (1ul << 30)))
		snprintf(s->buf, sizeof(s->buf), "%zu GiB", size >> 30);
	else if (size && !(size % (1ul << 20)))
		snprintf(s->buf, sizeof(s->buf), "%zu MiB", size >> 20);
	else if (size && !(size % 1024))
		snprintf(s->buf, sizeof(s->buf), "%zu KiB", size >> 10);
	else
		snprintf(s->buf, sizeof(s->buf), "%zu bytes", size);
	return s->buf;
}

/* Rounds @size up to @align (a power of two); false when it overflows. */
static bool round_size(size_t *size, size_t align)
{
	if (*size > SIZE_MAX - (align - 1))
		return false;
	*size = (*size + align - 1) & ~(align - 1);
	return true;
}

/* A number from a one-line file (sysfs, procfs), or -1. */
static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int new_mem(struct devmem_mem **out, enum devmem_mem_kind kind, int fd, size_t size,
		   bool map)
{
	struct devmem_mem *mem = calloc(1, sizeof(*mem));
	struct size_str s;
	int ret;

	if (!mem) {
		close(fd);
		return devmem_fail(-ENOMEM, "dma-buf of %s: out of host memory",
				   size_str(size, &s));
	}
	mem->kind = kind;
	mem->fd = fd;
	mem->size = size;
	if (map) {
		mem->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (mem->map == MAP_FAILED) {
			ret = devmem_fail_errno(-errno, "mmap of the dma-buf of %s",
						size_str(size, &s));
			close(fd);
			free(mem);
			return ret;
		}
	}
	*out = mem;
	return 0;
}

/* Fills pages of a hugetlb memfd now, so that a shortage shows here with
 * its cause rather than as a failed pin inside UDMABUF_CREATE. */
static int reserve_huge(int memfd, size_t size)
{
	struct size_str s;
	long free_pages;
	int err;

	/* Counted before: a failed fallocate keeps what it got until close. */
	free_pages = read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
	if (!fallocate(memfd, 0, 0, size))
		return 0;
	err = -errno;
	if (err == -ENOSPC || err == -ENOMEM)
		return devmem_fail(err, "udmabuf of %s: %s: no free 2 MiB huge pages for it (%ld free, %zu needed: echo N > /proc/sys/vm/nr_hugepages)",
				   size_str(size, &s), strerror(-err), free_pages, size / HUGE_2M);
	return devmem_fail_errno(err, "udmabuf of %s: fallocate of its hugetlb memfd",
				 size_str(size, &s));
}

/*
 * udmabuf refuses buffers above its size_limit_mb parameter with a bare
 * errno; checking here first names the limit and touches no memory.
 */
static int udmabuf_size_ok(size_t size)
{
	long limit = read_long("/sys/module/udmabuf/parameters/size_limit_mb");
	struct size_str s;

	if (limit > 0 && size > (size_t)limit << 20)
		return devmem_fail(-E2BIG, "udmabuf of %s: larger than udmabuf allows (udmabuf's size_limit_mb module parameter is %ld MiB: raise it in /sys/module/udmabuf/parameters/size_limit_mb)",
				   size_str(size, &s), limit);
	return 0;
}

static int sync_buf(struct devmem_mem *mem, unsigned int dir, bool start);

DEVMEM_EXPORT int devmem_mem_udmabuf(struct devmem_mem **out, size_t size, unsigned int flags)
{
	bool huge = flags & DEVMEM_MEM_HUGEPAGES;
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC };
	size_t rsize = size;
	struct size_str s;
	int devfd, memfd, fd, ret;

	if (!out)
		return devmem_fail(-EINVAL, "udmabuf: out is NULL");
	if (flags & ~DEVMEM_MEM_HUGEPAGES)
		return devmem_fail(-EINVAL, "udmabuf: unknown flags 0x%x (only DEVMEM_MEM_HUGEPAGES)",
				   flags);
	if (!size)
		return devmem_fail(-EINVAL, "udmabuf: size 0 (ask for at least one byte)");
	if (!round_size(&rsize, huge ? HUGE_2M : (size_t)sysconf(_SC_PAGESIZE)))
		return devmem_fail(-EINVAL, "udmabuf of %zu bytes: too large", size);

	ret = udmabuf_size_ok(rsize);
	if (ret)
		return ret;
	devfd = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (devfd < 0) {
		if (errno == ENOENT)
			return devmem_fail(-ENOENT, "/dev/udmabuf: %s (load the udmabuf module: modprobe udmabuf)",
					   strerror(ENOENT));
		return devmem_fail_errno(-errno, "open /dev/udmabuf");
	}
	memfd = memfd_create("devmem", MFD_CLOEXEC | MFD_ALLOW_SEALING |
				       (huge ? MFD_HUGETLB | MFD_HUGE_2MB : 0));
	if (memfd < 0) {
		ret = devmem_fail_errno(-errno, "udmabuf of %s: memfd_create%s",
					size_str(rsize, &s),
					huge ? " with 2 MiB huge pages (MFD_HUGETLB | MFD_HUGE_2MB)" : "");
		goto out_dev;
	}
	if (ftruncate(memfd, rsize)) {
		ret = devmem_fail_errno(-errno, "udmabuf of %s: ftruncate of its memfd",
					size_str(rsize, &s));
		goto out_memfd;
	}
	if (huge) {
		ret = reserve_huge(memfd, rsize);
		if (ret)
			goto out_memfd;
	}
	/* udmabuf refuses memfds that could shrink under it. */
	if (fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		ret = devmem_fail_errno(-errno, "udmabuf of %s: sealing its memfd (F_SEAL_SHRINK)",
					size_str(rsize, &s));
		goto out_memfd;
	}
	create.memfd = memfd;
	create.size = rsize;
	fd = ioctl(devfd, UDMABUF_CREATE, &create);
	if (fd < 0) {
		ret = devmem_fail_errno(-errno, "udmabuf of %s: UDMABUF_CREATE",
					size_str(rsize, &s));
		goto out_memfd;
	}
	/* The dma-buf holds the memfd's pages; our descriptors can go. */
	ret = new_mem(out, DEVMEM_MEM_UDMABUF, fd, rsize, true);
	/*
	 * udmabuf builds the table it syncs CPU access through at the first
	 * DMA_BUF_IOCTL_SYNC, without a lock (begin_cpu_udmabuf): two first
	 * syncs at once, by processes sharing the buffer (rdpmd's shared one)
	 * or by threads, build one each and one of them leaks. So it is built
	 * here, while only the creator holds the buffer. A failure shows
	 * again, with its reason, at devmem_cpu_begin().
	 */
	if (!ret && !sync_buf(*out, DEVMEM_CPU_READ, true))
		sync_buf(*out, DEVMEM_CPU_READ, false);
out_memfd:
	close(memfd);
out_dev:
	close(devfd);
	return ret;
}

/* "system, foo" for messages: the heaps this kernel offers. */
static void list_heaps(char *buf, size_t cap)
{
	DIR *d = opendir("/dev/dma_heap");
	struct dirent *e;
	size_t n = 0;

	buf[0] = 0;
	if (!d)
		return;
	while ((e = readdir(d)) && n < cap) {
		if (e->d_name[0] == '.')
			continue;
		n += snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", e->d_name);
	}
	closedir(d);
}

static bool heap_name_ok(const char *name)
{
	return *name && strlen(name) <= NAME_MAX && !strchr(name, '/') && !strstr(name, "..") &&
	       strcmp(name, ".");
}

DEVMEM_EXPORT int devmem_mem_heap(struct devmem_mem **out, const char *heap, size_t size)
{
	struct dma_heap_allocation_data alloc = { .fd_flags = O_RDWR | O_CLOEXEC };
	const char *name = heap ? heap : "system";
	char path[sizeof("/dev/dma_heap/") + NAME_MAX], heaps[256];
	size_t rsize = size;
	struct size_str s;
	int heapfd, err;

	if (!out)
		return devmem_fail(-EINVAL, "dma-heap: out is NULL");
	if (!heap_name_ok(name))
		return devmem_fail(-EINVAL, "dma-heap \"%.64s\": not a heap name (a name under /dev/dma_heap such as \"system\", without '/' or \"..\")",
				   name);
	if (!size)
		return devmem_fail(-EINVAL, "dma-heap %s: size 0 (ask for at least one byte)", name);
	if (!round_size(&rsize, (size_t)sysconf(_SC_PAGESIZE)))
		return devmem_fail(-EINVAL, "dma-heap %s: %zu bytes: too large", name, size);

	snprintf(path, sizeof(path), "/dev/dma_heap/%s", name);
	heapfd = open(path, O_RDONLY | O_CLOEXEC);
	if (heapfd < 0) {
		err = -errno;
		if (err != -ENOENT)
			return devmem_fail_errno(err, "open %s", path);
		list_heaps(heaps, sizeof(heaps));
		if (!heaps[0])
			return devmem_fail(err, "%s: %s (this kernel offers no dma-heaps: it needs CONFIG_DMABUF_HEAPS_SYSTEM)",
					   path, strerror(-err));
		return devmem_fail(err, "%s: %s (heaps here: %s)", path, strerror(-err), heaps);
	}
	alloc.len = rsize;
	if (ioctl(heapfd, DMA_HEAP_IOCTL_ALLOC, &alloc)) {
		err = devmem_fail_errno(-errno, "dma-heap %s: allocating %s (DMA_HEAP_IOCTL_ALLOC)",
					name, size_str(rsize, &s));
		close(heapfd);
		return err;
	}
	close(heapfd);
	return new_mem(out, DEVMEM_MEM_HEAP, alloc.fd, rsize, true);
}

DEVMEM_EXPORT int devmem_mem_cuda(struct devmem_mem **out, int device, size_t size)
{
	struct devmem_cuda *cuda;
	size_t rsize;
	int fd, ret;

	if (!out)
		return devmem_fail(-EINVAL, "CUDA memory: out is NULL");
	if (!size)
		return devmem_fail(-EINVAL, "CUDA memory: size 0 (ask for at least one byte)");
	ret = devmem_cuda_alloc(&cuda, device, size, &fd, &rsize);
	if (ret)
		return ret;
	ret = new_mem(out, DEVMEM_MEM_CUDA, fd, rsize, false);
	if (ret) {
		devmem_cuda_free(cuda);
		return ret;
	}
	(*out)->cuda = cuda;
	return 0;
}

/* A dma-buf fd from elsewhere, duplicated; mapped for the CPU with @map. */
static int import(struct devmem_mem **out, int fd, bool map)
{
	struct statfs sfs;
	off_t size;
	int dup_fd;

	if (!out)
		return devmem_fail(-EINVAL, "devmem_mem_import: out is NULL");
	/* Anything else (a memfd, a socket) would only fail later in bind-rx. */
	if (fstatfs(fd, &sfs))
		return devmem_fail_errno(-errno, "fd %d", fd);
	if (sfs.f_type != DMA_BUF_MAGIC)
		return devmem_fail(-EBADF, "fd %d is not a dma-buf", fd);
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0)
		return devmem_fail_errno(size ? -errno : -EINVAL, "dma-buf fd %d: its size", fd);
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup_fd < 0)
		return devmem_fail_errno(-errno, "dma-buf fd %d: dup", fd);
	return new_mem(out, DEVMEM_MEM_IMPORT, dup_fd, size, map);
}

DEVMEM_EXPORT int devmem_mem_import(struct devmem_mem **out, int fd)
{
	/* Not mapped: an importer may not be allowed to (CUDA memory). */
	return import(out, fd, false);
}

/* An imported dma-buf the CPU reads: one rdpmd shares (rdpm_join_shared). */
int devmem_mem_import_mapped(struct devmem_mem **out, int fd)
{
	return import(out, fd, true);
}

DEVMEM_EXPORT void devmem_mem_free(struct devmem_mem *mem)
{
	if (!mem)
		return;
	if (mem->map)
		munmap(mem->map, mem->size);
	/* The dma-buf first: importers keep their own reference. */
	close(mem->fd);
	devmem_cuda_free(mem->cuda);
	free(mem);
}

struct devmem_cuda *devmem_mem_cuda_part(struct devmem_mem *mem)
{
	return mem->cuda;
}

DEVMEM_EXPORT int devmem_mem_fd(const struct devmem_mem *mem)
{
	return mem ? mem->fd : -EINVAL;
}

DEVMEM_EXPORT size_t devmem_mem_size(const struct devmem_mem *mem)
{
	return mem ? mem->size : 0;
}

DEVMEM_EXPORT enum devmem_mem_kind devmem_mem_kind(const struct devmem_mem *mem)
{
	return mem->kind;
}

DEVMEM_EXPORT void *devmem_mem_cuda_ptr(struct devmem_mem *mem)
{
	const struct devmem_cuda_api *api;
	unsigned long long base;
	void *ctx;

	if (!mem || !mem->cuda)
		return NULL;
	devmem_cuda_where(mem->cuda, &base, &ctx, &api);
	return (void *)(uintptr_t)base;
}

static const char *kind_name(const struct devmem_mem *mem)
{
	switch (mem->kind) {
	case DEVMEM_MEM_UDMABUF: return "udmabuf";
	case DEVMEM_MEM_HEAP: return "dma-heap buffer";
	case DEVMEM_MEM_CUDA: return "CUDA memory";
	case DEVMEM_MEM_IMPORT: return "imported dma-buf";
	}
	return "memory";
}

/* DMA_BUF_IOCTL_SYNC for @dir; a signal or a busy fence only delays it. */
static int sync_buf(struct devmem_mem *mem, unsigned int dir, bool start)
{
	struct dma_buf_sync sync = { .flags = start ? DMA_BUF_SYNC_START : DMA_BUF_SYNC_END };

	if (dir & DEVMEM_CPU_READ)
		sync.flags |= DMA_BUF_SYNC_READ;
	if (dir & DEVMEM_CPU_WRITE)
		sync.flags |= DMA_BUF_SYNC_WRITE;
	while (ioctl(mem->fd, DMA_BUF_IOCTL_SYNC, &sync)) {
		if (errno != EINTR && errno != EAGAIN)
			return devmem_fail_errno(-errno, "%s (fd %d): DMA_BUF_IOCTL_SYNC %s",
						 kind_name(mem), mem->fd, start ? "start" : "end");
	}
	return 0;
}

static int check_cpu(struct devmem_mem *mem, unsigned int dir, const char *fn)
{
	if (!mem)
		return devmem_fail(-EINVAL, "%s: mem is NULL", fn);
	if (!dir || dir & ~(DEVMEM_CPU_READ | DEVMEM_CPU_WRITE))
		return devmem_fail(-EINVAL, "%s: direction 0x%x (use DEVMEM_CPU_READ and/or DEVMEM_CPU_WRITE)",
				   fn, dir);
	if (!mem->map)
		return devmem_fail(-EOPNOTSUPP, "%s: %s has no CPU mapping (use devmem_mem_read() and devmem_mem_write())",
				   fn, kind_name(mem));
	return 0;
}

DEVMEM_EXPORT void *devmem_cpu_begin(struct devmem_mem *mem, unsigned int dir)
{
	int ret = check_cpu(mem, dir, "devmem_cpu_begin");

	if (!ret)
		ret = sync_buf(mem, dir, true);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return mem->map;
}

DEVMEM_EXPORT int devmem_cpu_end(struct devmem_mem *mem, unsigned int dir)
{
	int ret = check_cpu(mem, dir, "devmem_cpu_end");

	return ret ? ret : sync_buf(mem, dir, false);
}

static int copy(struct devmem_mem *mem, uint64_t off, void *buf, size_t len, bool write)
{
	const char *fn = write ? "devmem_mem_write" : "devmem_mem_read";
	unsigned int dir = write ? DEVMEM_CPU_WRITE : DEVMEM_CPU_READ;
	int ret;

	if (!mem)
		return devmem_fail(-EINVAL, "%s: mem is NULL", fn);
	if (off > mem->size || len > mem->size - off)
		return devmem_fail(-EINVAL, "%s: %zu bytes at offset %llu: beyond the end of the %zu-byte %s",
				   fn, len, (unsigned long long)off, mem->size, kind_name(mem));
	if (!len)
		return 0;
	if (!buf)
		return devmem_fail(-EINVAL, "%s: %zu bytes from or to a NULL buffer", fn, len);
	if (mem->cuda)
		return devmem_cuda_copy(mem->cuda, off, buf, len, write);
	if (!mem->map)
		return devmem_fail(-EOPNOTSUPP, "%s: %s has no CPU mapping", fn, kind_name(mem));
	ret = sync_buf(mem, dir, true);
	if (ret)
		return ret;
	if (write)
		memcpy((char *)mem->map + off, buf, len);
	else
		memcpy(buf, (char *)mem->map + off, len);
	return sync_buf(mem, dir, false);
}

DEVMEM_EXPORT int devmem_mem_read(struct devmem_mem *mem, uint64_t off, void *dst, size_t len)
{
	return copy(mem, off, dst, len, false);
}

DEVMEM_EXPORT int devmem_mem_write(struct devmem_mem *mem, uint64_t off, const void *src, size_t len)
{
	return copy(mem, off, (void *)src, len, true);
}
