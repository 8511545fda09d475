// SPDX-License-Identifier: GPL-2.0
/*
 * libdevmem memory in the VM (driven by mem.sh): one case per run.
 *
 *   mem_test udmabuf SIZE | huge SIZE | heap SIZE
 *       allocate, write a pattern through devmem_cpu_begin(WRITE), read it
 *       back with devmem_mem_read() (and the reverse), check bounds, check
 *       the fd is a dma-buf of the right size and exporter in
 *       /sys/kernel/debug/dma_buf/bufinfo, free it and check it is gone
 *   mem_test fail udmabuf SIZE | huge SIZE | heap NAME SIZE | cpu-dir
 *       the call must fail; prints the error (mem.sh checks the message)
 *   mem_test race PROCS ROUNDS
 *       ROUNDS times: a 16 MiB udmabuf, and PROCS processes that start CPU
 *       access to it at once (the first syncs of a shared buffer, as rdpmd's
 *       clients make them); each must succeed. A udmabuf table built twice
 *       leaks, which kmemleak reports (make check-debug)
 *   mem_test cuda
 *       without a GPU: -ENODEV and why (prints a SKIP line for the GPU
 *       part); with one: the same round trip through the CUDA copies
 *
 * Prints "ok: ..." / "FAIL: ..." per check; exits 0 only if all held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devmem.h"

static int fails;

#define CHECK(cond, ...) do {					\
	if (cond) {						\
		printf("ok: ");					\
	} else {						\
		printf("FAIL: ");				\
		fails++;					\
	}							\
	printf(__VA_ARGS__);					\
	printf("\n");						\
} while (0)

static uint8_t pattern(size_t i, unsigned int seed)
{
	uint64_t x = (i / 8) * 0x9e3779b97f4a7c15ull + seed;

	return (uint8_t)(x >> (8 * (i % 8)));
}

/* The bufinfo line of the dma-buf with inode @ino: its size and exporter. */
static bool bufinfo(unsigned long ino, size_t *size, char exp[64])
{
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "re");
	char line[512];
	bool found = false;

	if (!f) {
		perror("/sys/kernel/debug/dma_buf/bufinfo");
		return false;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long i;
		unsigned int flags, mode;
		long count;

		if (sscanf(line, "%zu %x %x %ld %63s %lu", size, &flags, &mode, &count, exp, &i) == 6 &&
		    i == ino)
			found = true;
	}
	fclose(f);
	return found;
}

static void check_dmabuf(struct devmem_mem *mem, const char *exporter, unsigned long *ino)
{
	struct stat st;
	size_t size = 0;
	char exp[64] = "";

	CHECK(fstat(devmem_mem_fd(mem), &st) == 0, "fstat of the dma-buf fd %d", devmem_mem_fd(mem));
	*ino = st.st_ino;
	CHECK(bufinfo(*ino, &size, exp), "fd %d is in dma_buf/bufinfo (inode %lu)", devmem_mem_fd(mem),
	      *ino);
	CHECK(size == devmem_mem_size(mem), "bufinfo size %zu is the memory's %zu", size,
	      devmem_mem_size(mem));
	CHECK(!strcmp(exp, exporter), "exporter '%s' (expected '%s')", exp, exporter);
}

static void check_gone(unsigned long ino)
{
	size_t size;
	char exp[64];

	CHECK(!bufinfo(ino, &size, exp), "after devmem_mem_free the dma-buf (inode %lu) is gone", ino);
}

/* Reads and writes through both paths over the whole buffer. */
static void round_trip(struct devmem_mem *mem, bool cpu)
{
	size_t size = devmem_mem_size(mem), chunk = 1 << 20, off, i, bad = 0;
	uint8_t *buf = malloc(chunk), *map;
	int ret;

	if (!buf)
		exit(1);
	if (cpu) {
		map = devmem_cpu_begin(mem, DEVMEM_CPU_WRITE);
		CHECK(map, "devmem_cpu_begin(WRITE): %s", map ? "mapped" : devmem_last_error());
		if (!map)
			exit(1);
		for (i = 0; i < size; i++)
			map[i] = pattern(i, 1);
		ret = devmem_cpu_end(mem, DEVMEM_CPU_WRITE);
		CHECK(ret == 0, "devmem_cpu_end(WRITE): %s", ret ? devmem_last_error() : "0");
	} else {
		for (off = 0; off < size; off += chunk) {
			size_t n = size - off < chunk ? size - off : chunk;

			for (i = 0; i < n; i++)
				buf[i] = pattern(off + i, 1);
			if (devmem_mem_write(mem, off, buf, n))
				bad++;
		}
		CHECK(!bad, "devmem_mem_write of the pattern: %s", bad ? devmem_last_error() : "0");
	}
	for (off = 0, bad = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;

		ret = devmem_mem_read(mem, off, buf, n);
		if (ret) {
			printf("devmem_mem_read at %zu: %s\n", off, devmem_last_error());
			bad += n;
			continue;
		}
		for (i = 0; i < n; i++)
			bad += buf[i] != pattern(off + i, 1);
	}
	CHECK(!bad, "%zu bytes written, read back by devmem_mem_read (%zu wrong)", size, bad);

	/* And the other way: devmem_mem_write, seen through the mapping. */
	if (cpu) {
		for (i = 0; i < 4096; i++)
			buf[i] = pattern(i, 2);
		ret = devmem_mem_write(mem, size - 4096, buf, 4096);
		CHECK(ret == 0, "devmem_mem_write of the last page: %s",
		      ret ? devmem_last_error() : "0");
		map = devmem_cpu_begin(mem, DEVMEM_CPU_READ);
		CHECK(map && !memcmp(map + size - 4096, buf, 4096),
		      "devmem_cpu_begin(READ) sees what devmem_mem_write wrote");
		CHECK(devmem_cpu_end(mem, DEVMEM_CPU_READ) == 0, "devmem_cpu_end(READ)");
	}

	ret = devmem_mem_read(mem, size, buf, 1);
	CHECK(ret == -EINVAL, "a read past the end is refused: %s", devmem_last_error());
	ret = devmem_mem_write(mem, size - 1, buf, 2);
	CHECK(ret == -EINVAL, "a write across the end is refused: %s", devmem_last_error());
	free(buf);
}

