#!/bin/bash
# Host tests of libdevcoll (userspace/libdevcoll/tests/t_*.c), built with ASan
# and UBSan against the library's sources: the collective matrix over
# loopback (world sizes 1..8, sampled; DEVCOLL_FULL=1 for all of it), the
# 64 MiB allreduce, non-blocking overlap, killed peers, mismatches, timeouts,
# the vector fp16/bf16 reductions against the portable loops.
set -u
cd "$(dirname "$0")/../../userspace/libdevcoll/tests" || exit 1
export ASAN_OPTIONS=detect_leaks=1
make -s -C ../../libdevmem >/dev/null || exit 1
make -s all || exit 1
fails=0 n=0
skips=0
for t in t_*.c; do
	n=$((n + 1))
	timeout 600 ./"${t%.c}"
	case $? in
	0) echo "ok: ${t%.c}" ;;
	4) echo "SKIP: ${t%.c} (it says why above)"; skips=$((skips + 1)) ;;
	*) echo "FAIL: ${t%.c}"; fails=$((fails + 1)) ;;
	esac
done
[ $n -gt 0 ] || { echo "FAIL: no unit tests found"; exit 1; }
echo "$((n - fails - skips)) of $n unit test programs passed, $skips skipped"
[ $fails = 0 ]
