#!/bin/bash
# fuzz_run.sh DIR SECONDS TARGET:CORPUS:MAX_LEN...
# Builds each libFuzzer target with DIR's Makefile (clang, ASan, UBSan) and
# fuzzes it for SECONDS from CORPUS, a directory kept in the tree (new
# inputs go to a scratch directory, never into it). Prints each target's
# executions; a crash, a sanitizer report, a broken invariant (the target
# aborts) or a target that barely ran fails. Every fuzz_test.sh and
# `make fuzz` run through here.
set -u
dir=$1 seconds=$2
shift 2
cd "$dir" || exit 1
clang=$(command -v clang-14 || command -v clang) ||
	{ echo "SKIP: no clang on this host (apt-get install clang)"; exit 4; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for spec in "$@"; do
	IFS=: read -r target corpus max_len <<< "$spec"
	make -s "$target" CLANG="$clang" || { echo "FAIL: building $target"; exit 1; }
	[ -n "$(ls "$corpus")" ] || { echo "FAIL: $dir/$corpus is empty"; exit 1; }
	mkdir "$scratch/$target"
	out=$("./$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=5 \
		-artifact_prefix="$scratch/" -print_final_stats=1 "$scratch/$target" "$corpus" 2>&1)
	rc=$?
	grep -E "^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" <<< "$out"
	if [ $rc != 0 ]; then
		grep -v "^<[0-7]>" <<< "$out" | tail -40
		echo "FAIL: $target crashed (the input is the Base64 line above; from $dir/$corpus)"
		exit 1
	fi
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' <<< "$out")
	[ "${runs:-0}" -gt 1000 ] || { echo "FAIL: $target barely ran (${runs:-0} runs)"; exit 1; }
	echo "ok: $target: $runs runs, 0 crashes"
done
