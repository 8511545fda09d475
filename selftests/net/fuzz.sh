#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Random requests at the module's netlink and ethtool surface under traffic
# (selftests/net/fuzz.py: link attributes, faults, rings, header split,
# channels, RSS, ntuple, MTU, down/up, queue restarts, devmem bind/unbind),
# for DEVTCP_FUZZ_SECONDS (default 60; make check-debug runs it longer) with
# DEVTCP_FUZZ_SEED to replay a run. Every request is answered, the kernel
# reports nothing, and once its faults are off the fuzzed pair carries a
# stream intact and gives back every page pool and dma-buf.
. "$(dirname "$0")/../lib.sh"

secs=${DEVTCP_FUZZ_SECONDS:-60}

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
# A pool destroyed with pages out stays listed as detached: a leak shows.
detached() { page_pools ns2 all | awk '{ print $4 }'; }
detached0=$(detached)
bufs0=$(dmabufs)
phase "fuzz start"

# Traffic all along: plain streams, one after the other, whatever the fuzzer
# does to the queues (a stream may fail; only the kernel must hold up).
(
	while :; do
		ip netns exec ns2 timeout 30 /devtcp/selftests/net/tcp_stream recv -p 5600 \
			-n 4000000 > /dev/null 2>&1 &
		sleep 0.3
		ip netns exec ns1 timeout 30 /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 \
			-p 5600 -n 4000000 > /dev/null 2>&1
		wait
	done
) &
traffic=$!

ip netns exec ns2 python3 /devtcp/selftests/net/fuzz.py dtb ns1 "$secs" ${DEVTCP_FUZZ_SEED:-} |
	tee /tmp/fuzz.out
fuzz_rc=${PIPESTATUS[0]}
kill $traffic
wait $traffic 2>/dev/null
pkill -f tcp_stream
ops=$(awk '/operations in/ { print $2 }' /tmp/fuzz.out)
check "every request was answered ($ops operations)" test "$fuzz_rc" = 0
check "requests were both accepted and refused" \
	awk '/accepted/ { a += $(NF-3); r += $(NF-1) } END { exit !(a && r) }' /tmp/fuzz.out
kernel_quiet "devtcp-test: phase fuzz start" "fuzzing"

# The fuzzed pair, faults off and up again, still works.
for ns in ns1 ns2; do
	dev=dta; [ $ns = ns2 ] && dev=dtb
	ip netns exec $ns /devtcp/userspace/tools/devtcp-fault off $dev
	ip -n $ns link set $dev mtu 1500 up
done
ip netns exec ns2 ethtool -K dtb ntuple off 2> /dev/null
devices() { ip netns exec "$1" sh -c 'ls -d /sys/class/net/*/devtcp' | wc -l; }
check "no devtcp device is left from the fuzzer's pairs" \
	test "$(devices ns1) $(devices ns2)" = "1 1"
check "the fuzzed pair carries a ping" ip netns exec ns1 ping -q -c 3 -W 5 10.99.0.2
check "... and a stream, intact" plain_stream 5500 20000000 11
for ((i = 0; i < 60; i++)); do
	[ "$(detached)" = "$detached0" ] && [ "$(dmabufs)" = "$bufs0" ] && break
	softirq_each_cpu ns2
	sleep 1
done
check "no page pool was left with pages out ($(page_pools ns2 all))" test "$(detached)" = "$detached0"
check "every dma-buf came back ($(dmabufs) of $bufs0)" test "$(dmabufs)" = "$bufs0"
teardown ns1 ns2
finish
