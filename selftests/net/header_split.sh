#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Header split and hds-thresh (set over ethtool netlink by genl.py): frames
# whose payload is no larger than the threshold stay whole in the header
# buffer, larger ones are split, frames without a TCP or UDP header (ICMP,
# IP fragments) not while they fit the header buffer; out-of-range
# thresholds are refused with the core's message and change nothing;
# "auto" leaves the device at its default, no split, and says so.
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
nl() { ip netns exec ns2 python3 selftests/net/genl.py "$@"; }
split_total() {
	ip netns exec ns2 ethtool -S dtb | awk '/rx[0-9]+_split_packets:/ { s += $2 } END { print s + 0 }'
}
rx_total() {
	ip netns exec ns2 ethtool -S dtb | awk '/rx[0-9]+_packets:/ { s += $2 } END { print s + 0 }'
}
# send_udp SIZE COUNT: datagrams from ns1 to ns2
send_udp() {
	ip netns exec ns1 python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range($2):
    s.sendto(b'u' * $1, ('10.99.0.2', 9999))"
}

ip netns exec ns2 ethtool -G dtb tcp-data-split on || fail "cannot enable header split"
check "hds-thresh starts at 0 with maximum 1024" \
	test "$(nl hds-thresh dtb)" = "hds-thresh 0 max 1024"

out=$(nl set-hds-thresh dtb 2000 2>&1)
check "hds-thresh 2000 is refused" test $? -ne 0
echo "$out"
check "... with a message" grep -q "exceeds maximum" <<< "$out"
check "... and it stays 0" test "$(nl hds-thresh dtb)" = "hds-thresh 0 max 1024"

# udp_split SIZE: sends 200 datagrams of SIZE bytes, sets $frames and $split
# to how many frames the receiver got and how many of them it split.
udp_split() {
	local s0 p0
	s0=$(split_total); p0=$(rx_total)
	send_udp "$1" 200
	sleep 1
	split=$(($(split_total) - s0)); frames=$(($(rx_total) - p0))
	echo "threshold $(nl hds-thresh dtb | awk '{ print $2 }'), $1 bytes: $frames frames, $split split"
}

# Threshold 0: every datagram with payload is split.
udp_split 100
check "with hds-thresh 0, 100-byte datagrams are split" test $split -ge 200

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

check "hds-thresh 256 is accepted" nl set-hds-thresh dtb 256
check "... and reads back" test "$(nl hds-thresh dtb)" = "hds-thresh 256 max 1024"
udp_split 100
check "100-byte datagrams stay whole under threshold 256" test $split -eq 0
check "... and were received" test $frames -ge 200
udp_split 600
check "600-byte datagrams are split under threshold 256" test $split -ge 200

check "a stream is intact with hds-thresh 256" plain_stream 5400 50000000 11

# "auto": the device decides, and it splits only when told to ("on").
nl set-hds-thresh dtb 0
check "tcp-data-split auto is accepted" ip netns exec ns2 ethtool -G dtb tcp-data-split auto
ip netns exec ns2 ethtool -g dtb | grep -i "split"
check "... and reported as off, the state it gives" \
	bash -c "ip netns exec ns2 ethtool -g dtb | grep -iq 'TCP data split:[[:space:]]*off'"
udp_split 600
check "... and nothing is split under it" test $split -eq 0 -a $frames -ge 200
ip netns exec ns2 ethtool -G dtb tcp-data-split on
udp_split 600
check "on again: 600-byte datagrams are split" test $split -ge 200
ip netns del ns1
ip netns del ns2
finish
