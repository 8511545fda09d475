#!/bin/bash
# Fuzzes rdpmd with libFuzzer (clang, ASan, UBSan), each target for a
# bounded time (RDPM_FUZZ_SECONDS, default 15) from its corpus in the tree:
# by default the request parser (corpus/) and STEER's flow arithmetic
# (corpus_owner/); with the argument "daemon", the whole read path with fds
# on a fake NIC layer (fuzz_daemon_test.sh, corpus_daemon/, 30 s). Any
# crash, sanitizer report, leaked fd or broken invariant fails.
set -u
targets=(proto owner) seconds=${RDPM_FUZZ_SECONDS:-15}
[ "${1:-}" = daemon ] && targets=(daemon) seconds=${RDPM_FUZZ_SECONDS:-30}
cd "$(dirname "$0")/../fuzz" || exit 1
clang=$(command -v clang-14 || command -v clang) ||
	{ echo "SKIP: no clang on this host (apt-get install clang)"; exit 4; }
for t in "${targets[@]}"; do
	corpus=corpus_$t
	[ "$t" = proto ] && corpus=corpus
	make -s "fuzz_$t" CLANG="$clang" || { echo "FAIL: building fuzz_$t"; exit 1; }
	[ -n "$(ls "$corpus")" ] || { echo "FAIL: $corpus is empty"; exit 1; }
	out=$(make -s "run-$t" FUZZ_SECONDS="$seconds" 2>&1)
	rc=$?
	echo "$out" | grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" || true
	if [ $rc != 0 ]; then
		echo "$out" | grep -v "^<[0-7]>" | tail -40
		echo "FAIL: fuzz_$t found a crash"
		exit 1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<< "$out")
	[ "${runs:-0}" -gt 1000 ] || { echo "FAIL: fuzz_$t barely ran ($runs runs)"; exit 1; }
	echo "ok: fuzz_$t: $runs runs without a crash"
done
