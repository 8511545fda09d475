// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Memory without special devices: argument checks and their messages, the
 * paths that find no /dev/udmabuf or dma-heap, CUDA without libcuda, with
 * the toolkit's stub library, and with a fake libcuda (fake_cuda.so) that
 * stands in for a GPU: allocation, alignment, copies, bounds, release.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "devtcp/check.h"

#define SENTINEL ((struct devmem_mem *)0x1)
#define HAS(s) (strstr(devmem_last_error(), (s)) != NULL)
#define MSG devmem_last_error()

static void args(void)
{
	static const char *bad_names[] = { "", "a/b", "../system", "..", ".", "sys..tem", "/system" };
	struct devmem_mem *m = SENTINEL;
	char long_name[300];
	size_t i;
	int ret;

	ret = devmem_mem_udmabuf(&m, 0, 0);
	CHECK(ret == -EINVAL && HAS("udmabuf: size 0"), "udmabuf size 0: %d '%s'", ret, MSG);
	CHECK(m == SENTINEL, "out written on failure");
	ret = devmem_mem_udmabuf(&m, 4096, 0x80);
	CHECK(ret == -EINVAL && HAS("unknown flags 0x80"), "udmabuf flags: %d '%s'", ret, MSG);
	ret = devmem_mem_udmabuf(&m, SIZE_MAX, DEVMEM_MEM_HUGEPAGES);
	CHECK(ret == -EINVAL && HAS("too large"), "udmabuf SIZE_MAX: %d '%s'", ret, MSG);
	ret = devmem_mem_heap(&m, NULL, 0);
	CHECK(ret == -EINVAL && HAS("dma-heap system: size 0"), "heap size 0: %d '%s'", ret, MSG);
	ret = devmem_mem_cuda(&m, 0, 0);
	CHECK(ret == -EINVAL && HAS("CUDA memory: size 0"), "cuda size 0: %d '%s'", ret, MSG);
	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		ret = devmem_mem_heap(&m, bad_names[i], 4096);
		CHECK(ret == -EINVAL && HAS("not a heap name"), "heap name '%s': %d '%s'",
		      bad_names[i], ret, MSG);
	}
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	ret = devmem_mem_heap(&m, long_name, 4096);
	CHECK(ret == -EINVAL && HAS("not a heap name"), "300-char heap name: %d '%s'", ret, MSG);
	CHECK(m == SENTINEL, "out written on failure");
	CHECK(devmem_mem_fd(NULL) == -EINVAL && devmem_mem_size(NULL) == 0, "NULL accessors");
	devmem_mem_free(NULL);
	errno = 0;
	CHECK(!devmem_cpu_begin(NULL, DEVMEM_CPU_READ) && errno == EINVAL, "cpu_begin(NULL)");
	CHECK(devmem_mem_read(NULL, 0, long_name, 1) == -EINVAL, "read(NULL)");
}

/* What this host lacks must fail with the cause and the remedy. */
static void missing_devices(void)
{
	struct devmem_mem *m = SENTINEL;
	int ret;

	ret = devmem_mem_heap(&m, "no-such-heap", 4096);
	if (access("/dev/dma_heap", F_OK))
		CHECK(ret == -ENOENT && !strcmp(MSG, "/dev/dma_heap/no-such-heap: No such file or directory (this kernel offers no dma-heaps: it needs CONFIG_DMABUF_HEAPS_SYSTEM)"),
		      "heap without /dev/dma_heap: %d '%s'", ret, MSG);
	else
		CHECK(ret == -ENOENT && HAS("no-such-heap: No such file or directory (heaps here: "),
		      "missing heap: %d '%s'", ret, MSG);
	if (access("/dev/udmabuf", F_OK)) {
		ret = devmem_mem_udmabuf(&m, 4096, 0);
		CHECK(ret == -ENOENT && !strcmp(MSG, "/dev/udmabuf: No such file or directory (load the udmabuf module: modprobe udmabuf)"),
		      "udmabuf without /dev/udmabuf: %d '%s'", ret, MSG);
	} else {
		printf("SKIP: /dev/udmabuf exists here: its absence is not tested (the VM test covers udmabuf)\n");
	}
	CHECK(m == SENTINEL, "out written on failure");
}

