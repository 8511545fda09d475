#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# devmem RX through the devtcp NIC: a udmabuf bound to queue 3 (netdev
# bind-rx), the flow steered there by an ntuple rule, received with
# MSG_SOCK_DEVMEM and validated byte for byte in the mmapped dma-buf;
# the same into a system dma-heap buffer and at MTU 9000; binding errors;
# and the queue back on host memory after unbinding.
# DEVTCP_DEVMEM_BYTES sets the stream size (default 1 GiB).
. "$(dirname "$0")/../lib.sh"

bytes=${DEVTCP_DEVMEM_BYTES:-1073741824}
q=3
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
rx="ip netns exec ns2 selftests/net/devmem_rx -i dtb"
e() { ip netns exec ns2 ethtool "$@"; }
stat() { ethtool_stat ns2 dtb "$1"; }

out=$(timeout 20 $rx -q $q -p 5000 -n 1 2>&1)
check "bind-rx with header split off is refused" test $? = 1
echo "$out"
check "... with the kernel's reason" grep -q "tcp-data-split is disabled" <<< "$out"

devmem_steer ns2 dtb $q 5001 5002 || fail "cannot steer ports 5001, 5002 to queue $q"

out=$(timeout 20 $rx -q 8 -p 5000 -n 1 2>&1)
check "bind-rx to a queue that does not exist is refused" test $? = 1
echo "$out"

# stream PORT BYTES SEED [devmem_rx options]: devmem receiver, plain sender.
stream() {
	local port=$1 n=$2 seed=$3 pid
	shift 3
	timeout 600 ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p "$port" -n "$n" \
		-s "$seed" "$@" > /tmp/rx.out 2>&1 &
	pid=$!
	for _ in $(seq 100); do grep -q listening /tmp/rx.out && break; sleep 0.1; done
	timeout 600 ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p "$port" \
		-n "$n" -s "$seed" > /dev/null
	wait $pid
	local rc=$?
	cat /tmp/rx.out
	return $rc
}

restarts0=$(stat rx${q}_restarts)
check "$bytes bytes received into the dma-buf, all validated" stream 5001 "$bytes" 21 -r
check "a plain recv() on the devmem socket fails with EFAULT" grep -q "plain recv: Bad address" /tmp/rx.out
check "full-size payload never took the linear path" grep -q " 0 linear in 0 frags" /tmp/rx.out
check "binding and unbinding restarted queue $q twice" \
	test "$(stat rx${q}_restarts)" = $((restarts0 + 2))

# While bound: the core refuses what would break the binding.
timeout 120 $rx -q $q -p 5002 -n 100000000 > /tmp/rx2.out 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q listening /tmp/rx2.out && break; sleep 0.1; done
out=$(e -G dtb tcp-data-split off 2>&1)
check "header split cannot be turned off while bound" test $? -ne 0
echo "$out"
out=$(e -L dtb combined 2 2>&1)
check "channels cannot drop below the bound queue" test $? -ne 0
echo "$out"
out=$(timeout 20 $rx -q $q -p 5003 -n 1 2>&1)
check "binding the same queue twice is refused" test $? = 1
echo "$out"
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5002 -n 100000000 -s 1 > /dev/null
wait $pid
check "the first binding still receives intact" test $? = 0
cat /tmp/rx2.out

check "devmem stream intact into a system dma-heap buffer" stream 5001 100000000 24 -H

ip -n ns1 link set dta mtu 9000
ip -n ns2 link set dtb mtu 9000
check "devmem stream intact at MTU 9000" stream 5001 100000000 22

# Unbound again: queue 3 is back on host memory and plain TCP works there.
check "after unbinding, queue $q receives plain TCP into host memory" \
	plain_stream 5001 50000000 23
ip netns del ns1
ip netns del ns2
finish
