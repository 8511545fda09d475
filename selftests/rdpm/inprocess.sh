#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The rdpm client API without a daemon: as root (CAP_NET_ADMIN) the same
# calls set the NIC up in-process, a validated stream arrives in the
# client's dma-buf (also when it asks for a share of a shared buffer: one of
# its own then), and closing puts the NIC back exactly; without
# CAP_NET_ADMIN connecting fails and says why.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rdpm_lib.sh"

bytes=${RDPM_TEST_BYTES:-20000000}
rdpm_setup
export RDPM_SOCKET=/tmp/rdpm/no-daemon.sock
before=$(snapshot)
b $CLIENT recv dtb 5001 $bytes 31 > /tmp/c1.out 2> /tmp/c1.err &
p1=$!
wait_for /tmp/c1.err listening
cat /tmp/c1.err
check "in-process: a rule steers the port" test "$(rules)" = 1
check "... a queue is bound" test "$(bound_queues)" = 1
a /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n $bytes -s 31 > /dev/null
wait $p1
r1=$?
cat /tmp/c1.out
check "in-process: the stream arrived in the dma-buf, validated" test $r1 = 0
check "... no rule or binding left" within_1s nothing_bound
after=$(snapshot)
check "... the NIC is as before" test "$before" = "$after"
[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after")
# A share of the shared buffer is, in-process, a buffer of the client's own.
b $CLIENT shared dtb 5002 $bytes 32 $((8 << 20)) > /tmp/c2.out 2> /tmp/c2.err &
p2=$!
wait_for /tmp/c2.err listening
check "in-process share: a queue is bound" test "$(bound_queues)" = 1
a /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5002 -n $bytes -s 32 > /dev/null
wait $p2
r2=$?
cat /tmp/c2.out /tmp/c2.err
check "in-process share: the stream arrived in the client's dma-buf, validated" test $r2 = 0
check "... no rule or binding left" within_1s nothing_bound
check "... the NIC is as before" test "$before" = "$(snapshot)"
out=$(as_user 1000 $CLIENT register dtb 2>&1)
check "without a daemon and CAP_NET_ADMIN, connecting fails" test $? = 1
echo "$out"
check "... saying why" grep -q "no rdpmd there, and without CAP_NET_ADMIN" <<< "$out"
rdpm_cleanup
finish
