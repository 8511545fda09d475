#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ethtool -G/-L: out-of-range values are refused with the state unchanged;
# valid changes restart the queues while a stream runs, and the stream still
# arrives intact (TCP recovers what a restart dropped).
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
e() { ip netns exec ns2 ethtool "$@"; }
ring() { e -g dtb | awk -v k="$1:" '$1 " " $2 == k || $1 == k { v = $NF } END { print v }'; }
combined() { e -l dtb | awk '/^Combined:/ { v = $2 } END { print v }'; }

refused() { # refused DESCRIPTION ethtool-args...
	local what=$1 out
	shift
	if out=$(e "$@" 2>&1); then
		echo "FAIL: $what was accepted"
		fails=$((fails + 1))
	else
		echo "ok: $what is refused: $(tr '\n' ' ' <<< "$out")"
	fi
}

refused "rx ring 32 (< 64)" -G dtb rx 32
refused "rx ring 5000 (> 4096)" -G dtb rx 5000
refused "65 channels" -L dtb combined 65
refused "0 channels" -L dtb combined 0
check "rx ring still 1024" test "$(ring RX)" = 1024
check "still 8 channels" test "$(combined)" = 8

check "rings 256 with split on accepted" e -G dtb rx 256 tx 256 tcp-data-split on
check "rx ring reads back 256" test "$(ring RX)" = 256
check "tcp-data-split reads back on" \
	bash -c "ip netns exec ns2 ethtool -g dtb | grep -q 'TCP data split:.*on'"

# Restarts under traffic.
bytes=300000000
ip netns exec ns2 selftests/net/tcp_stream recv -p 5100 -n $bytes -s 5 > /tmp/recv.out &
rpid=$!
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5100 -n $bytes -s 5 > /tmp/send.out &
spid=$!
restarts=0
for i in 1 2 3 4 5; do
	sleep 0.3
	e -G dtb tcp-data-split off && restarts=$((restarts + 1))
	sleep 0.3
	e -L dtb combined 4 && restarts=$((restarts + 1))
	sleep 0.3
	e -G dtb tcp-data-split on rx 1024 && restarts=$((restarts + 1))
	sleep 0.3
	e -L dtb combined 8 && restarts=$((restarts + 1))
done
wait $spid
wait $rpid
rc=$?
cat /tmp/recv.out
check "20 queue restarts under traffic all succeeded ($restarts)" test $restarts = 20
check "the stream arrived intact across the restarts" test $rc = 0

# A 64-frame TX ring on the sender: completions pace it, nothing is lost.
ip netns exec ns1 ethtool -G dta tx 64 || fail "cannot set the sender's TX ring"
ip netns exec ns2 selftests/net/tcp_stream recv -p 5101 -n 100000000 -s 6 > /tmp/recv.out &
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5101 -n 100000000 -s 6 > /dev/null
check "a stream is intact through a 64-frame TX ring" wait $!
cat /tmp/recv.out
teardown ns1 ns2
finish
