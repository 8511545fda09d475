#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The carrier after a failed queue restart is undone. A dma-buf is bound to
# dtb's queue 3 (a devmem receiver waiting for its stream) and dtb gets the
# dma-unreachable fault: ethtool -G cannot start the bound queue on its
# provider memory, so the ring change fails and so does the restart on the
# old rings, which leaves dtb up with no queues and neither end with a
# carrier. With the fault cleared the same change succeeds: the queues run
# again and the carrier comes back on both ends (it used to stay off, the TX
# queues woken onto a dead link, until dtb was set down and up); ping and a
# plain stream pass, and the binding, still there, receives its devmem
# stream intact.
. "$(dirname "$0")/../lib.sh"

FAULT=/devtcp/userspace/tools/devtcp-fault
q=3
bytes=20000000
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
devmem_steer ns2 dtb $q 5001 || fail "cannot steer port 5001 to queue $q"
e() { ip netns exec ns2 ethtool "$@"; }
ring() { e -g dtb | awk -v k="$1:" '$1 " " $2 == k || $1 == k { v = $NF } END { print v }'; }
carrier() { ip netns exec "$1" cat /sys/class/net/"$2"/carrier 2> /dev/null; }
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }
# The dma-buf id bound to queue $q (0: none).
bound() { queue_dmabuf ns2 "$ifindex" "$q"; }
pools0=$(pools)
bufs0=$(dmabufs)

: > /tmp/rx.out
timeout $((120 * scale)) ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5001 \
	-n $bytes -s 81 --idle-timeout 30 > /tmp/rx.out 2>&1 &
rx=$!
wait_listen /tmp/rx.out || { cat /tmp/rx.out; fail "the devmem receiver did not start"; }
check "queue $q is bound to a dma-buf" test "$(bound)" -gt 0

ip netns exec ns2 $FAULT set dtb dma-unreachable 1 || fail "cannot set the fault"
out=$(e -G dtb rx 512 2>&1)
rc=$?
echo "$out"
check "with dma-unreachable on, ethtool -G dtb rx 512 fails (exit $rc)" test $rc != 0
echo "carrier after the failed change: dtb $(carrier ns2 dtb), dta $(carrier ns1 dta)"
check "... and leaves dtb without a carrier (its queues could not start)" \
	test "$(carrier ns2 dtb)" = 0
check "... and dta without one too" test "$(carrier ns1 dta)" = 0
check "... it says so in the kernel log" \
	bash -c "dmesg | grep -q 'dtb: queues could not be restarted'"

ip netns exec ns2 $FAULT set dtb dma-unreachable 0
out=$(e -G dtb rx 512 2>&1)
rc=$?
echo "$out"
check "with the fault cleared, ethtool -G dtb rx 512 succeeds (exit $rc)" test $rc = 0
check "... rx ring reads back 512" test "$(ring RX)" = 512
# up to 3 s (times scale) for both ends' carriers
for ((i = 0; i < 30 * scale; i++)); do
	[ "$(carrier ns2 dtb)$(carrier ns1 dta)" = 11 ] && break
	sleep 0.1
done
echo "carrier after the change: dtb $(carrier ns2 dtb), dta $(carrier ns1 dta) ($((i * 100)) ms)"
check "... and dtb's carrier comes back" test "$(carrier ns2 dtb)" = 1
check "... and dta's" test "$(carrier ns1 dta)" = 1
check "queue $q is still bound to the dma-buf" test "$(bound)" -gt 0

if [ "$(carrier ns2 dtb)$(carrier ns1 dta)" = 11 ]; then
	check "ping from ns1" ip netns exec ns1 ping -q -c 3 -i 0.2 -W 2 10.99.0.2
	check "a plain stream arrives intact" plain_stream 5400 20000000 82
	cat /tmp/plain.out
	timeout $((120 * scale)) ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 \
		-p 5001 -n $bytes -s 81 > /dev/null
	wait $rx
	rc=$?
	cat /tmp/rx.out
	check "the bound queue receives its devmem stream intact (exit $rc)" \
		bash -c "[ $rc = 0 ] && grep -q ' 0 mismatched' /tmp/rx.out"
else
	# Without a carrier every frame is dropped: a stream would only hang.
	check "ping from ns1 (not tried: no carrier)" false
	check "a plain stream arrives intact (not tried: no carrier)" false
	check "the bound queue receives its devmem stream intact (not tried: no carrier)" false
	kill $rx
	wait $rx 2> /dev/null
fi

ip netns exec ns2 $FAULT off dtb
check_buffers_back ns2 "$ifindex" "$pools0" "$bufs0"
teardown ns1 ns2
finish
