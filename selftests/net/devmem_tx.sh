#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# devmem TX through the devtcp NIC: a dma-buf bound with netdev bind-tx on
# the sender, payload sent from it with sendmsg(MSG_ZEROCOPY) and an
# SCM_DEVMEM_DMABUF cmsg, every send completed on the error queue. The
# receiver validates every byte: a plain TCP receiver, and a devmem receiver
# with its own dma-buf bound to queue 3. Then the kernel's errors for sends
# done the wrong way, a device without netmem TX, and a route through
# another device; afterwards no dma-buf is left behind.
# DEVTCP_DEVMEM_BYTES sets the stream size (default 1 GiB).
. "$(dirname "$0")/../lib.sh"

kernel_has netdev_nl_bind_tx_doit ||
	skip "this kernel has no devmem TX (netdev bind-tx: 6.15 and later)"

bytes=${DEVTCP_DEVMEM_BYTES:-1073741824}
q=3
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
tx="ip netns exec ns1 selftests/net/devmem_tx -i dta -a 10.99.0.2"
[ -r /sys/kernel/debug/dma_buf/bufinfo ] || fail "no dma-buf accounting in debugfs"
bufs0=$(dmabufs)

# to_plain PORT BYTES SEED [devmem_tx options]: devmem sender, plain receiver.
to_plain() {
	local port=$1 n=$2 seed=$3 pid rc
	shift 3
	: > /tmp/rx.out
	ip netns exec ns2 selftests/net/tcp_stream recv -p "$port" -n "$n" -s "$seed" \
		> /tmp/rx.out 2>&1 &
	pid=$!
	wait_listen /tmp/rx.out
	timeout 600 $tx -p "$port" -n "$n" -s "$seed" "$@" > /tmp/tx.out 2>&1
	rc=$?
	wait $pid || rc=1
	cat /tmp/tx.out /tmp/rx.out
	return $rc
}

check "$bytes bytes sent from a udmabuf, received intact by a plain receiver" \
	to_plain 5001 "$bytes" 31
check "... every send completed without a kernel copy" grep -q "(0 copied by the kernel)" /tmp/tx.out
check "devmem TX from a system dma-heap buffer, received intact" to_plain 5001 100000000 32 -H
check "odd chunk sizes (sends not page aligned) arrive intact" \
	to_plain 5001 50000000 33 -b 1048576 -c 12345

# Both ends on devmem: the receiver's queue 3 has its own dma-buf.
devmem_steer ns2 dtb $q 5002 || fail "cannot steer port 5002 to queue $q"
devmem_to_devmem() {
	local n=$1 pid rc
	: > /tmp/rx.out
	ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5002 -n "$n" -s 34 \
		> /tmp/rx.out 2>&1 &
	pid=$!
	wait_listen /tmp/rx.out
	timeout 600 $tx -p 5002 -n "$n" -s 34 > /tmp/tx.out 2>&1
	rc=$?
	wait $pid || rc=1
	cat /tmp/tx.out /tmp/rx.out
	return $rc
}
check "devmem TX into a devmem receiver: dma-buf to dma-buf, intact" devmem_to_devmem 200000000
check "... and the receiver got it all through its dma-buf" grep -q " 0 linear in 0 frags" /tmp/rx.out

# Sends done the wrong way get the kernel's errors.
bad_send() {
	local pid rc
	: > /tmp/rx.out
	ip netns exec ns2 timeout 20 selftests/net/tcp_stream recv -p 5003 -n 1 > /tmp/rx.out 2>&1 &
	pid=$!
	wait_listen /tmp/rx.out
	$tx -p 5003 -x "$1"
	rc=$?
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	return $rc
}
check "an unbound dmabuf id is refused with EINVAL" bad_send unknown-id
check "an offset past the end of the dma-buf is refused with EFAULT" bad_send beyond-end
check "the dmabuf cmsg without MSG_ZEROCOPY is refused with EINVAL" bad_send no-zerocopy

out=$(ip netns exec ns1 selftests/net/devmem_tx -i lo -a 127.0.0.1 -p 5004 -n 1 2>&1)
check "bind-tx on a device without netmem TX fails" test $? = 1
echo "$out"
check "... saying so" grep -q "does not support netmem TX" <<< "$out"

# A route through another device: the binding's DMA addresses are not its.
ip link add vA netns ns1 type veth peer name vB netns ns2
ip -n ns1 addr add 10.98.0.1/24 dev vA
ip -n ns2 addr add 10.98.0.2/24 dev vB
ip -n ns1 link set vA up
ip -n ns2 link set vB up
: > /tmp/rx.out
ip netns exec ns2 timeout 20 selftests/net/tcp_stream recv -p 5005 -n 1000000 > /tmp/rx.out 2>&1 &
pid=$!
wait_listen /tmp/rx.out
out=$(ip netns exec ns1 selftests/net/devmem_tx -i dta -a 10.98.0.2 -p 5005 -n 1000000 2>&1)
check "sending a dta binding over a route through veth fails" test $? = 1
echo "$out"
check "... with ENODEV" grep -q "No such device" <<< "$out"
kill $pid 2>/dev/null
wait $pid 2>/dev/null

# TX bindings go when their netlink socket closes and the skbs are freed
# (those on CPU defer lists too: the softirq that frees them is per CPU, so
# one namespace's does).
wait_buffers_back ns2 - - "$bufs0"
check "no dma-buf left behind ($(dmabufs) now, $bufs0 before)" test "$(dmabufs)" = "$bufs0"
teardown ns1 ns2
finish
