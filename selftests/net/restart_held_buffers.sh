#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A queue restart while the application holds every buffer of its memory
# provider. A devmem receiver on dtb's queue 3 with a dma-buf of 256
# buffers (1 MiB) returns no token for its first seconds (devmem_rx
# --stall): the stream takes every buffer and the queue drops what comes
# next for want of one. The receiver is then stopped (SIGSTOP), so that it
# holds them however long what follows takes. Meanwhile queue 3 is
# restarted, through the core (sysfs restart_rx_queue, as a binding does)
# and through a ring change (ethtool -G): both succeed, the queue starting
# empty on the same binding (the restart used to fail, and the ring change
# could leave the device with no queues). Once the receiver, continued,
# gives its tokens back, the buffers fill the new queue and the stream
# arrives intact; a new binding on the same queue then takes a validated
# stream, and no page pool or dma-buf is left behind. (The receiver's
# window is clamped to 100 segments, as in devmem_backpressure.sh, so that
# out-of-order segments cannot pin every buffer once they come back.)
# io_uring zcrx is left out: zcrx_rx hands every buffer back as soon as it
# has checked it and has no way to hold them.
. "$(dirname "$0")/../lib.sh"

q=3
bytes=20000000
stall=$((6 * scale))
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
devmem_steer ns2 dtb $q 5001 5002 || fail "cannot steer ports 5001, 5002 to queue $q"
e() { ip netns exec ns2 ethtool "$@"; }
stat() { ethtool_stat ns2 dtb "$1"; }
fails() { stat rx${q}_alloc_fail; }
carrier() { ip netns exec ns2 cat /sys/class/net/dtb/carrier; }
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }
# The dma-buf id bound to queue $q (0: none).
bound() { queue_dmabuf ns2 "$ifindex" "$q"; }
pools0=$(pools)
bufs0=$(dmabufs)

f0=$(fails)
: > /tmp/rx.out
# Its own pid (ip netns exec execs it), to stop and continue; --idle-timeout
# is its hang guard.
ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5001 -n $bytes -s 91 -b 1048576 \
	--stall $stall --idle-timeout 60 --window-clamp $((100 * 1448)) > /tmp/rx.out 2>&1 &
rx=$!
wait_listen /tmp/rx.out || { cat /tmp/rx.out; fail "the devmem receiver did not start"; }
id=$(bound)
timeout $((150 * scale)) ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 \
	-p 5001 -n $bytes -s 91 > /tmp/tx.out 2>&1 &
tx=$!
# Every buffer taken: the queue drops frames for want of one.
for ((i = 0; i < 50 * scale; i++)); do
	[ "$(fails)" -gt "$f0" ] && break
	sleep 0.1
done
kill -STOP $rx
echo "rx${q}_alloc_fail +$(( $(fails) - f0 )) after $((i * 100)) ms"
check "every buffer is out (the receiver keeps its tokens): queue $q drops frames" \
	test "$(fails)" -gt "$f0"
check "... and the receiver, stopped, still holds them" \
	bash -c "! grep -q 'stall over' /tmp/rx.out"

restarted=1
r0=$(stat rx${q}_restarts)
out=$(ip netns exec ns2 sh -c "echo $q > /sys/class/net/dtb/devtcp/restart_rx_queue" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || restarted=0
check "restart_rx_queue $q succeeds while the buffers are held (exit $rc)" test $rc = 0
check "... the queue was restarted (rx${q}_restarts +1)" \
	test "$(stat rx${q}_restarts)" = $((r0 + 1))
check "... on the same binding" test "$(bound)" = "$id"

out=$(e -G dtb rx 512 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || restarted=0
check "ethtool -G dtb rx 512 succeeds while the buffers are held (exit $rc)" test $rc = 0
check "... dtb keeps its carrier" test "$(carrier)" = 1
check "... and queue $q its binding" test "$(bound)" = "$id"

if [ $restarted = 1 ]; then
	kill -CONT $rx
	wait $rx
	rc=$?
	kill $tx 2> /dev/null
	wait $tx
	cat /tmp/rx.out
	check "the tokens given back, the stream arrives intact (exit $rc)" \
		bash -c "[ $rc = 0 ] && grep -q 'stall over' /tmp/rx.out && grep -q ' 0 mismatched' /tmp/rx.out"
	check "a new binding on queue $q receives a validated stream" \
		stream_to /tmp/rx.out 5002 $bytes 92 selftests/net/devmem_rx -i dtb -q $q \
		--idle-timeout 30
else
	# A failed ring change leaves dtb with no queues: nothing would flow.
	kill -9 $rx $tx 2> /dev/null
	wait $rx $tx 2> /dev/null
	cat /tmp/rx.out
	ip -n ns2 link set dtb down
	ip -n ns2 link set dtb up
	check "the tokens given back, the stream arrives intact (not tried: a restart failed)" false
	check "a new binding on queue $q receives a validated stream (not tried)" false
fi

check_buffers_back ns2 "$ifindex" "$pools0" "$bufs0"
check "a plain stream arrives intact on the restarted queues" plain_stream 5001 20000000 93
teardown ns1 ns2
finish
