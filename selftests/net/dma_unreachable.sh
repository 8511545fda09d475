#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Provider memory out of the device's DMA reach (the dma-unreachable fault),
# as a NIC meets a GPU BAR it cannot reach peer to peer: binding a dma-buf
# (bind-rx) or an io_uring area to a queue is refused with EOPNOTSUPP and
# leaves the queue as it was; a fault that comes while a devmem stream runs,
# in either direction, drops frames (counted) and loses no byte once it goes.
. "$(dirname "$0")/../lib.sh"

FAULT=/devtcp/userspace/tools/devtcp-fault
q=3
# Waits stretch by lib.sh's scale: on make check-debug's kernel, beside the
# other VM, a tool that makes and binds a 64 MiB udmabuf took over 20 s.
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
devmem_steer ns2 dtb $q 5001 5002 5003 || fail "cannot steer ports 5001-5003 to queue $q"
fault() { local ns=$1; shift; ip netns exec "$ns" $FAULT "$@"; }
stat() { ethtool_stat "$1" "$2" "$3"; }
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }
pools0=$(pools)
bufs0=$(dmabufs)

fault ns2 set dtb dma-unreachable 1
check "the fault reads back" grep -q "dma-unreachable 1$" <<< "$(fault ns2 show dtb)"
out=$(fault ns2 set dtb dma-unreachable 2 2>&1)
check "dma-unreachable 2 is refused" test $? = 1
echo "$out"
check "... by the kernel's policy" grep -q "integer out of range" <<< "$out"

# refused WHAT CMD...: CMD fails with EOPNOTSUPP, queue $q is not restarted
# and keeps its page pools, and the refusal is counted and logged.
refused() {
	local what=$1 restarts n0 out rc
	shift
	restarts=$(stat ns2 dtb rx${q}_restarts)
	n0=$(stat ns2 dtb fault_dma_unreachable)
	out=$(timeout $((20 * scale)) "$@" 2>&1)
	rc=$?
	echo "$out"
	check "$what is refused (exit $rc)" test $rc = 1
	check "... with EOPNOTSUPP" grep -q "Operation not supported" <<< "$out"
	check "... leaving queue $q as it was" \
		test "$(stat ns2 dtb rx${q}_restarts)" = "$restarts" -a "$(pools)" = "$pools0"
	check "... counted in fault_dma_unreachable" \
		test "$(stat ns2 dtb fault_dma_unreachable)" -gt "$n0"
}
refused "bind-rx of a udmabuf" \
	ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5000 -n 1
refused "bind-rx of a system dma-heap buffer" \
	ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5000 -n 1 -H
refused "io_uring zcrx registration" \
	ip netns exec ns2 selftests/net/zcrx_rx -i dtb -q $q -p 5000 -n 1
check "the driver says why in the kernel log" \
	bash -c "dmesg | grep -q \"dtb: queue $q: provider memory is out of the device's DMA reach\""
check "host memory is not affected: a plain stream arrives intact" \
	plain_stream 5400 20000000 41
fault ns2 set dtb dma-unreachable 0

# A stream slowed to 100 Mbit/s (about 5 s) loses the device's DMA for 2 s
# once its first 100 frames have passed: frames are dropped while it lasts,
# TCP resends them, and every byte arrives.
bytes=60000000
fault ns1 set dta rate 100M
# outage NS DEV rx|tx: dma-unreachable on DEV for 2 s, once DEV has moved
# 100 frames in that direction since the call, so that the outage falls
# inside the stream however long its tool takes to set up (a devmem sender
# on the debug kernel took longer than a fixed 1 s wait plus the outage).
outage() {
	local f=/sys/class/net/$2/statistics/$3_packets n0 i
	n0=$(ip netns exec "$1" cat "$f")
	for ((i = 0; i < 600 * scale; i++)); do
		[ "$(ip netns exec "$1" cat "$f")" -ge $((n0 + 100)) ] && break
		sleep 0.1
	done
	fault "$1" set "$2" dma-unreachable 1
	sleep 2
	fault "$1" set "$2" dma-unreachable 0
}

f0=$(stat ns2 dtb rx${q}_dma_faults); n0=$(stat ns2 dtb fault_dma_unreachable)
: > /tmp/rx.out
ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5001 -n $bytes -s 42 \
	--idle-timeout 60 > /tmp/rx.out 2>&1 &
rx=$!
wait_listen /tmp/rx.out
outage ns2 dtb rx &
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n $bytes -s 42 > /dev/null
wait $rx
rc=$?
wait
cat /tmp/rx.out
check "devmem RX: a 2 s DMA outage mid-stream, then every byte intact (exit $rc)" \
	bash -c "[ $rc = 0 ] && grep -q ' 0 mismatched' /tmp/rx.out"
echo "rx${q}_dma_faults +$(( $(stat ns2 dtb rx${q}_dma_faults) - f0 ))"
check "... frames were dropped meanwhile (rx${q}_dma_faults)" \
	test "$(stat ns2 dtb rx${q}_dma_faults)" -gt "$f0"
check "... and counted as refused transfers" \
	test "$(stat ns2 dtb fault_dma_unreachable)" -gt "$n0"

# Devmem TX: the sender's DMA engine cannot read its dma-buf meanwhile.
n0=$(stat ns1 dta fault_dma_unreachable)
drops0=$(ip -n ns1 -s -j link show dta | python3 -c "import json, sys
print(json.load(sys.stdin)[0]['stats64']['tx']['dropped'])")
: > /tmp/rx.out
ip netns exec ns2 selftests/net/tcp_stream recv -p 5002 -n $bytes -s 43 > /tmp/rx.out 2>&1 &
rx=$!
wait_listen /tmp/rx.out
outage ns1 dta tx &
timeout 600 ip netns exec ns1 selftests/net/devmem_tx -i dta -a 10.99.0.2 -p 5002 -n $bytes \
	-s 43 > /tmp/tx.out 2>&1
rc=$?
wait $rx || rc=1
wait
cat /tmp/tx.out /tmp/rx.out
drops=$(( $(ip -n ns1 -s -j link show dta | python3 -c "import json, sys
print(json.load(sys.stdin)[0]['stats64']['tx']['dropped'])") - drops0 ))
check "devmem TX: a 2 s DMA outage mid-stream, then every byte intact (exit $rc)" test $rc = 0
echo "dta tx dropped +$drops, fault_dma_unreachable +$(( $(stat ns1 dta fault_dma_unreachable) - n0 ))"
check "... frames were dropped at xmit meanwhile (tx dropped)" test "$drops" -gt 0
check "... and counted as refused transfers" \
	test "$(stat ns1 dta fault_dma_unreachable)" -gt "$n0"
check "... and logged" bash -c "dmesg | grep -q 'dta: queue [0-9]*: TX DMA from provider memory failed'"
fault ns1 off dta

check_buffers_back ns2 "$ifindex" "$pools0" "$bufs0"
teardown ns1 ns2
finish
