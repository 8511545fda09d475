/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda_bf16.h for the CPU build of gpu/unpack.cu: see host_cuda.h. */
#include "host_cuda.h"
