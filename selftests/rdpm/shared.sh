#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Shared buffers (JOIN, rdpm_join_shared): the clients of one user receive
# into one dma-buf that rdpmd allocates and binds once per NIC, instead of
# a binding and reserved queues each. Two clients of uid 1000 receive
# their own validated streams in the same dma-buf; a share that does not
# fit is refused, saying why; root gets a buffer of its own; a client's
# window is bounded by its share; the buffer stays bound while a member
# remains and is unbound when the last one leaves (SIGKILL included).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rdpm_lib.sh"

bytes=${RDPM_TEST_BYTES:-20000000}
share=$((8 << 20))
rdpm_setup
echo "shared_bytes = 24M" >> $RDPM_CONF
check "rdpmd starts" start_rdpmd
two_bound() { [ "$(bound_queues)" = 2 ]; }
rmem_was=$(cat /proc/sys/net/core/rmem_max)
echo 212992 > /proc/sys/net/core/rmem_max

as_user 1000 $CLIENT shared dtb 5001 $bytes 31 $share > /tmp/s1.out 2> /tmp/s1.err &
p1=$!
as_user 1000 $CLIENT shared dtb 5002 $bytes 32 $share > /tmp/s2.out 2> /tmp/s2.err &
p2=$!
wait_for /tmp/s1.err listening && wait_for /tmp/s2.err listening
cat /tmp/s1.err /tmp/s2.err
buf1=$(sed -n 's/.*dmabuf \([0-9]*\),.*/\1/p' /tmp/s1.err)
buf2=$(sed -n 's/.*dmabuf \([0-9]*\),.*/\1/p' /tmp/s2.err)
check "two clients of uid 1000 got the same dma-buf (${buf1:-none} and ${buf2:-none})" \
	test -n "$buf1" -a "$buf1" = "$buf2"
check "... rdpmd allocated and bound it once" \
	test "$(grep -c 'shared buffer of uid 1000: 25165824 bytes bound' $RDPM_LOG)" = 1
check "... both joined it" test "$(grep -c 'uid 1000 joined the shared buffer' $RDPM_LOG)" = 2
check "... one binding: two queues bound (of four reserved)" test "$(bound_queues)" = 2
check "... two rules steer the clients' ports" test "$(rules)" = 2
out=$(as_user 1000 $CLIENT join dtb $((16 << 20)))
check "a third share that does not fit is refused (exit 3)" test $? = 3
check "... saying why" grep -q "holds 25165824 bytes, 16777216 of them shared by 2 client(s): 16777216 more do not fit" <<< "$out"
echo "$out"
ip netns exec ns2 $CLIENT join dtb $((4 << 20)) > /tmp/root.out 2>&1 &
proot=$!
wait_for /tmp/root.out joined
buf3=$(sed -n 's/.*dmabuf \([0-9]*\) .*/\1/p' /tmp/root.out)
check "root gets a shared buffer of its own (dmabuf ${buf3:-none})" \
	test -n "$buf3" -a "$buf3" != "$buf1"
check "... bound to the other two reserved queues" test "$(bound_queues)" = 4
kill -KILL $proot; wait $proot 2> /dev/null
check "... unbound when its only member is killed" within_1s two_bound
"${U1000[@]}" $CLIENT join dtb $((4 << 20)) > /tmp/hold.out 2>&1 &
phold=$!
wait_for /tmp/hold.out joined
check "a third member of uid 1000 that fits joins the same buffer" \
	grep -q "dmabuf $buf1 .*size 25165824" /tmp/hold.out
b $RDPMCTL -s $RDPM_SOCKET status | tee /tmp/status.out
check "rdpmctl status shows the shares" \
	test "$(grep -c 'a share of the user.s shared buffer' /tmp/status.out)" = 3

a /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n $bytes -s 31 > /dev/null &
s1=$!
a /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5002 -n $bytes -s 32 > /dev/null &
s2=$!
wait $s1 $s2
wait $p1; r1=$?
wait $p2; r2=$?
cat /tmp/s1.out /tmp/s1.err /tmp/s2.out /tmp/s2.err
check "client 1 received its stream in the shared dma-buf, validated" test $r1 = 0
check "client 2 received its stream in the shared dma-buf, validated" test $r2 = 0
check "... each only its own stream, in the dma-buf (not linear)" bash -c \
	"grep -q ' 0 mismatched, 0 in another' /tmp/s1.out && grep -q ' 0 mismatched, 0 in another' /tmp/s2.out"
rcv=$(sed -n 's/^window limited to [0-9]* bytes, receive buffer \([0-9]*\) bytes$/\1/p' /tmp/s1.err)
check "rdpmd limited the window to the share, past rmem_max (receive buffer ${rcv:-none})" \
	test "${rcv:-0}" -gt $((2 * 212992))
check "... and refused a socket share beyond the client's share, saying why" \
	grep -q "more than the 8388608 bytes of the shared buffer that JOIN admitted" /tmp/s1.err
echo "$rmem_was" > /proc/sys/net/core/rmem_max
check "the buffer stays bound while a member remains" test "$(bound_queues)" = 2
kill -KILL $phold; wait $phold 2> /dev/null
check "... and is unbound, nothing steered, when the last member is killed" within_1s nothing_bound
check "... rdpmd says so" wait_for $RDPM_LOG "the shared buffer of uid 1000 unbound: its last member left"

check "rdpmd exits cleanly on SIGTERM" stop_rdpmd
echo "--- rdpmd log"
cat $RDPM_LOG
rdpm_cleanup
finish
