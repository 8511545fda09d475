#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# lib.sh's teardown, which every test ends with, fails when a page of a
# devtcp queue is still out after the pair went: here a receiver is stopped
# with a stream's bytes unread in its socket, so its pages cannot come back.
# A clean stream's teardown passes. (The check that the others rely on.)
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
check "a stream arrives intact" plain_stream 5100 10000000 1
out=$(fails=0; teardown ns1 ns2; echo "fails $fails")
echo "$out"
check "after it, teardown finds every page back" grep -qx "fails 0" <<< "$out"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair again"
: > /tmp/held.out
ip netns exec ns2 /devtcp/selftests/net/tcp_stream recv -p 5101 -n 1000000 -s 2 > /tmp/held.out &
rx=$!
wait_listen /tmp/held.out || fail "the receiver never listened"
kill -STOP $rx
# Fewer bytes than a receive buffer holds on any kernel: the debug kernel's
# larger skbs let only 85792 of 100000 in before the window closed.
ip netns exec ns1 /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5101 -n 50000 -s 2 \
	> /dev/null 2>&1 &
tx=$!
unread() { ip netns exec ns2 ss -Htn sport = :5101 | awk '{ n = $2 } END { print n + 0 }'; }
for _ in $(seq 100); do [ "$(unread)" -ge 50000 ] && break; sleep 0.1; done
# Recv-Q: the bytes and, once the sender has gone, its FIN.
check "50000 bytes wait unread in the stopped receiver's socket" test "$(unread)" -ge 50000
# The sender waits for the receiver to close; it goes, its bytes stay.
kill -9 $tx
wait $tx 2> /dev/null
out=$(fails=0; teardown ns1 ns2; echo "fails $fails")
echo "$out"
check "with them unread by a stopped receiver, teardown fails" grep -qx "fails 1" <<< "$out"
check "... saying the pages held" \
	grep -qE "FAIL: ns2: every page back in its pool 10 s after the pair went \(held: [1-9]" <<< "$out"
check "... and showing the socket that holds them" grep -qE "^(ESTAB|CLOSE-WAIT) .*:5101 " <<< "$out"
kill -9 $rx
wait $rx 2> /dev/null
finish
