// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CUDA memory on a real GPU (run by userspace/libdevmem/tests/gpu_test.sh): the
 * dma-buf export, its size and exporter as the kernel reports them, copies
 * at odd offsets and lengths, bounds, two buffers kept apart, a device that
 * does not exist, and release: allocating and freeing 1 GiB more times than
 * the GPU has GiB must never run out.
 *
 *   gpu_cuda [GPU_MIB]    GPU_MIB: the device's memory (nvidia-smi), for
 *                         the release loop; without it the loop is skipped
 *
 * Exits 4 (skip) when there is no GPU, saying why.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devmem.h"
#include "devtcp/check.h"

#define MSG devmem_last_error()

static uint8_t pattern(size_t i, unsigned int seed)
{
	uint64_t x = (i / 8) * 0x9e3779b97f4a7c15ull + seed;

	return (uint8_t)(x >> (8 * (i % 8)));
}

/* The "key:" field of /proc/self/fdinfo/@fd, or "" when it has none. */
static void fdinfo(int fd, const char *key, char *val, size_t len)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	FILE *f;

	val[0] = 0;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		snprintf(val, len, "%s", line + klen + 1 + strspn(line + klen + 1, " \t"));
		val[strcspn(val, "\n")] = 0;
		break;
	}
	fclose(f);
}

/* What the kernel says of the fd: a dma-buf exported by NVIDIA's driver (nv_dmabuf),
 * of the memory's size. */
static void check_export(struct devmem_mem *m)
{
	int fd = devmem_mem_fd(m);
	char exp[64], size[32];

	fdinfo(fd, "exp_name", exp, sizeof(exp));
	fdinfo(fd, "size", size, sizeof(size));
	CHECK(!strcmp(exp, "nv_dmabuf"), "fd %d: exporter '%s', not nv_dmabuf", fd, exp);
	CHECK(strtoull(size, NULL, 10) == devmem_mem_size(m), "fd %d: dma-buf of %s bytes, memory %zu",
	      fd, size, devmem_mem_size(m));
	printf("dma-buf fd %d: exporter %s, %s bytes\n", fd, exp, size);
}

/* Writes the pattern in pieces of odd length at odd offsets, reads it back
 * whole. */
static void round_trip(struct devmem_mem *m, unsigned int seed)
{
	size_t size = devmem_mem_size(m), off, n, i, wrong = 0, piece = 4093;
	uint8_t *buf = malloc(size);
	int ret = 0;

	if (!buf)
		exit(1);
	for (i = 0; i < size; i++)
		buf[i] = pattern(i, seed);
	for (off = 0; off < size && !ret; off += n) {
		n = size - off < piece ? size - off : piece;
		ret = devmem_mem_write(m, off, buf + off, n);
		piece = piece * 3 + 1;
	}
	CHECK(ret == 0, "writes of the pattern: %d '%s'", ret, MSG);
	memset(buf, 0, size);
	ret = devmem_mem_read(m, 0, buf, size);
	CHECK(ret == 0, "read of %zu bytes: %d '%s'", size, ret, MSG);
	for (i = 0; i < size; i++)
		wrong += buf[i] != pattern(i, seed);
	CHECK(!wrong, "%zu of %zu bytes read back wrong", wrong, size);
	/* One byte at the last offset, and an unaligned piece in the middle. */
	ret = devmem_mem_read(m, size - 1, buf, 1);
	CHECK(ret == 0 && buf[0] == pattern(size - 1, seed), "last byte: %d", ret);
	ret = devmem_mem_read(m, 12345, buf, 777);
	for (i = 0, wrong = 0; i < 777; i++)
		wrong += buf[i] != pattern(12345 + i, seed);
	CHECK(ret == 0 && !wrong, "777 bytes at 12345: %d, %zu wrong", ret, wrong);
	free(buf);
}

static void bounds(struct devmem_mem *m)
{
	size_t size = devmem_mem_size(m);
	uint8_t b[2] = { 0 };
	int ret;

	ret = devmem_mem_read(m, size, b, 1);
	CHECK(ret == -EINVAL && strstr(MSG, "beyond the end"), "read past the end: %d '%s'", ret, MSG);
	ret = devmem_mem_write(m, size - 1, b, 2);
	CHECK(ret == -EINVAL && strstr(MSG, "beyond the end"), "write across the end: %d '%s'", ret,
	      MSG);
	ret = devmem_mem_write(m, UINT64_MAX, b, 2);
	CHECK(ret == -EINVAL, "write at UINT64_MAX: %d '%s'", ret, MSG);
	CHECK(!devmem_cpu_begin(m, DEVMEM_CPU_READ) && strstr(MSG, "no CPU mapping"),
	      "no CPU mapping: '%s'", MSG);
}