static void cuda_unloadable(void)
{
	static const char *stubs[] = {
		"/usr/local/cuda/lib64/stubs/libcuda.so",
		"/usr/local/cuda/lib/stubs/libcuda.so",
		"/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so",
	};
	struct devmem_mem *m = SENTINEL;
	const char *stub = NULL;
	size_t i;
	int ret;

	setenv("DEVMEM_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	ret = devmem_mem_cuda(&m, 0, 4096);
	CHECK(ret == -ENODEV && !strcmp(MSG, "CUDA memory: /nonexistent/libcuda.so.1 not found (no NVIDIA driver on this host)"),
	      "no libcuda: %d '%s'", ret, MSG);

	for (i = 0; i < sizeof(stubs) / sizeof(stubs[0]) && !stub; i++)
		if (!access(stubs[i], R_OK))
			stub = stubs[i];
	if (!stub) {
		printf("SKIP: no CUDA stub library under /usr/local/cuda: cuInit failure not tested\n");
		return;
	}
	setenv("DEVMEM_LIBCUDA", stub, 1);
	ret = devmem_mem_cuda(&m, 0, 4096);
	CHECK(ret == -ENODEV && HAS("CUDA memory: cuInit failed: CUDA_ERROR_STUB_LIBRARY"),
	      "stub libcuda %s: %d '%s'", stub, ret, MSG);
	CHECK(m == SENTINEL, "out written on failure");
	printf("stub libcuda (%s): '%s'\n", stub, MSG);
}

static int (*fake_retained)(void), (*fake_live_allocs)(void);

static void cuda_fake(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 16], buf[300], back[300];
	struct devmem_mem *m = SENTINEL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *lib;
	size_t i;
	int ret;

	CHECK(n > 0, "readlink /proc/self/exe");
	if (n <= 0)
		return;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/fake_cuda.so", dirname(exe));
	setenv("DEVMEM_LIBCUDA", path, 1);

	ret = devmem_mem_cuda(&m, 1, 4096);
	CHECK(ret == -ENODEV && HAS("device 1 does not exist (this host has 1 CUDA device, 0 to 0)"),
	      "device 1: %d '%s'", ret, MSG);
	ret = devmem_mem_cuda(&m, -1, 4096);
	CHECK(ret == -ENODEV && HAS("device -1 does not exist"), "device -1: %d '%s'", ret, MSG);
	setenv("FAKE_CUDA_NO_DMABUF", "1", 1);
	ret = devmem_mem_cuda(&m, 0, 4096);
	CHECK(ret == -EOPNOTSUPP && HAS("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0"),
	      "no dma-buf export: %d '%s'", ret, MSG);
	unsetenv("FAKE_CUDA_NO_DMABUF");
	CHECK(m == SENTINEL, "out written on failure");

	/* Odd size: rounded to pages; the fake's allocation is misaligned. */
	ret = devmem_mem_cuda(&m, 0, 5000);
	CHECK(ret == 0, "fake CUDA allocation: %d '%s'", ret, MSG);
	if (ret)
		return;
	lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	CHECK(lib, "fake_cuda.so loaded");
	if (lib) {
		*(void **)&fake_retained = dlsym(lib, "fake_cuda_retained");
		*(void **)&fake_live_allocs = dlsym(lib, "fake_cuda_live_allocs");
		CHECK(fake_retained() == 1 && fake_live_allocs() == 1, "held: %d ctx, %d allocs",
		      fake_retained(), fake_live_allocs());
	}
	CHECK(devmem_mem_kind(m) == DEVMEM_MEM_CUDA, "kind %d", devmem_mem_kind(m));
	CHECK(devmem_mem_size(m) == 8192, "size %zu", devmem_mem_size(m));
	CHECK(devmem_mem_cuda_ptr(m) && (uintptr_t)devmem_mem_cuda_ptr(m) % 4096 == 0,
	      "the device address %p, page-aligned as exported", devmem_mem_cuda_ptr(m));
	CHECK(!devmem_mem_cuda_ptr(NULL), "no device address for NULL");
	CHECK(devmem_mem_fd(m) >= 0 && (fcntl(devmem_mem_fd(m), F_GETFD) & FD_CLOEXEC),
	      "dma-buf fd %d, close-on-exec", devmem_mem_fd(m));
	errno = 0;
	CHECK(!devmem_cpu_begin(m, DEVMEM_CPU_READ) && errno == EOPNOTSUPP && HAS("no CPU mapping"),
	      "cpu_begin on CUDA memory: errno %d '%s'", errno, MSG);
	CHECK(devmem_cpu_end(m, DEVMEM_CPU_READ) == -EOPNOTSUPP, "cpu_end on CUDA memory");

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + 3);
	CHECK(devmem_mem_write(m, 8192 - sizeof(buf), buf, sizeof(buf)) == 0, "write at the end: '%s'", MSG);
	memset(back, 0, sizeof(back));
	CHECK(devmem_mem_read(m, 8192 - sizeof(buf), back, sizeof(back)) == 0, "read back: '%s'", MSG);
	CHECK(!memcmp(buf, back, sizeof(buf)), "data read back as written");

	ret = devmem_mem_read(m, 8192, back, 1);
	CHECK(ret == -EINVAL && HAS("devmem_mem_read: 1 bytes at offset 8192: beyond the end of the 8192-byte CUDA memory"),
	      "read past the end: %d '%s'", ret, MSG);
	ret = devmem_mem_write(m, 8192 - 10, buf, 11);
	CHECK(ret == -EINVAL && HAS("beyond the end"), "write across the end: %d '%s'", ret, MSG);
	ret = devmem_mem_write(m, UINT64_MAX, buf, 2);
	CHECK(ret == -EINVAL && HAS("beyond the end"), "write at UINT64_MAX: %d '%s'", ret, MSG);
	ret = devmem_mem_read(m, 1, back, SIZE_MAX);
	CHECK(ret == -EINVAL && HAS("beyond the end"), "read of SIZE_MAX: %d '%s'", ret, MSG);
	CHECK(devmem_mem_read(m, 8192, back, 0) == 0, "empty read at the end");
	ret = devmem_mem_write(m, 0, NULL, 4);
	CHECK(ret == -EINVAL && HAS("NULL buffer"), "write from NULL: %d '%s'", ret, MSG);

	devmem_mem_free(m);
	if (lib) {
		CHECK(fake_retained() == 0 && fake_live_allocs() == 0,
		      "after free still held: %d ctx, %d allocs", fake_retained(), fake_live_allocs());
		dlclose(lib);
	}
	unsetenv("DEVMEM_LIBCUDA");
}

int main(void)
{
	args();
	missing_devices();
	cuda_unloadable();
	cuda_fake();
	return check_done("t_mem");
}
