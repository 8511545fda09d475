#!/bin/bash
# Fuzzes btl/devtcp's hello and frame checks and its control-connection
# reader (devtcp_ctrl_step) with libFuzzer (clang, ASan, UBSan) for a
# bounded time (OMPI_FUZZ_SECONDS, default 20) from the corpus in the tree
# (ompi/fuzz/corpus); any crash, sanitizer report or broken invariant
# fails. `make -C ompi fuzz` runs it longer.
set -u
cd "$(dirname "$0")/../fuzz" || exit 1
clang=$(command -v clang-14 || command -v clang) ||
	{ echo "SKIP: no clang on this host (apt-get install clang)"; exit 4; }
make -s fuzz_wire CLANG="$clang" || { echo "FAIL: building the fuzzer"; exit 1; }
[ -n "$(ls corpus)" ] || { echo "FAIL: empty corpus"; exit 1; }
out=$(make -s run FUZZ_SECONDS="${OMPI_FUZZ_SECONDS:-20}" 2>&1)
rc=$?
echo "$out" | grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" || true
if [ $rc != 0 ]; then
	echo "$out" | tail -40
	echo "FAIL: the fuzzer found a crash"
	exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<< "$out")
[ "${runs:-0}" -gt 1000 ] || { echo "FAIL: the fuzzer barely ran ($runs runs)"; exit 1; }
echo "ok: $runs runs without a crash"
