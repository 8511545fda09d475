#!/bin/bash
# Fuzzes rdpmd with libFuzzer (clang, ASan, UBSan) for a bounded time
# (RDPM_FUZZ_SECONDS, default 30) from a corpus in the tree: the request
# parser (fuzz_test.sh, corpus/) or, with the argument "daemon", the whole
# read path with fds on a fake NIC layer (fuzz_daemon_test.sh,
# corpus_daemon/). Any crash, sanitizer report, leaked fd or broken
# invariant fails.
set -u
target=fuzz_proto run=run corpus=corpus
[ "${1:-}" = daemon ] && target=fuzz_daemon run=run-daemon corpus=corpus_daemon
cd "$(dirname "$0")/../fuzz" || exit 1
clang=$(command -v clang-14 || command -v clang) ||
	{ echo "SKIP: no clang on this host (apt-get install clang)"; exit 4; }
make -s $target CLANG="$clang" || { echo "FAIL: building the fuzzer"; exit 1; }
[ -n "$(ls $corpus)" ] || { echo "FAIL: empty corpus"; exit 1; }
out=$(make -s $run FUZZ_SECONDS="${RDPM_FUZZ_SECONDS:-30}" 2>&1)
rc=$?
echo "$out" | grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" || true
if [ $rc != 0 ]; then
	echo "$out" | grep -v "^<[0-7]>" | tail -40
	echo "FAIL: the fuzzer found a crash"
	exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<< "$out")
[ "${runs:-0}" -gt 1000 ] || { echo "FAIL: the fuzzer barely ran ($runs runs)"; exit 1; }
echo "ok: $target: $runs runs without a crash"
