#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# devmem RX through the devtcp NIC: a udmabuf bound to queue 3 (netdev
# bind-rx), the flow steered there by an ntuple rule, received with
# MSG_SOCK_DEVMEM and validated byte for byte in the mmapped dma-buf;
# the same into a system dma-heap buffer and at MTU 9000; binding errors;
# a dma-buf of one buffer that stalls the stream without corrupting it; and
# the queue back on host memory after unbinding. What only newer kernels
# check (hds-thresh, rx-page-size) is in devmem_rx_limits.sh.
# DEVTCP_DEVMEM_BYTES sets the stream size (default 1 GiB).
. "$(dirname "$0")/../lib.sh"

bytes=${DEVTCP_DEVMEM_BYTES:-1073741824}
q=3
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
rx="ip netns exec ns2 selftests/net/devmem_rx -i dtb"
e() { ip netns exec ns2 ethtool "$@"; }
stat() { ethtool_stat ns2 dtb "$1"; }
genl() { ip netns exec ns2 python3 selftests/net/genl.py "$@"; }

out=$(timeout $((20 * scale)) $rx -q $q -p 5000 -n 1 2>&1)
check "bind-rx with header split off is refused" test $? = 1
echo "$out"
# Kernels with hds-thresh (6.14) check header split themselves; 6.12 finds
# that the queue's new pools did not take the memory provider.
reason="tcp-data-split is disabled"
genl hds-thresh dtb > /dev/null 2>&1 ||
	reason="No data available"
check "... with the kernel's reason ($reason)" grep -q "$reason" <<< "$out"

devmem_steer ns2 dtb $q 5001 5002 || fail "cannot steer ports 5001, 5002 to queue $q"
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }
pools_unbound=$(pools)

out=$(timeout $((20 * scale)) $rx -q 8 -p 5000 -n 1 2>&1)
check "bind-rx to a queue that does not exist is refused" test $? = 1
echo "$out"

# stream PORT BYTES SEED [devmem_rx options]: devmem receiver, plain sender.
stream() {
	local port=$1 n=$2 seed=$3
	shift 3
	stream_to /tmp/rx.out "$port" "$n" "$seed" selftests/net/devmem_rx -i dtb -q $q "$@"
}

# One buffer for a ring of 1024: the binding is valid, but out-of-order
# segments pin the only buffer, so the retransmission that would fill the
# hole cannot be received (TCP does not prune the out-of-order queue while
# under its rcvbuf). The stream must stall cleanly: no byte corrupted, the
# drops counted, the receiver giving up with a clear message, and every
# buffer back once it resets the connection.
fails0=$(stat rx${q}_alloc_fail)
stream 5001 10000000 26 -b 4096 --idle-timeout 10
check "a one-buffer dma-buf stalls the stream and the receiver gives up (exit $?)" test $? = 1
check "... saying so" grep -q "devmem_rx: no data for 10 s after [0-9]* of 10000000 bytes" /tmp/rx.out
check "... with every byte it got intact" grep -q " 0 mismatched" /tmp/rx.out
check "... and frames dropped for want of a buffer (rx${q}_alloc_fail)" \
	test "$(stat rx${q}_alloc_fail)" -gt "$fails0"
wait_buffers_back ns2 "$ifindex" "$pools_unbound" -
echo "page pools unbound: $pools_unbound, now: $(pools)"
check "... and no page pool left behind" test "$(pools)" = "$pools_unbound"

# A valid binding on the same queue after all of the above.
restarts0=$(stat rx${q}_restarts)
check "$bytes bytes received into the dma-buf, all validated" stream 5001 "$bytes" 21 -r
check "a plain recv() on the devmem socket fails with EFAULT" grep -q "plain recv: Bad address" /tmp/rx.out
check "full-size payload never took the linear path" grep -q " 0 linear in 0 frags" /tmp/rx.out
check "binding and unbinding restarted queue $q twice" \
	test "$(stat rx${q}_restarts)" = $((restarts0 + 2))

# While bound: the core refuses what would break the binding.
# a hang guard: 100 MB take a minute under KASAN and lockdep (check-debug)
: > /tmp/rx2.out
timeout 600 $rx -q $q -p 5002 -n 100000000 > /tmp/rx2.out 2>&1 &
pid=$!
wait_listen /tmp/rx2.out
out=$(e -G dtb tcp-data-split off 2>&1)
check "header split cannot be turned off while bound" test $? -ne 0
echo "$out"
out=$(timeout $((20 * scale)) $rx -q $q -p 5003 -n 1 2>&1)
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
# Channels: with no rule and no RSS entry on queue 3, only its binding
# stops a shrink below it.
: > /tmp/rx3.out
timeout 60 $rx -q $q -p 5009 -n 1 > /tmp/rx3.out 2>&1 &
pid=$!
wait_listen /tmp/rx3.out
for r in $(e -n dtb | sed -n 's/^Filter: //p'); do e -N dtb delete "$r"; done
e -X dtb equal 3
out=$(e -L dtb combined 3 2>&1)
check "channels cannot drop below the bound queue" test $? -ne 0
echo "$out"
# The core says why (7.x); on 6.12 the driver refuses (EBUSY, and logs why).
check "... because of the memory provider" \
	grep -Eq "too low for existing memory provider|Device or resource busy" <<< "$out"
check "... 8 channels still" test "$(e -l dtb | awk '/^Combined:/ { v = $2 } END { print v }')" = 8
kill $pid
wait $pid 2>/dev/null
teardown ns1 ns2
finish
