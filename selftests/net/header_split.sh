#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Header split (hds-thresh 0, the only setting of kernels before 6.14; see
# hds_thresh.sh for the threshold): frames with payload are split, frames
# without a TCP or UDP header (ICMP, IP fragments) not while they fit the
# header buffer; "auto" leaves the device at its default, no split, and
# says so.
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ip netns exec ns2 ethtool -G dtb tcp-data-split on || fail "cannot enable header split"
# Every datagram with payload is split.
udp_split 100
check "100-byte datagrams are split" test $split -ge 200

# Frames without a TCP or UDP header (ICMP, ARP) stay whole when they fit.
s0=$(split_total); p0=$(rx_total)
ip netns exec ns1 ping -q -c 20 -i 0.05 -s 1000 10.99.0.2 > /dev/null
check "1000-byte pings are not split and get answers" \
	test $? = 0 -a $(($(split_total) - s0)) = 0 -a $(($(rx_total) - p0)) -ge 20

# IP fragments: after the first, the bytes where a UDP header would be are
# payload; none of them is cut (they fit), and the datagrams arrive whole.
ip netns exec ns2 python3 -c "
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('10.99.0.2', 9998))
s.settimeout(10)
good = 0
for _ in range(50):
    d = s.recv(65536)
    good += d == bytes(i % 251 for i in range(4000))
print(good)" > /tmp/frag.out &
rpid=$!
sleep 0.5
s0=$(split_total); p0=$(rx_total)
ip netns exec ns1 python3 -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(50):
    s.sendto(bytes(i % 251 for i in range(4000)), ('10.99.0.2', 9998))
    time.sleep(0.01)"
wait $rpid
echo "fragmented datagrams: $(cat /tmp/frag.out) of 50 intact; $(($(rx_total) - p0)) frames, $(($(split_total) - s0)) split"
check "50 datagrams of 4000 bytes (3 fragments each) arrive intact" test "$(cat /tmp/frag.out)" = 50
check "... and no fragment was split" test $(($(split_total) - s0)) = 0 -a $(($(rx_total) - p0)) -ge 150

# "auto": the device decides, and it splits only when told to ("on").
check "tcp-data-split auto is accepted" ip netns exec ns2 ethtool -G dtb tcp-data-split auto
ip netns exec ns2 ethtool -g dtb | grep -i "split"
check "... and reported as off, the state it gives" \
	bash -c "ip netns exec ns2 ethtool -g dtb | grep -iq 'TCP data split:[[:space:]]*off'"
udp_split 600
check "... and nothing is split under it" test $split -eq 0 -a $frames -ge 200
ip netns exec ns2 ethtool -G dtb tcp-data-split on
udp_split 600
check "on again: 600-byte datagrams are split" test $split -ge 200
teardown ns1 ns2
finish
