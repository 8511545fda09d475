#!/bin/bash
# devmem_unpack's GPU kernels (gpu/unpack.cu) on a real GPU, bit-compared
# with its CPU backend over random and recorded fragment layouts
# (gpu_unpack.c, with ASan and UBSan); GPU_UNPACK_BENCH=1 also prints the
# benchmark table (selftests/bench/gpu_unpack). Skipped, saying why, without nvcc or without an NVIDIA
# GPU and driver (CI has neither).
set -u
cd "$(dirname "$0")" || exit 1
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2> /dev/null)
if [ -z "$nvcc" ]; then
	echo "SKIP: no nvcc (CUDA toolkit): the GPU unpack kernels cannot be built here"
	exit 4
fi
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
	echo "SKIP: no NVIDIA GPU and driver: the GPU unpack kernels cannot run here"
	exit 4
fi
make -s gpu_unpack NVCC="$nvcc" || exit 1
nvidia-smi -i 0 --query-gpu=name,driver_version --format=csv,noheader
# The CUDA driver maps memory where ASan's shadow gap would be.
export ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0
./gpu_unpack || exit 1
[ "${GPU_UNPACK_BENCH:-0}" = 1 ] || exit 0
make -s gpu_unpack_bench NVCC="$nvcc" && ./gpu_unpack_bench bench
