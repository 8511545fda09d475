// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * devmem_unpack's GPU kernels (gpu/unpack.cu) built as CPU code, for the
 * stand-in libcuda (fake_cuda.c): a launch runs its grid one thread after
 * another. The kernels' threads share nothing they write, so this computes
 * what a GPU computes, and every test that compares the stand-in's results
 * with unpack_cpu.c (t_unpack_fake, t_rx, libdevcoll's) checks the kernels'
 * own code (whole words at any alignment, ragged ends, split elements) on
 * a host without a GPU.
 */
#include "host_cuda.h"
#include "../gpu/unpack.cu"

thread_local host_dim threadIdx, blockIdx, blockDim, gridDim;

extern "C" void fake_cuda_run_kernel(int reduce, unsigned int blocks, unsigned int threads,
				     const struct dm_unpack_launch *l,
				     const struct dm_unpack_frag *f)
{
	gridDim.x = blocks;
	blockDim.x = threads;
	for (unsigned int b = 0; b < blocks; b++) {
		for (unsigned int t = 0; t < threads; t++) {
			blockIdx.x = b;
			threadIdx.x = t;
			/* the entry points' bodies, the fragments
			 * wherever the stand-in keeps them */
			if (reduce)
				reduce_any(*l, f);
			else
				gather(*l, f);
		}
	}
}
