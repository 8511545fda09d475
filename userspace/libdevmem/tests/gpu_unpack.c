// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devmem_unpack's GPU kernels on a real GPU (gpu_unpack_test.sh), against
 * the CPU backend, bit for bit: random fragment layouts and the recorded
 * devtcp one (data/frags-devtcp.txt), every type and operation, the
 * payload in CUDA memory exported as a dma-buf (devmem_mem_cuda). Then
 * nothing is left allocated on the device.
 *
 *   gpu_unpack            the comparison, then devmem_rx_unpack over a
 *                         loopback TCP pair into GPU memory (every byte
 *                         linear there: the scratch path, batches in flight)
 *   gpu_unpack bench      GB/s of gather and of sums against cuMemcpyDtoD
 *                         of the same bytes, fragments of 1-64 KiB and of
 *                         TCP segment sizes; one receive's latency
 */
#include <errno.h>
#include <time.h>
#include <sys/wait.h>

#include "devmem_cuda.h"
#include "devtcp/check.h"
#include "tcp_pair.h"
#include "unpack_check.h"

/* t_unpack_fake.c builds this against the stand-in libcuda: smaller runs,
 * its kernels being the CPU's. */
#ifdef GPU_UNPACK_FAKE
#define SCALE 8
#else
#define SCALE 1
#endif

static const struct devmem_cuda_api *cu;
static unsigned int compared;

static CUdeviceptr dev_alloc(size_t len)
{
	CUdeviceptr p = 0;

	if (cu->mem_alloc(&p, len))
		exit(3);
	return p;
}

static int put_image(void *image, uint64_t off, const void *p, uint32_t len)
{
	memcpy((unsigned char *)image + off, p, len);
	return 0;
}

static int put_mem(void *mem, uint64_t off, const void *p, uint32_t len)
{
	return devmem_mem_write(mem, off, p, len);
}

/* One layout, type and op on the GPU and on the CPU; 0 when they agree. */
static int compare(struct devmem_mem *mem, const struct uc_layout *L, unsigned int type,
		   unsigned int op, const char *layout)
{
	unsigned int avg_n = op == DEVMEM_UNPACK_AVG ? 3 : 1;
	size_t bytes = L->bytes, pos = 0;
	unsigned char *stream = malloc(bytes), *dst0 = malloc(bytes), *cpu_dst = malloc(bytes);
	unsigned char *gpu_dst = malloc(bytes), *image = calloc(1, UC_IMAGE);
	struct devmem_unpack *g, *c;
	struct devmem_frag *fr = malloc(L->nfrags * sizeof(*fr));
	CUdeviceptr d = dev_alloc(bytes);
	int ret = 0, diff = 0;
	size_t first = 0;

	uc_values(stream, bytes / uc_size(type), type);
	uc_values(dst0, bytes / uc_size(type), type);
	memcpy(cpu_dst, dst0, bytes);
	cu->memcpy_htod(d, dst0, bytes);
	if (devmem_unpack_open(&g, mem) || dm_unpack_open(&c, NULL, image, UC_IMAGE)) {
		printf("not ok: open: %s\n", devmem_last_error());
		exit(1);
	}
	devmem_unpack_begin(g, (void *)(uintptr_t)d, bytes, type, op, avg_n);
	devmem_unpack_begin(c, cpu_dst, bytes, type, op, avg_n);
	for (unsigned int b = 0; b < L->nbatches && !ret; b++) {
		const struct uc_batch *B = &L->batches[b];
		size_t at = pos;

		if (uc_place(L, B, stream, &pos, fr, put_image, image) ||
		    uc_place(L, B, stream, &at, fr, put_mem, mem))
			ret = -EIO;
		if (!ret && devmem_unpack_add(g, fr, B->n) != (int)b + 1)
			ret = -EIO;
		if (!ret && devmem_unpack_add(c, fr, B->n) != (int)b + 1)
			ret = -EIO;
		/* the image is rewritten for the next batch: this one must be done */
		if (!ret && devmem_unpack_completed(g, true) != (int)b + 1)
			ret = -EIO;
	}
	cu->memcpy_dtoh(gpu_dst, d, bytes);
	while (first < bytes && gpu_dst[first] == cpu_dst[first])
		first++;
	for (size_t i = 0; i < bytes; i++)
		diff += gpu_dst[i] != cpu_dst[i];
	compared++;
	CHECK(!ret && !diff, "%s %s %s: %zu bytes, %u fragments, %u batches: GPU = CPU "
	      "(%s; %d bytes differ, the first at %zu)", layout, uc_type_name[type],
	      uc_op_name[op], bytes, L->nfrags, L->nbatches, ret ? devmem_last_error() : "ran",
	      diff, first);
	devmem_unpack_close(g);
	devmem_unpack_close(c);
	cu->mem_free(d);
	free(fr);
	free(stream);
	free(dst0);
	free(cpu_dst);
	free(gpu_dst);
	free(image);
	return ret || diff;
}