/* Two live buffers are two dma-bufs with their own contents. */
static void two_buffers(void)
{
	struct devmem_mem *a = NULL, *b = NULL;
	struct stat sa, sb;
	uint8_t x[4096];
	size_t i, wrong = 0;
	int ret;

	ret = devmem_mem_cuda(&a, 0, 8 << 20);
	CHECK(ret == 0, "first 8 MiB: %d '%s'", ret, MSG);
	ret = devmem_mem_cuda(&b, 0, 8 << 20);
	CHECK(ret == 0, "second 8 MiB: %d '%s'", ret, MSG);
	if (!a || !b)
		goto out;
	CHECK(fstat(devmem_mem_fd(a), &sa) == 0 && fstat(devmem_mem_fd(b), &sb) == 0 &&
	      sa.st_ino != sb.st_ino, "two dma-bufs (inodes %lu and %lu)", (unsigned long)sa.st_ino,
	      (unsigned long)sb.st_ino);
	round_trip(a, 7);
	round_trip(b, 8);
	ret = devmem_mem_read(a, 0, x, sizeof(x));
	for (i = 0; i < sizeof(x); i++)
		wrong += x[i] != pattern(i, 7);
	CHECK(ret == 0 && !wrong, "the first buffer kept its bytes after the second was written");
out:
	devmem_mem_free(a);
	devmem_mem_free(b);
}

/* Allocating and freeing 1 GiB more times than the GPU has GiB: a leak of
 * device memory (or of the export holding it) runs out before the end. */
static void release(unsigned long gpu_mib)
{
	unsigned long rounds = gpu_mib / 1024 + 8, i;
	struct devmem_mem *m;
	int ret = 0;

	for (i = 0; i < rounds && !ret; i++) {
		m = NULL;
		ret = devmem_mem_cuda(&m, 0, 1ul << 30);
		devmem_mem_free(m);
	}
	CHECK(ret == 0, "1 GiB allocated and freed %lu times on a %lu MiB GPU: failed at round %lu: %d '%s'",
	      rounds, gpu_mib, i, ret, MSG);
	printf("1 GiB allocated, exported and freed %lu times (the GPU has %lu MiB)\n", i, gpu_mib);
}

int main(int argc, char **argv)
{
	unsigned long gpu_mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	struct devmem_mem *m = NULL;
	int ret;

	ret = devmem_mem_cuda(&m, 0, 1);
	if (ret == -ENODEV) {
		return check_skip("no GPU: %s", MSG);
	}
	CHECK(ret == 0, "1 byte of CUDA memory: %d '%s'", ret, MSG);
	if (ret)
		return check_done("gpu_cuda");
	CHECK(devmem_mem_kind(m) == DEVMEM_MEM_CUDA, "kind %d", devmem_mem_kind(m));
	CHECK(devmem_mem_size(m) == (size_t)sysconf(_SC_PAGESIZE), "1 byte rounds to a page: %zu",
	      devmem_mem_size(m));
	check_export(m);
	devmem_mem_free(m);

	m = NULL;
	ret = devmem_mem_cuda(&m, 0, (3 << 20) + 5);
	CHECK(ret == 0, "3 MiB + 5 of CUDA memory: %d '%s'", ret, MSG);
	if (m) {
		check_export(m);
		round_trip(m, 1);
		bounds(m);
		devmem_mem_free(m);
	}
	two_buffers();

	m = NULL;
	ret = devmem_mem_cuda(&m, 64, 4096);
	CHECK(ret == -ENODEV && strstr(MSG, "device 64 does not exist (this host has"),
	      "device 64: %d '%s'", ret, MSG);
	printf("device 64: %s\n", MSG);
	CHECK(!m, "out written on failure");

	if (gpu_mib)
		release(gpu_mib);
	else
		printf("SKIP: release loop: the GPU's memory size was not given\n");
	return check_done("gpu_cuda");
}
