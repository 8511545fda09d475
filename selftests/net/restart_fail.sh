#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A channel or ring change whose queues cannot start again. The request's
# kernel allocations fail one at a time (fail-nth, CONFIG_FAULT_INJECTION:
# the debug kernel of `make check-debug`; see sweep for how many). Whatever
# failed, the request either took effect or returned an error, and afterwards
# the device can be set down and up, restart a queue, and carry a ping; the
# module unloads.
. "$(dirname "$0")/../lib.sh"

[ -e /proc/thread-self/fail-nth ] ||
	skip "this kernel has no fault injection (CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB); make check-debug runs this test"

# Fail sleeping allocations too (GFP_KERNEL: the driver's), quietly.
dbg=/sys/kernel/debug
for f in failslab fail_page_alloc; do
	echo N > "$dbg/$f/ignore-gfp-wait" && echo 0 > "$dbg/$f/verbose" ||
		fail "cannot set up $dbg/$f"
done
trap 'for f in failslab fail_page_alloc; do echo Y > $dbg/$f/ignore-gfp-wait; done' EXIT

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
nl() { ip netns exec ns2 python3 selftests/net/genl.py "$@"; }

# try N BEFORE REQUEST: BEFORE as it is, then REQUEST with its Nth
# allocation failing; sets $injected (1 if the failure was reached) and
# checks the device after it.
try() {
	local n=$1 out rc ok=1
	nl $2 || { echo "cannot set up the try: $2"; failures=$((failures + 1)); }
	out=$(DEVTCP_FAIL_NTH=$n nl $3 2>&1)
	rc=$?
	injected=0
	grep -q "fault: injected" <<< "$out" && injected=1
	[ "$injected" = 0 ] && return 0
	echo "$3: allocation $n failed, request exit $rc"
	ip netns exec ns2 ip link set dtb down || ok=0
	ip netns exec ns2 ip link set dtb up || ok=0
	ip netns exec ns2 sh -c 'echo 0 > /sys/class/net/dtb/devtcp/restart_rx_queue' || ok=0
	ip netns exec ns1 ping -q -c 5 -i 0.2 -W 5 10.99.0.2 > /dev/null || ok=0
	if [ $ok = 0 ]; then
		echo "$3 with allocation $n failing (exit $rc): $out"
		failures=$((failures + 1))
	fi
	tried=$((tried + 1))
}

# sweep BEFORE REQUEST: REQUEST's allocations fail one at a time: each of
# them when it makes at most $limit (DEVTCP_FAIL_TRIES, 0 for no limit), else
# $limit of them spread evenly from the first to the last.
limit=${DEVTCP_FAIL_TRIES:-40}
sweep() {
	local total step n
	nl $1 || return 1
	total=$(DEVTCP_FAIL_NTH=count nl $2 2>&1 | sed -n 's/^fault: \([0-9]*\) allocations$/\1/p')
	[ -n "$total" ] && [ "$total" -gt 0 ] || { echo "$2: cannot count its allocations"; return 1; }
	step=1
	[ "$limit" -gt 0 ] && [ "$total" -gt "$limit" ] && step=$(( (total + limit - 1) / limit ))
	echo "$2: $total allocations; failing every one from 1 to $total in steps of $step"
	local hit=0
	for ((n = 1; n <= total; n += step)); do
		try "$n" "$1" "$2"
		hit=$((hit + injected))
	done
	[ $step -gt 1 ] && [ $(( (total - 1) % step )) != 0 ] && { try "$total" "$1" "$2"; hit=$((hit + injected)); }
	echo "$2: $hit allocation failures injected"
	[ "$hit" -gt 0 ]
}

tried=0 failures=0
check "a channel change survives its allocations failing" \
	sweep "set-channels dtb 8" "set-channels dtb 4"
check "... and so does the change back" sweep "set-channels dtb 4" "set-channels dtb 8"
check "a ring change survives its allocations failing" \
	sweep "set-rings dtb 256 256" "set-rings dtb 512 512"
check "every failed request left a working device ($failures of $tried did not)" \
	test "$failures" = 0
check "the pair still streams" plain_stream 5500 20000000 7
teardown ns1 ns2
finish
