#!/bin/bash
# kcheck finds kernel problems after the marker, ignores what came before,
# and judges taint changes.
set -u
cd "$(dirname "$0")" || exit 1
kcheck=../vm/kcheck
fails=0
expect() { # expect RC DESCRIPTION -- CMD...
	local want=$1 what=$2 got out
	shift 3
	out=$("$@" 2>&1); got=$?
	if [ "$got" = "$want" ]; then
		echo "ok: $what"
	else
		echo "FAIL: $what: exit $got, expected $want"; printf '%s\n' "$out"
		fails=$((fails + 1))
	fi
}
m="devtcp-vm: begin"
expect 0 "clean log after the marker passes" -- $kcheck --since "$m" < logs/clean.log
expect 1 "a WARNING before the marker counts without --since" -- $kcheck < logs/clean.log
expect 1 "WARNING is reported" -- $kcheck --since "$m" < logs/warn.log
expect 1 "page pool stall is reported" -- $kcheck --since "$m" < logs/pool-stall.log
expect 1 "NULL dereference Oops is reported" -- $kcheck --since "$m" < logs/oops.log
expect 0 "O and E taints from insmod are allowed" -- $kcheck --taint 0 12288 < /dev/null
expect 1 "W taint gained fails" -- $kcheck --taint 12288 12800 < /dev/null
expect 0 "taint present before the run is not blamed" -- $kcheck --taint 512 12800 < /dev/null
expect 0 "the upstream udmabuf DMA-API warning (debug kernel) is printed, not counted, W taint too" \
	-- $kcheck --since "$m" --taint 4096 4608 < logs/udmabuf-warn.log
expect 1 "a DMA-API warning from anywhere else fails" -- $kcheck --since "$m" < logs/dma-warn.log
expect 1 "... and the udmabuf one does not excuse another WARNING" \
	-- $kcheck --since "$m" --taint 4096 4608 < logs/udmabuf-and-warn.log
expect 2 "unknown option is a usage error" -- $kcheck --bogus < /dev/null

out=$($kcheck --since "$m" < logs/warn.log)
if grep -q 'kernel problem: .*WARNING: devtcp_harness_warn.c:12' <<< "$out" &&
   grep -q 'end trace' <<< "$out" && ! grep -q 'devtcp-vm: end' <<< "$out"; then
	echo "ok: the excerpt holds the warning through its trace, not beyond"
else
	echo "FAIL: excerpt:"; printf '%s\n' "$out"; fails=$((fails + 1))
fi
out=$($kcheck --since "$m" < logs/pool-stall-tests.log)
if grep -q 'destroyed at about 377 s, during selftests/ompi/mpi.sh (teardown of ns1 ns2)' <<< "$out"; then
	echo "ok: a stalled pool names the test and phase it was destroyed in"
else
	echo "FAIL: no test named for the stalled pool:"; printf '%s\n' "$out"; fails=$((fails + 1))
fi
[ $fails = 0 ]
