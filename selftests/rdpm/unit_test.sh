#!/bin/bash
# Host unit tests of rdpmd's request and configuration parsers
# (rdpm/tests/t_*.c), built with ASan and UBSan; every program must pass.
set -u
cd "$(dirname "$0")/../../rdpm/tests" || exit 1
export ASAN_OPTIONS=detect_leaks=1
make -s all || exit 1
fails=0 n=0
for t in t_*.c; do
	n=$((n + 1))
	if ./"${t%.c}"; then echo "ok: ${t%.c}"; else echo "FAIL: ${t%.c}"; fails=$((fails + 1)); fi
done
[ $n -gt 0 ] || { echo "FAIL: no unit tests found"; exit 1; }
echo "$((n - fails)) of $n unit test programs passed"
[ $fails = 0 ]
