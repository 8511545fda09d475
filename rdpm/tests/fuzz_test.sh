#!/bin/bash
# Fuzzes rdpmd's request parser and STEER's flow arithmetic with libFuzzer
# (clang, ASan, UBSan), each for a bounded time (RDPM_FUZZ_SECONDS, default
# 15) from the corpora in the tree (rdpm/fuzz/corpus, corpus_owner); any
# crash, sanitizer report or broken invariant fails.
set -u
cd "$(dirname "$0")/../fuzz" || exit 1
clang=$(command -v clang-14 || command -v clang) ||
	{ echo "SKIP: no clang on this host (apt-get install clang)"; exit 4; }
make -s fuzz_proto fuzz_owner CLANG="$clang" || { echo "FAIL: building the fuzzer"; exit 1; }
[ -n "$(ls corpus)" ] && [ -n "$(ls corpus_owner)" ] || { echo "FAIL: empty corpus"; exit 1; }
out=$(make -s run FUZZ_SECONDS="${RDPM_FUZZ_SECONDS:-15}" 2>&1)
rc=$?
echo "$out" | grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" || true
if [ $rc != 0 ]; then
	echo "$out" | tail -40
	echo "FAIL: the fuzzer found a crash"
	exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<< "$out")
[ "$(wc -w <<< "$runs")" = 2 ] || { echo "FAIL: not both fuzzers reported ($runs)"; exit 1; }
for r in $runs; do
	[ "$r" -gt 1000 ] || { echo "FAIL: a fuzzer barely ran ($r runs)"; exit 1; }
done
echo "ok: $(tr '\n' ' ' <<< "$runs")runs (parser, flows) without a crash"
