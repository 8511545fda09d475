#!/bin/bash
# Fuzzes libdevmem's receive path with libFuzzer (clang, ASan, UBSan), each
# target for a bounded time (DEVMEM_FUZZ_SECONDS, default 20) from the
# corpora in the tree (userspace/libdevmem/fuzz/corpus, corpus_rx):
# fuzz_cmsg, the cmsg parser (devmem_rx_parse_next), and fuzz_rx, the token
# handling (every dma-buf token returned exactly once). Any crash, sanitizer
# report or broken invariant fails. `make -C userspace/libdevmem fuzz` runs
# them for 10 minutes each.
set -u
cd "$(dirname "$0")/../fuzz" || exit 1
clang=$(command -v clang-14 || command -v clang) ||
	{ echo "SKIP: no clang on this host (apt-get install clang)"; exit 4; }
make -s fuzz_cmsg fuzz_rx CLANG="$clang" || { echo "FAIL: building the fuzzers"; exit 1; }
[ -n "$(ls corpus)" ] && [ -n "$(ls corpus_rx)" ] || { echo "FAIL: empty corpus"; exit 1; }
out=$(make -s run FUZZ_SECONDS="${DEVMEM_FUZZ_SECONDS:-20}" 2>&1)
rc=$?
echo "$out" | grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" || true
if [ $rc != 0 ]; then
	echo "$out" | tail -40
	echo "FAIL: a fuzzer found a crash"
	exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<< "$out")
[ "$(wc -l <<< "$runs")" = 2 ] || { echo "FAIL: not both fuzzers ran"; exit 1; }
for r in $runs; do
	[ "$r" -gt 1000 ] || { echo "FAIL: a fuzzer barely ran ($r runs)"; exit 1; }
done
echo "ok: fuzz_cmsg and fuzz_rx ran" $runs "times without a crash"
