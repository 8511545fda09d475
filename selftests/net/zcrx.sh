#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# io_uring zero-copy receive (zcrx) through the devtcp NIC: an interface
# queue registered on queue 3 (IORING_REGISTER_ZCRX_IFQ), the flow steered
# there by an ntuple rule, received with multishot IORING_OP_RECV_ZC and
# validated byte for byte in the area: once with a user-memory area, once
# with a dma-buf (udmabuf) area. Registration errors; and after the receiver
# exits, the queue is back on host memory with the page pools as before.
# DEVTCP_ZCRX_BYTES sets the stream size (default 256 MiB).
. "$(dirname "$0")/../lib.sh"

kernel_has io_zcrx_recv_skb ||
	skip "this kernel has no io_uring zero-copy receive (zcrx: 6.15 and later)"

bytes=${DEVTCP_ZCRX_BYTES:-268435456}
q=3
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
rx="ip netns exec ns2 selftests/net/zcrx_rx -i dtb"
stat() { ethtool_stat ns2 dtb "$1"; }
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }

pools0=$(pools)
echo "before: $pools0"

out=$(timeout $((20 * scale)) $rx -q $q -p 5000 -n 1 2>&1)
check "zcrx registration with header split off is refused" test $? = 1
echo "$out"
check "... with EINVAL and a hint at header split" \
	grep -q "failed: Invalid argument (errno 22).*" <<< "$out"
check "... the hint names tcp-data-split" grep -q "tcp-data-split on" <<< "$out"

devmem_steer ns2 dtb $q 5001 5002 || fail "cannot steer ports 5001, 5002 to queue $q"

out=$(timeout $((20 * scale)) $rx -q 8 -p 5000 -n 1 2>&1)
check "zcrx registration on a queue that does not exist is refused (ERANGE)" \
	grep -q "Numerical result out of range" <<< "$out"
echo "$out"

# stream PORT BYTES SEED [zcrx_rx options]: zcrx receiver, plain sender.
stream() {
	local port=$1 n=$2 seed=$3
	shift 3
	stream_to /tmp/zcrx.out "$port" "$n" "$seed" selftests/net/zcrx_rx -i dtb -q $q "$@"
}

# area_stream AREA SEED [zcrx_rx options]: $bytes through a zcrx AREA
# ("user-memory", "dma-buf" with -d), validated and mostly zero-copy.
area_stream() {
	local area=$1 seed=$2 zc
	shift 2
	check "$bytes bytes received by RECV_ZC into a $area area, all validated" \
		stream 5001 "$bytes" "$seed" "$@"
	check "... registered with a $area area" grep -q "$area area" /tmp/zcrx.out
	check "... 0 mismatched" grep -q ", 0 mismatched" /tmp/zcrx.out
	# The bytes the receiver got without a kernel copy.
	zc=$(sed -n 's/.* CQEs (\([0-9]*\) zero-copy.*/\1/p' /tmp/zcrx.out)
	echo "zero-copy bytes: ${zc:-none}"
	check "... most of it zero-copy (>= 90%)" test "${zc:-0}" -ge $((bytes / 10 * 9))
}

restarts0=$(stat rx${q}_restarts)
qbytes0=$(stat rx${q}_bytes)
area_stream user-memory 31
check "... and it went through queue $q" \
	test $(( $(stat rx${q}_bytes) - qbytes0 )) -ge "$bytes"
check "registering and unregistering restarted queue $q twice" \
	test "$(stat rx${q}_restarts)" = $((restarts0 + 2))

# While registered: the queue has a memory provider and is refused to another.
: > /tmp/zcrx2.out
timeout 600 $rx -q $q -p 5002 -n 20000000 > /tmp/zcrx2.out 2>&1 &
pid=$!
wait_listen /tmp/zcrx2.out
out=$(timeout $((20 * scale)) $rx -q $q -p 5003 -n 1 -d 2>&1)
check "registering zcrx on a queue that has one is refused (EEXIST)" \
	grep -q "File exists" <<< "$out"
echo "$out"
out=$(ip netns exec ns2 ethtool -G dtb tcp-data-split off 2>&1)
check "header split cannot be turned off while zcrx is registered" test $? -ne 0
echo "$out"
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5002 -n 20000000 -s 1 > /dev/null
wait $pid
check "the first registration still receives intact" test $? = 0
cat /tmp/zcrx2.out

restarts0=$(stat rx${q}_restarts)
area_stream dma-buf 32 -d
check "registering and unregistering restarted queue $q twice" \
	test "$(stat rx${q}_restarts)" = $((restarts0 + 2))

# A flow that misses the queue still arrives through RECV_ZC, copied by the
# kernel into the area (port 5003 is not steered; RSS keeps off queue 3).
stream 5003 10000000 34
check "a flow that misses queue $q fails the receiver (not zero-copy)" test $? = 1
check "... its bytes arrived intact" grep -q "received 10000000 bytes .*, 0 mismatched" /tmp/zcrx.out
copied=$(sed -n 's/.* zero-copy, \([0-9]*\) copied by the kernel.*/\1/p' /tmp/zcrx.out)
check "... the kernel counted >= 99% of them as copied (${copied:-none})" \
	test "${copied:-0}" -ge 9900000
check "... and the receiver says why" grep -q "flow not steered to queue $q" /tmp/zcrx.out

# A 1 MiB area (256 buffers) for a 64 MB stream: every buffer goes round the
# refill ring many times. Drops for want of buffers show in alloc_fail.
fails0=$(stat rx${q}_alloc_fail)
check "64 MB through a 1 MiB user-memory area, all validated" stream 5001 64000000 35 -b 1048576
check "... 0 mismatched" grep -q ", 0 mismatched" /tmp/zcrx.out
check "64 MB through a 1 MiB dma-buf area, all validated" stream 5001 64000000 36 -b 1048576 -d
check "... 0 mismatched" grep -q ", 0 mismatched" /tmp/zcrx.out
echo "queue $q alloc_fail during the 1 MiB runs: $(( $(stat rx${q}_alloc_fail) - fails0 ))"

# Unregistered: no page pool left behind, plain TCP on queue 3 again.
wait_buffers_back ns2 "$ifindex" "$pools0" -
echo "after: $(pools)"
check "no page pool left behind" test "$(pools)" = "$pools0"
qbytes0=$(stat rx${q}_bytes)
check "after the receivers exit, queue $q receives plain TCP into host memory" \
	plain_stream 5001 50000000 33
check "... through queue $q" test $(( $(stat rx${q}_bytes) - qbytes0 )) -ge 50000000
teardown ns1 ns2
finish
