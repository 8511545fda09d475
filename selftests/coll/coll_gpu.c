// SPDX-License-Identifier: GPL-2.0
/*
 * One rank of coll/devmem.sh's GPU-buffer run (two ranks): messages of 1
 * byte to 16 MiB received with devcoll_recv() into CUDA device memory,
 * rank 1 from rank 0 and back, each copied to the host and checked
 * byte for byte; then fp32 allreduces on device buffers (staged), checked.
 * With a GPU dma-buf (DEVCOLL_DEVMEM_MEM=cuda) the receives go straight
 * into the device buffers; DEVCOLL_DEBUG=1 says how many bytes did. The
 * device memory comes from libcuda (DEVMEM_LIBCUDA: the tests' stand-in).
 * Exit 0 when every result is right.
 */
#include "common.h"
#include "gpu.h"

static unsigned char pattern(int from, size_t size, size_t i)
{
	return (unsigned char)(from * 101 + size * 7 + i * 13 + (i >> 9));
}

/* @size bytes from rank @from to the other, into device memory there. */
static int p2p(devcoll_comm *c, int from, size_t size, unsigned char *host, void *dev)
{
	int r = devcoll_comm_rank(c), ret;
	size_t bad = 0;

	if (r == from) {
		for (size_t i = 0; i < size; i++)
			host[i] = pattern(from, size, i);
		ret = gpu_copy(dev, host, size, GPU_TO_DEVICE);
		if (!ret)
			ret = devcoll_send(c, dev, size, DEVCOLL_UINT8, 1 - r, (uint32_t)size);
	} else {
		ret = devcoll_recv(c, dev, size, DEVCOLL_UINT8, from, (uint32_t)size);
		if (!ret)
			ret = gpu_copy(host, dev, size, GPU_TO_HOST);
		for (size_t i = 0; !ret && i < size; i++)
			bad += host[i] != pattern(from, size, i);
	}
	if (ret || bad)
		fprintf(stderr, "p2p %zu bytes from rank %d: %s (%zu wrong)\n", size, from,
			ret ? devcoll_last_error() : "", bad);
	return ret || bad;
}

int main(void)
{
	static const size_t sizes[] = { 1, 1000, 4096, 65537, 1u << 20, 16u << 20 };
	const size_t max = 16u << 20, n = 1u << 20;
	unsigned char *host = malloc(max);
	float *hf = malloc(n * sizeof(float));
	devcoll_comm *c;
	void *dev, *dsend;
	int fails = 0, ret;

	if (!host || !hf || gpu_open())
		return 1;
	dev = gpu_alloc(max);
	dsend = gpu_alloc(n * sizeof(float));
	if (!dev || !dsend)
		return 1;
	ret = devcoll_comm_init(&c, NULL);
	if (ret) {
		fprintf(stderr, "devcoll_comm_init: %s\n", devcoll_last_error());
		return 1;
	}
	if (devcoll_comm_size(c) != 2) {
		fprintf(stderr, "coll_gpu runs on 2 ranks\n");
		return 1;
	}
	for (int from = 0; from < 2; from++)
		for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			fails += p2p(c, from, sizes[i], host, dev);
	for (int k = 0; k < 3; k++) {
		int r = devcoll_comm_rank(c);
		size_t bad = 0;

		for (size_t i = 0; i < n; i++)
			hf[i] = (float)((i + (size_t)k) % 1024) * (float)(r + 1);
		ret = gpu_copy(dsend, hf, n * sizeof(float), GPU_TO_DEVICE);
		if (!ret)
			ret = devcoll_allreduce(c, dsend, dev, n, DEVCOLL_FP32, DEVCOLL_SUM);
		if (!ret)
			ret = gpu_copy(hf, dev, n * sizeof(float), GPU_TO_HOST);
		for (size_t i = 0; !ret && i < n; i++)
			bad += hf[i] != (float)((i + (size_t)k) % 1024) * 3.0f;
		if (ret || bad) {
			fprintf(stderr, "allreduce %d on device buffers: %s (%zu wrong)\n", k,
				ret ? devcoll_last_error() : "", bad);
			fails++;
		}
	}
	printf("coll_gpu rank %d: %d failures\n", devcoll_comm_rank(c), fails);
	devcoll_comm_destroy(c);
	gpu_free(dev);
	gpu_free(dsend);
	free(host);
	free(hf);
	return fails != 0;
}
