#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Frames whose lengths point past their end or below their minimum
# (selftests/net/rawframes.py builds them, an AF_PACKET socket sends them
# so that no stack fixes them): the receiving device drops each one and
# counts it in rx<q>_malformed, the link's rx length errors and netdev
# qstats rx-hw-drops, with header split off and on; nothing of them reaches
# a packet socket on the receiving side, and the pair still carries a ping
# and a stream. The last three kinds panicked the receiving host (BUG in
# __pskb_pull_tail, header split off) before the device parsed frames: an
# IPv6 extension header past the frame, a TCP header longer than its
# segment, and the 4-byte UDP datagram of a raw socket.
# DEVTCP_MALFORMED_KINDS="KIND..." sends only those (rawframes.py's names),
# DEVTCP_MALFORMED_SPLIT="on" (or "off") tries only that header split.
. "$(dirname "$0")/../lib.sh"

n=5
kinds=${DEVTCP_MALFORMED_KINDS:-tcp-doff-small udp-short ip4-totlen ip4-ihl ip6-paylen ip6-ext \
tcp-doff-past udp4-raw}
splits=${DEVTCP_MALFORMED_SPLIT:-off on}
frames="python3 /devtcp/selftests/net/rawframes.py"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
dmac=$(ip netns exec ns2 cat /sys/class/net/dtb/address)
# neighbours resolved, so that the raw socket's frames go at once
ip netns exec ns1 ping -q -c 1 -W 5 10.99.0.2 > /dev/null || fail "no ping before the test"

malformed() {
	ip netns exec ns2 ethtool -S dtb | awk '/^ *rx[0-9]+_malformed:/ { s += $2 } END { print s + 0 }'
}
# the link's rx length errors, as rtnetlink reports them
length_errors() {
	ip -n ns2 -s -s link show dev dtb | awk '/RX errors:/ { getline; print $1; exit }'
}
hw_drops() {
	ip netns exec ns2 python3 /devtcp/selftests/net/genl.py qstats "$ifindex" rx-hw-drops |
		awk '{ s += $4 } END { print s + 0 }'
}
nkinds=$(wc -w <<< "$kinds")

for split in $splits; do
	phase "header split $split"
	echo "== header split $split (at ${SECONDS} s)"
	ip netns exec ns2 ethtool -G dtb tcp-data-split $split || fail "cannot set header split $split"
	l0=$(length_errors); h0=$(hw_drops)
	: > /tmp/sniff.out
	# until the well-formed frame sent last (the limit: a guard only)
	ip netns exec ns2 $frames sniff dtb $((300 * scale)) > /tmp/sniff.out &
	sniffer=$!
	wait_listen /tmp/sniff.out || fail "the sniffer in ns2 did not start"
	for kind in $kinds; do
		m0=$(malformed)
		ip netns exec ns1 $frames send dta "$dmac" "$kind" $n
		within_1s eval 'test "$(malformed)" -ge $((m0 + n))'
		m=$(($(malformed) - m0))
		check "split $split: $n x $kind: rx*_malformed rose by $n (by $m)" test $m = $n
	done
	# A well-formed frame ends the capture: the sniffer saw what got through.
	ip netns exec ns1 $frames send dta "$dmac" stop 1
	wait $sniffer
	l=$(($(length_errors) - l0)); h=$(($(hw_drops) - h0))
	check "split $split: rx length errors rose by $((n * nkinds)) (by $l)" test $l = $((n * nkinds))
	check "split $split: qstats rx-hw-drops rose by $((n * nkinds)) (by $h)" \
		test $h = $((n * nkinds))
	cat /tmp/sniff.out
	check "split $split: a packet socket in ns2 got the well-formed frame" \
		grep -qx "stop 1" /tmp/sniff.out
	check "split $split: ... and none of the malformed ones" grep -qx "seen none" /tmp/sniff.out
	check "split $split: a ping passes after them" ip netns exec ns1 ping -q -c 3 -W 5 10.99.0.2
	check "split $split: ... and a validated stream" plain_stream 5500 20000000 7
done
ip netns exec ns2 ethtool -S dtb | grep -E "rx[0-9]+_(malformed|csum_bad)"
ip -n ns2 -s -s link show dev dtb
echo "== teardown (at ${SECONDS} s)"
teardown ns1 ns2
finish
