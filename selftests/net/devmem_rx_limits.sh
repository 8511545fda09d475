#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# devmem RX limits that kernels from 6.14 (hds-thresh) and 7.x (rx-page-size,
# the binding's buffer size) check: bind-rx is refused with the kernel's
# reason and leaves the queue as it was, and while bound hds-thresh cannot
# be raised. devtcp takes rx-page-sizes up to 64 KiB. Skips, saying why, on kernels without them (6.12 LTS).
. "$(dirname "$0")/../lib.sh"

q=3
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
rx="ip netns exec ns2 selftests/net/devmem_rx -i dtb"
stat() { ethtool_stat ns2 dtb "$1"; }
genl() { ip netns exec ns2 python3 selftests/net/genl.py "$@"; }
if ! genl hds-thresh dtb > /dev/null 2>&1; then
	ip netns del ns1
	ip netns del ns2
	skip "this kernel has no hds-thresh or rx-page-size (6.14 and 7.x)"
fi
devmem_steer ns2 dtb $q 5001 5002 || fail "cannot steer ports 5001, 5002 to queue $q"
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }

# refused WHAT MESSAGE [devmem_rx options]: bind-rx fails with exit 1 and
# MESSAGE (the kernel's extack), and queue $q was not restarted, nor a page
# pool left behind.
refused() {
	local what=$1 msg=$2 restarts pools0 rc
	shift 2
	restarts=$(stat rx${q}_restarts)
	pools0=$(pools)
	out=$(timeout $((20 * scale)) $rx -q $q -p 5000 -n 1 "$@" 2>&1)
	rc=$?
	echo "$out"
	check "$what is refused (exit $rc)" test $rc = 1
	check "... with \"$msg\"" grep -qF "$msg" <<< "$out"
	check "... and queue $q is left as it was" \
		test "$(stat rx${q}_restarts)" = "$restarts" -a "$(pools)" = "$pools0"
}

# Header split must hand every payload byte to the provider.
genl set-hds-thresh dtb 256 || fail "cannot set hds-thresh"
refused "bind-rx while hds-thresh is 256" "Invalid argument: hds-thresh is not zero"
check "... which is still 256" grep -q "^hds-thresh 256 " <<< "$(genl hds-thresh dtb)"
genl set-hds-thresh dtb 0 || fail "cannot reset hds-thresh"

# rx-page-size, the binding's buffer size: the policy wants >= PAGE_SIZE,
# bind-rx a power of two, and each dma-buf chunk must hold whole buffers, so
# a dma-buf smaller than one buffer (a one-page udmabuf, 8 KiB buffers) is
# refused while mapping it, before any queue is touched.
refused "rx-page-size 2048 (below PAGE_SIZE)" \
	"Numerical result out of range: integer out of range" --rx-page-size 2048
refused "rx-page-size 12288" "Invalid argument: rx-page-size must be a power of 2" \
	--rx-page-size 12288
refused "a 4 KiB dma-buf with 8 KiB buffers" \
	"Invalid argument: dmabuf sg entry" -b 4096 --rx-page-size 8192
# The kernel cuts formatted extacks at 80 characters: "size 8192" ends "size 81".
check "... as its chunk is not aligned to the buffer size" \
	grep -q "len=4096) not aligned to niov size" <<< "$out"

# stream PORT BYTES SEED [devmem_rx options]: devmem receiver, plain sender.
stream() {
	local port=$1 n=$2 seed=$3
	shift 3
	stream_to /tmp/rx.out "$port" "$n" "$seed" selftests/net/devmem_rx -i dtb -q $q "$@"
}

check "rx-page-size 4096 (PAGE_SIZE) is accepted and receives intact" \
	stream 5001 20000000 25 --rx-page-size 4096

# Buffers larger than a page: a frame's payload (up to 64 KiB with GSO) lands
# in pieces of 16 KiB instead of 4 KiB, and at MTU 9000 a segment of 8948
# bytes in one piece instead of three. A dma-heap buffer is made of aligned
# 64 KiB and 1 MiB chunks, which a 16 KiB buffer size needs.
refused "rx-page-size 128 KiB (devtcp's bound is 64 KiB)" \
	"devtcp takes a power of two from 4096 to 65536" -H -b 1048576 \
	--rx-page-size 131072
ip -n ns1 link set dta mtu 9000 && ip -n ns2 link set dtb mtu 9000 || fail "cannot set MTU 9000"
largest() { sed -n 's/.*largest frag \([0-9]*\).*/\1/p' /tmp/rx.out; }
check "rx-page-size 16384 at MTU 9000 receives intact" stream 5001 20000000 26 -H --rx-page-size 16384
check "... in fragments over a page and up to 16 KiB (largest $(largest))" \
	test "$(largest)" -gt 4096 -a "$(largest)" -le 16384
check "after that binding, the queue is back on pages: intact" stream 5001 20000000 27 -H
check "... in fragments of at most a page (largest $(largest))" test "$(largest)" -le 4096
# A queue re-created while bound (a ring change closes and opens every
# queue) takes its buffer size from the binding again, not the page size.
ring=$(ip netns exec ns2 ethtool -g dtb | awk '/^RX:/ { v = $2 } END { print v }')
: > /tmp/rx.out
timeout 600 $rx -q $q -p 5001 -n 20000000 -s 28 -H --rx-page-size 16384 > /tmp/rx.out 2>&1 &
pid=$!
wait_listen /tmp/rx.out
check "a ring change while bound with 16 KiB buffers" \
	ip netns exec ns2 ethtool -G dtb rx $((ring / 2))
check "... leaves queue $q bound" \
	test "$(genl dmabufs "$ifindex" | awk -v q=$q '$2 == q { print $4 }')" -gt 0
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n 20000000 -s 28 > /dev/null
wait $pid
check "... which still receives intact" test $? = 0
cat /tmp/rx.out
check "... in fragments over a page (largest $(largest)): the binding's size" \
	test "$(largest)" -gt 4096 -a "$(largest)" -le 16384
ip netns exec ns2 ethtool -G dtb rx "$ring"
ip -n ns1 link set dta mtu 1500 && ip -n ns2 link set dtb mtu 1500 || fail "cannot set MTU 1500"

# While bound: the core refuses a threshold that would keep payload from it.
: > /tmp/rx2.out
timeout 600 $rx -q $q -p 5002 -n 20000000 > /tmp/rx2.out 2>&1 &
pid=$!
wait_listen /tmp/rx2.out
out=$(genl set-hds-thresh dtb 256 2>&1)
check "hds-thresh cannot be raised while bound" test $? -ne 0
echo "$out"
check "... because of the memory provider" grep -q "non-zero hds_thresh while device is memory provider" <<< "$out"
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5002 -n 20000000 -s 1 > /dev/null
wait $pid
check "the binding still receives intact" test $? = 0
teardown ns1 ns2
finish
