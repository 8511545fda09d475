#!/bin/bash
# libdevcoll's collectives on CUDA device memory with a real GPU: t_cuda
# (userspace/libdevcoll/tests, ASan and UBSan) against the system's
# libcuda.so.1 rather than its stand-in. Skipped, saying why, on a host
# without an NVIDIA GPU and driver (CI has none; unit_test.sh runs t_cuda
# against the stand-in there).
set -u
cd "$(dirname "$0")" || exit 1
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
	echo "SKIP: no NVIDIA GPU (nvidia-smi finds none)"
	exit 4
fi
make -s -C ../../libdevmem > /dev/null || exit 1
make -s t_cuda || exit 1
nvidia-smi -i 0 --query-gpu=name,driver_version --format=csv,noheader
# The CUDA driver maps memory where ASan's shadow gap would be.
export ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0
DEVMEM_LIBCUDA=libcuda.so.1 ./t_cuda