static int check_all(struct devmem_mem *mem)
{
	struct uc_layout R[4] = { 0 }, D = { 0 };
	int rec;

	uc_random(&R[0], (4 << 20) / SCALE, 1, 0, 64);
	uc_random(&R[1], (1 << 20) / SCALE, 2, 0, 64);
	/* batches past DM_UNPACK_INLINE: their descriptors are copied */
	uc_random(&R[2], (6 << 20) / (SCALE > 1 ? 2 : 1), 3, 0, 600);
	uc_random(&R[3], (4 << 20) / SCALE, 4, 1, 64);	/* with linear bytes */
	rec = uc_recorded(&D, "data/frags-devtcp.txt", (6 << 20) / SCALE);
	CHECK(rec == 0, "the recorded devtcp layout loads");
	for (int i = 0; i < 4; i++)
		uc_trim(&R[i]);
	if (!rec)
		uc_trim(&D);
	for (unsigned int t = DEVMEM_UNPACK_INT32; t <= DEVMEM_UNPACK_FP64; t++) {
		for (unsigned int o = DEVMEM_UNPACK_COPY; o <= DEVMEM_UNPACK_AVG; o++) {
			if (o == DEVMEM_UNPACK_COPY && t)
				continue;	/* copying has no type */
			for (int i = 0; i < 4; i++)
				compare(mem, &R[i], t, o, i < 3 ? "random" : "mixed");
			if (!rec)
				compare(mem, &D, t, o, "recorded");
		}
	}
	printf("layouts: random %u/%u/%u fragments (the last in %u batches), mixed with linear "
	       "bytes %u, recorded %u (%u batches, %zu bytes); %u runs compared with the CPU\n",
	       R[0].nfrags, R[1].nfrags, R[2].nfrags, R[2].nbatches, R[3].nfrags, D.nfrags,
	       D.nbatches, D.bytes, compared);
	for (int i = 0; i < 4; i++) {
		free(R[i].frags);
		free(R[i].batches);
	}
	free(D.frags);
	free(D.batches);
	return 0;
}

/*
 * devmem_rx_unpack into device memory: 16 MB of fp32 from a forked writer
 * over loopback, summed (then copied) into a CUDA destination in receives
 * of random sizes, against the host's sum.
 */
