#!/bin/bash
# libdevmem's CUDA memory on a real GPU (userspace/libdevmem/tests/gpu_cuda.c,
# with ASan and UBSan): dma-buf export, copies, bounds, release. Skipped,
# saying why, on a host without an NVIDIA GPU and driver (CI has none).
set -u
cd "$(dirname "$0")" || exit 1
make -s gpu_cuda || exit 1
gpu_mib=
if command -v nvidia-smi > /dev/null; then
	gpu_mib=$(nvidia-smi -i 0 --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null |
		head -n 1)
	nvidia-smi -i 0 --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
fi
# The CUDA driver maps memory where ASan's shadow gap would be.
export ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0
./gpu_cuda $gpu_mib
