// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * gpu_unpack's checks against the stand-in libcuda (fake_cuda.c), whose
 * "GPU" runs devmem_unpack's kernels as the CPU backend on a worker thread,
 * each launch late: unpack.c's GPU path (slots, events, the carry between
 * launches, linear bytes through the pinned scratch) and devmem_rx_unpack's
 * held fragments, where there is no GPU (CI). The real kernels run in
 * gpu_unpack_test.sh, on a GPU.
 */
#define GPU_UNPACK_FAKE 1
#include "gpu_unpack.c"