static void rx_stream(struct devmem_mem *mem)
{
	const size_t n = (4u << 20) / SCALE, bytes = n * sizeof(float);
	float *vals = malloc(bytes), *base = malloc(bytes), *got = malloc(bytes);
	struct devmem_mem *dmem;
	struct devmem_unpack *u;
	CUdeviceptr d;

	for (size_t i = 0; i < n; i++) {
		vals[i] = (float)(i % 1000) * 0.25f;
		base[i] = (float)(i % 777) - 100.0f;
	}
	/* the destination is CUDA memory of libdevmem's, by its device address */
	if (devmem_mem_cuda(&dmem, 0, bytes) || devmem_unpack_open(&u, mem)) {
		printf("not ok: open: %s\n", devmem_last_error());
		exit(1);
	}
	d = (CUdeviceptr)(uintptr_t)devmem_mem_cuda_ptr(dmem);
	CHECK(d != 0, "devmem_mem_cuda_ptr gives the device address");
	for (int op = DEVMEM_UNPACK_SUM; op >= DEVMEM_UNPACK_COPY; op--) {
		struct devmem_rx *rx;
		int cli, srv, bad = 0, calls = 0;
		size_t have = 0;
		ssize_t r = 0;
		pid_t pid;

		cu->memcpy_htod(d, base, bytes);
		if (tcp_pair(&cli, &srv) || devmem_rx_open(&rx, srv, 0)) {
			CHECK(0, "loopback TCP pair");
			break;
		}
		pid = fork();
		if (!pid) {
			for (size_t off = 0; off < bytes; off += (size_t)r)
				if ((r = write(cli, (char *)vals + off, bytes - off)) <= 0)
					_exit(1);
			_exit(0);
		}
		close(cli);
		devmem_unpack_begin(u, (void *)(uintptr_t)d, bytes, DEVMEM_UNPACK_FP32, op, 1);
		srand(9);
		while (have < bytes) {
			r = devmem_rx_unpack(rx, u, 1 + (size_t)rand() % 300000, 0);
			if (r <= 0)
				break;
			have += (size_t)r;
			calls++;
		}
		CHECK(devmem_rx_unpack_wait(rx) == 0, "wait: %s", devmem_last_error());
		waitpid(pid, NULL, 0);
		CHECK(devmem_mem_read(dmem, 0, got, bytes) == 0, "read back: %s", devmem_last_error());
		for (size_t i = 0; i < n; i++)
			bad += got[i] != (op == DEVMEM_UNPACK_SUM ? base[i] + vals[i] : vals[i]);
		CHECK(have == bytes && !bad, "devmem_rx_unpack over TCP into GPU memory, %s: %zu of %zu "
		      "bytes in %d receives, %d elements wrong (%zd '%s')",
		      op == DEVMEM_UNPACK_SUM ? "fp32 sum" : "copy", have, bytes, calls, bad, r,
		      r < 0 ? devmem_last_error() : "");
		printf("devmem_rx_unpack into GPU memory, %s: %zu bytes in %d receives, %d wrong\n",
		       op == DEVMEM_UNPACK_SUM ? "fp32 sum" : "copy", have, calls, bad);
		devmem_rx_close(rx);
		close(srv);
	}
	devmem_unpack_close(u);
	devmem_mem_free(dmem);
	free(vals);
	free(base);
	free(got);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* GB/s of one operation over fragments @f (@n a batch, @batch bytes), as
 * many batches as make 1 GiB, into a destination of @span bytes at @d
 * over and over. */
static double rate(struct devmem_unpack *u, CUdeviceptr d, size_t span,
		   const struct devmem_frag *f, unsigned int n, size_t batch, unsigned int type,
		   unsigned int op)
{
	const size_t total = 1u << 30;
	size_t done = 0;
	double t;

	devmem_unpack_begin(u, (void *)(uintptr_t)d, span, type, op, 1);
	devmem_unpack_add(u, f, n);	/* warm up */
	devmem_unpack_completed(u, true);
	t = now();
	while (done < total) {
		size_t pos = 0;

		devmem_unpack_begin(u, (void *)(uintptr_t)d, span, type, op, 1);
		for (; pos + batch <= span && done < total; pos += batch, done += batch)
			if (devmem_unpack_add(u, f, n) < 0)
				exit(1);
	}
	devmem_unpack_completed(u, true);
	return done / (now() - t) / 1e9;
}

/* @n fragments of @size bytes, each at the start of its own page (as a
 * NIC places a segment's payload): the stream's bytes that follow a
 * fragment of, say, 1448 bytes lie 8 bytes off the dma-buf's alignment. */
static unsigned int layout(struct devmem_frag *f, size_t image, uint32_t size, size_t *batch)
{
	size_t stride = (size + 4095) & ~(size_t)4095;
	unsigned int n = DEVMEM_UNPACK_MAX_FRAGS;

	while ((size_t)n * stride > image)
		n /= 2;
	for (unsigned int i = 0; i < n; i++)
		f[i] = (struct devmem_frag){ .offset = i * stride, .len = size, .dmabuf_id = 1 };
	*batch = (size_t)n * size;
	return n;
}

/*
 * Gather and an fp32 sum on fragments of 1-64 KiB and of the TCP segment
 * sizes at MTU 1500 and 9000 (1448 and 8948 bytes), 4096 a launch; every
 * type's sum on 1448-byte fragments; a receive's worth (64 segments) a
 * launch, launches in flight; and what one such batch costs from
 * devmem_unpack_add() to its completion. Against cuMemcpyDtoD of the same
 * bytes.
 */
static void bench(struct devmem_mem *mem)
{
	static const uint32_t sizes[] = { 1024, 1448, 2048, 4096, 8192, 8948, 16384, 32768, 65536 };
	const size_t image = devmem_mem_size(mem), span = 256u << 20, total = 1u << 30;
	CUdeviceptr d = dev_alloc(span), s = dev_alloc(span);
	struct devmem_frag *f = calloc(DEVMEM_UNPACK_MAX_FRAGS, sizeof(*f));
	struct devmem_unpack *u;
	double t, cp;
	size_t batch;
	unsigned int n;

	if (devmem_unpack_open(&u, mem)) {
		printf("not ok: open: %s\n", devmem_last_error());
		exit(1);
	}
	cu->memcpy_dtod(d, s, span);
	cu->stream_synchronize(NULL);
	t = now();
	for (size_t done = 0; done < total; done += span)
		cu->memcpy_dtod(d, s, span);
	cu->stream_synchronize(NULL);
	cp = total / (now() - t) / 1e9;
	printf("cuMemcpyDtoD: %.1f GB/s (bytes copied, each counted once)\n\n", cp);
	printf("%-9s %12s %12s %10s %10s\n", "fragment", "gather GB/s", "sum GB/s", "gather/cp",
	       "sum/cp");
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double g, sum;

		n = layout(f, image, sizes[i], &batch);
		g = rate(u, d, span, f, n, batch, DEVMEM_UNPACK_FP32, DEVMEM_UNPACK_COPY);
		sum = rate(u, d, span, f, n, batch, DEVMEM_UNPACK_FP32, DEVMEM_UNPACK_SUM);
		printf("%6u B  %12.1f %12.1f %9.2fx %9.2fx\n", sizes[i], g, sum, g / cp, sum / cp);
	}
	printf("\nsum by type, 1448-byte fragments:\n");
	n = layout(f, image, 1448, &batch);
	for (unsigned int type = DEVMEM_UNPACK_INT32; type <= DEVMEM_UNPACK_FP64; type++) {
		double sum = rate(u, d, span, f, n, batch, type, DEVMEM_UNPACK_SUM);

		printf("  %-6s %8.1f GB/s %9.2fx\n", uc_type_name[type], sum, sum / cp);
	}
	/* a receive's worth a launch, launches in flight as devmem_rx_unpack
	 * keeps them: what a receive path can sustain */
	printf("\nreceives of 64 x 1448 B, one launch each, in flight:\n");
	for (unsigned int op = DEVMEM_UNPACK_COPY; op <= DEVMEM_UNPACK_SUM; op++) {
		double r = rate(u, d, span, f, 64, 64 * 1448, DEVMEM_UNPACK_FP32, op);

		printf("  %-6s %8.1f GB/s %9.2fx\n", op ? "sum" : "gather", r, r / cp);
	}
	/* one receive's worth: the launch and its round trip, not the bytes */
	for (unsigned int op = DEVMEM_UNPACK_COPY; op <= DEVMEM_UNPACK_SUM; op++) {
		const int reps = 2000;

		t = now();
		for (int r = 0; r < reps; r++) {
			devmem_unpack_begin(u, (void *)(uintptr_t)d, span, DEVMEM_UNPACK_FP32, op, 1);
			if (devmem_unpack_add(u, f, 64) < 0 || devmem_unpack_completed(u, true) < 0)
				exit(1);
		}
		printf("%s one receive's batch (64 x 1448 B) to completion: %.1f us\n",
		       op == DEVMEM_UNPACK_COPY ? "\ngather:" : "sum:   ", (now() - t) / reps * 1e6);
	}
	devmem_unpack_close(u);
	cu->mem_free(d);
	cu->mem_free(s);
	free(f);
}

int main(int argc, char **argv)
{
	struct devmem_mem *mem;
	CUcontext ctx;
	CUdevice dev;

	setvbuf(stdout, NULL, _IOLBF, 0);
#ifdef GPU_UNPACK_FAKE
	setenv("DEVMEM_LIBCUDA", "./fake_cuda.so", 1);
	setenv("FAKE_CUDA_KERNEL_US", "20", 0);	/* launches that run late */
#endif
	if (devmem_cuda_load(false, &cu) != 1)
		return check_skip("no CUDA driver: %s", devmem_last_error());
	if (devmem_mem_cuda(&mem, 0, argc > 1 ? 512u << 20 : UC_IMAGE))
		return check_skip("no CUDA memory on device 0: %s", devmem_last_error());
	/* the test's own buffers in the same (primary) context */
	cu->device_get(&dev, 0);
	cu->primary_ctx_retain(&ctx, dev);
	cu->ctx_set_current(ctx);
	if (argc > 1 && !strcmp(argv[1], "bench")) {
		bench(mem);
	} else {
		check_all(mem);
		rx_stream(mem);
	}
	devmem_mem_free(mem);
	cu->primary_ctx_release(dev);
	return check_done("gpu_unpack");
}
