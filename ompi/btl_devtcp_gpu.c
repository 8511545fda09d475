// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Receiving from a devmem link whose dma-buf is GPU memory
 * (btl_devtcp_devmem_mem cuda), which the CPU cannot read. Debian's Open
 * MPI is built without CUDA support, so every buffer the PML hands us is
 * host memory: a payload is gathered by libdevmem's unpack kernels
 * (devmem_rx_unpack) into the peer's staging buffer in device memory,
 * batch after batch as it arrives, each batch's tokens going back once its
 * kernel has run; when a chunk of the staging buffer's size is complete,
 * one device-to-host copy brings it to its destination (a put's receive
 * buffer, or the message buffer the PML then reads).
 */
#include "btl_devtcp.h"

#include <errno.h>
#include <stdlib.h>

#include "devmem.h"

/* A put streams through the staging buffer in chunks of this much. */
#define DEVTCP_GPU_CHUNK (4u << 20)

struct devtcp_gpu {
	struct devmem_unpack *u;
	struct devmem_mem *stage;	/* device memory */
	size_t cap;
	size_t chunk_start, chunk_end;	/* the chunk being gathered; end 0: none */
};

void devtcp_gpu_free(struct mca_btl_base_endpoint_t *ep)
{
	struct devtcp_gpu *g = ep->gpu;

	if (!g)
		return;
	devmem_unpack_close(g->u);
	devmem_mem_free(g->stage);
	free(g);
	ep->gpu = NULL;
}

/* The peer's unpack handle and a staging buffer of at least @want bytes;
 * -1 (errno) when either cannot be had. */
static int gpu_ready(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep, size_t want)
{
	struct devtcp_gpu *g = ep->gpu;
	int ret = 0;

	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			errno = ENOMEM;
			return -1;
		}
		ep->gpu = g;
		ret = devmem_unpack_open(&g->u, devtcp_devmem_mem(m));
	}
	if (!ret && g->cap < want) {
		size_t cap = g->cap ? g->cap : 65536;

		while (cap < want)
			cap *= 2;
		devmem_mem_free(g->stage);
		g->stage = NULL;
		g->cap = 0;
		ret = devmem_mem_cuda(&g->stage, mca_btl_devtcp_component.devmem_cuda_device, cap);
		if (!ret)
			g->cap = cap;
	}
	if (ret) {
		devtcp_verbose(0, "devmem: GPU receive: %s", devmem_last_error());
		errno = -ret;
		return -1;
	}
	return 0;
}

/*
 * @len bytes of @rx's stream into host memory at @dst, ep->rx_done of them
 * already there: 1 when all are in, 0 later, -1 on error (errno; 0 for
 * EOF).
 */
int devtcp_gpu_recv(struct devtcp_module *m, struct mca_btl_base_endpoint_t *ep,
		    struct devmem_rx *rx, unsigned char *dst, size_t len)
{
	int ret;

	while (ep->rx_done < len) {
		struct devtcp_gpu *g = ep->gpu;
		ssize_t n;

		if (!g || !g->chunk_end) {
			size_t chunk = len - ep->rx_done;

			if (chunk > DEVTCP_GPU_CHUNK)
				chunk = DEVTCP_GPU_CHUNK;
			if (gpu_ready(m, ep, chunk) < 0)
				return -1;
			g = ep->gpu;
			ret = devmem_unpack_begin(g->u, devmem_mem_cuda_ptr(g->stage), chunk,
						  DEVMEM_UNPACK_INT32, DEVMEM_UNPACK_COPY, 1);
			if (ret)
				goto fail;
			g->chunk_start = ep->rx_done;
			g->chunk_end = ep->rx_done + chunk;
		}
		n = devmem_rx_unpack(rx, g->u, g->chunk_end - ep->rx_done, MSG_DONTWAIT);
		if (n == -EAGAIN)
			return 0;
		if (n <= 0) {
			if (n == 0 || n == -EPIPE) {
				errno = 0;
				return -1;
			}
			ret = (int)n;
			goto fail;
		}
		ep->rx_done += n;
		m->bytes_gpu += n;
		if (ep->rx_done < g->chunk_end)
			continue;
		/* the chunk is in the staging buffer once its kernels ran */
		ret = devmem_rx_unpack_wait(rx);
		if (!ret && dst)	/* NULL: a put whose region went */
			ret = devmem_mem_read(g->stage, 0, dst + g->chunk_start,
					      g->chunk_end - g->chunk_start);
		if (ret)
			goto fail;
		g->chunk_end = 0;
	}
	return 1;
fail:
	devtcp_verbose(0, "devmem: GPU receive: %s", devmem_last_error());
	errno = -ret;
	return -1;
}