static int alloc(const char *what, const char *heap, size_t size, struct devmem_mem **mem)
{
	if (!strcmp(what, "udmabuf"))
		return devmem_mem_udmabuf(mem, size, 0);
	if (!strcmp(what, "huge"))
		return devmem_mem_udmabuf(mem, size, DEVMEM_MEM_HUGEPAGES);
	if (!strcmp(what, "heap"))
		return devmem_mem_heap(mem, heap, size);
	fprintf(stderr, "mem_test: unknown kind %s\n", what);
	exit(2);
}

static void cuda(void)
{
	struct devmem_mem *mem = NULL;
	unsigned long ino;
	int ret = devmem_mem_cuda(&mem, 0, 3 << 20);

	if (ret == -ENODEV) {
		printf("ok: devmem_mem_cuda without a GPU: -ENODEV: %s\n", devmem_last_error());
		printf("SKIP: CUDA memory round trip: no GPU\n");
		return;
	}
	CHECK(ret == 0, "devmem_mem_cuda: %d %s", ret, ret ? devmem_last_error() : "");
	if (ret)
		return;
	CHECK(devmem_mem_kind(mem) == DEVMEM_MEM_CUDA && devmem_mem_size(mem) == 3 << 20,
	      "kind CUDA, size %zu", devmem_mem_size(mem));
	CHECK(!devmem_cpu_begin(mem, DEVMEM_CPU_READ) && errno == EOPNOTSUPP,
	      "no CPU mapping of CUDA memory: %s", devmem_last_error());
	round_trip(mem, false);
	check_dmabuf(mem, "nv_dmabuf", &ino);
	devmem_mem_free(mem);
	check_gone(ino);
}

static void race(int procs, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		struct devmem_mem *mem;
		int go[2], ok = 0;

		if (devmem_mem_udmabuf(&mem, 16 << 20, 0) || pipe(go)) {
			CHECK(0, "race round %d: udmabuf or pipe: %s", r, devmem_last_error());
			return;
		}
		for (int p = 0; p < procs; p++) {
			if (fork() == 0) {
				char c;

				close(go[1]);
				/* all wait here, then sync at once */
				_exit(read(go[0], &c, 1) != 0 || !devmem_cpu_begin(mem, DEVMEM_CPU_READ) ||
				      devmem_cpu_end(mem, DEVMEM_CPU_READ));
			}
		}
		close(go[0]);
		close(go[1]);
		for (int p = 0; p < procs; p++) {
			int st;

			if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
				ok++;
		}
		devmem_mem_free(mem);
		if (ok != procs) {
			CHECK(0, "race round %d: %d of %d processes synced", r, ok, procs);
			return;
		}
	}
	CHECK(1, "%d rounds of %d processes syncing a new udmabuf at once", rounds, procs);
}

int main(int argc, char **argv)
{
	struct devmem_mem *mem = NULL;
	unsigned long ino;
	int ret;

	if (argc == 2 && !strcmp(argv[1], "cuda")) {
		cuda();
	} else if (argc == 4 && !strcmp(argv[1], "race")) {
		race(atoi(argv[2]), atoi(argv[3]));
	} else if (argc >= 3 && !strcmp(argv[1], "fail")) {
		if (!strcmp(argv[2], "cpu-dir")) {
			ret = devmem_mem_udmabuf(&mem, 4096, 0);
			CHECK(ret == 0, "udmabuf for the direction checks: %s", devmem_last_error());
			if (ret)
				return 1;
			CHECK(!devmem_cpu_begin(mem, 0) && errno == EINVAL, "devmem_cpu_begin(0): %s",
			      devmem_last_error());
			CHECK(devmem_cpu_end(mem, 4) == -EINVAL, "devmem_cpu_end(4): %s",
			      devmem_last_error());
			devmem_mem_free(mem);
			return fails ? 1 : 0;
		}
		ret = alloc(argv[2], argc > 4 ? argv[3] : NULL, strtoull(argv[argc - 1], NULL, 0), &mem);
		if (!ret) {
			printf("FAIL: %s of %s bytes succeeded\n", argv[2], argv[argc - 1]);
			devmem_mem_free(mem);
			return 1;
		}
		printf("error %d: %s\n", ret, devmem_last_error());
		return 0;
	} else if (argc == 3) {
		size_t size = strtoull(argv[2], NULL, 0);

		ret = alloc(argv[1], NULL, size, &mem);
		CHECK(ret == 0, "%s of %zu bytes: %s", argv[1], size, ret ? devmem_last_error() : "0");
		if (ret)
			return 1;
		printf("size %zu, fd %d\n", devmem_mem_size(mem), devmem_mem_fd(mem));
		round_trip(mem, true);
		check_dmabuf(mem, !strcmp(argv[1], "heap") ? "system" : "udmabuf", &ino);
		devmem_mem_free(mem);
		check_gone(ino);
	} else {
		fprintf(stderr, "usage: see the comment at the top of mem_test.c\n");
		return 2;
	}
	return fails ? 1 : 0;
}
