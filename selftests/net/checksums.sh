#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# TCP and UDP checksums through the pair. The receiving device verifies
# what the sender's stack did not offload: UDP datagrams with a wrong
# checksum (sent through an AF_PACKET socket by selftests/net/rawframes.py)
# are not delivered, the stack counts them (UdpInCsumErrors) and the device
# too (rx<q>_csum_bad), right ones go up verified (rx<q>_csum_unnecessary);
# with rx-checksumming off the device verifies nothing (rx<q>_csum_none) and
# the stack still drops the wrong ones. What the sender offloaded
# (CHECKSUM_PARTIAL) the receiving device fills in: a namespace that
# forwards the frames to a veth without checksum offload sends them on
# with every checksum right. On a queue bound to a dma-buf, TCP segments
# with a wrong checksum land in host memory for the stack to drop
# (TcpInCsumErrors) while a devmem stream on the same port stays intact.
# DEVTCP_CSUM_DEVMEM_BYTES sets that stream's size (default 80 MB).
. "$(dirname "$0")/../lib.sh"

n=10
q=3
bytes=${DEVTCP_CSUM_DEVMEM_BYTES:-80000000}
frames="python3 /devtcp/selftests/net/rawframes.py"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
dmac=$(ip netns exec ns2 cat /sys/class/net/dtb/address)
ip netns exec ns1 ping -q -c 1 -W 5 10.99.0.2 > /dev/null || fail "no ping before the test"
ip netns exec ns1 ping -q -c 1 -W 5 fd99::2 > /dev/null || fail "no IPv6 ping before the test"
phase "checksums start"

# rx<q>_csum_bad, _unnecessary and _none of ethtool -S dtb, each summed over the queues
rxc() {
	ip netns exec ns2 ethtool -S dtb | awk '$1 ~ /^rx[0-9]+_csum_/ { split($1, a, "_csum_"); s[a[2]] += $2 }
		END { print s["bad:"] + 0, s["unnecessary:"] + 0, s["none:"] + 0 }'
}
# snmp NS PROTO FIELD: a counter of /proc/net/snmp ("Udp" "InCsumErrors"),
# or of /proc/net/snmp6 with PROTO "6" ("6" "Udp6InCsumErrors")
snmp() {
	if [ "$2" = 6 ]; then
		ip netns exec "$1" awk -v f="$3" '$1 == f { print $2 }' /proc/net/snmp6
		return
	fi
	ip netns exec "$1" awk -v p="$2:" -v f="$3" '$1 == p {
		if (!h) { for (i = 2; i <= NF; i++) if ($i == f) c = i; h = 1 } else print $c }' /proc/net/snmp
}
udp_errors() { if [ "$1" = 6 ]; then snmp ns2 6 Udp6InCsumErrors; else snmp ns2 Udp InCsumErrors; fi; }
# xfer FAMILY [offload]: $n datagrams with a wrong checksum and $n with the
# right one, in turn, from ns1 to a UDP socket in ns2 (1000 bytes each;
# offload: left to the sending device, with a wrong or right pseudo-header
# sum in the field); sets got to
# how many it received, e to the rise of the UDP checksum errors in ns2, b,
# u and c to those of the device's csum_bad, csum_unnecessary and csum_none.
xfer() {
	local b0 u0 c0 e0
	read -r b0 u0 c0 < <(rxc)
	e0=$(udp_errors "$1")
	got=$(ip netns exec ns2 $frames udp-xfer ns1 dta "$dmac" 9000 $n "${2:-mixed}" "$1" |
		awk '/^delivered/ { print $2 }')
	read -r b u c < <(rxc)
	b=$((b - b0)); u=$((u - u0)); c=$((c - c0)); e=$(($(udp_errors "$1") - e0))
	echo "IPv$1${2:+ ($2)}, $n wrong and $n right: delivered $got, UDP csum errors +$e," \
		"rx csum_bad +$b," \
		"csum_unnecessary +$u, csum_none +$c"
}

phase "verified by the device"
echo "== verified by the device (at ${SECONDS} s)"
for fam in 4 6; do
	xfer $fam
	check "IPv$fam: of $n UDP datagrams with a wrong checksum and $n with the right one, the right ones are delivered" \
		test "$got" = $n
	check "... UDP checksum errors in ns2 rose by $n" test $e = $n
	check "... rx*_csum_bad rose by $n" test $b = $n
	check "... rx*_csum_unnecessary rose by $n" test $u = $n
	# A packet socket can hand the device any value to sum from.
	xfer $fam offload
	check "IPv$fam, checksums offloaded from a packet socket: the $n with the pseudo-header's sum in the field are delivered" \
		test "$got" = $n
	check "... the $n with another value fail: UDP checksum errors in ns2 rose by $n" \
		test $e = $n
	check "... rx*_csum_bad rose by $n, rx*_csum_unnecessary by $n" test $b = $n -a $u = $n
done
# csum_none also counts what comes meanwhile (neighbour discovery): read between two
ethtool0=$(rxc)
qs=$(ip netns exec ns2 python3 /devtcp/selftests/net/genl.py qstats "$ifindex" rx-csum-bad \
	rx-csum-unnecessary rx-csum-none | awk '{ b += $4; u += $6; c += $8 } END { print b, u, c }')
ethtool1=$(rxc)
echo "csum bad, unnecessary, none: ethtool -S $ethtool0, then qstats $qs, then ethtool -S $ethtool1"
check "netdev qstats rx-csum-bad/-unnecessary/-none agree with ethtool -S" \
	awk -v a="$ethtool0" -v q="$qs" -v b="$ethtool1" 'BEGIN { split(a, x); split(q, y); split(b, z)
		for (i = 1; i <= 3; i++) if (y[i] < x[i] || y[i] > z[i]) exit 1 }'

phase "rx-checksumming off"
echo "== rx-checksumming off (at ${SECONDS} s)"
ip netns exec ns2 ethtool -K dtb rx off || fail "cannot turn rx-checksumming off"
xfer 4
check "rx off: the $n right ones are delivered, the $n wrong ones not" test "$got" = $n
check "... UDP checksum errors in ns2 rose by $n" test $e = $n
check "... the device verified none: csum_none rose by $((2 * n)) (at least), csum_bad and csum_unnecessary not" \
	test $c -ge $((2 * n)) -a $b = 0 -a $u = 0
ip netns exec ns2 ethtool -K dtb rx on || fail "cannot turn rx-checksumming on again"

phase "forwarding"
echo "== forwarding (at ${SECONDS} s)"
# ns2 routes between the pair and a veth into ns3; veth computes nothing
# (tx off) and ns3 merges nothing (gro off): what ns3 captures is what ns2
# sent, checksums as the receiving devtcp device left them.
ip netns add ns3 || fail "cannot create ns3"
ip link add vf2 netns ns2 type veth peer vf3 netns ns3 || fail "cannot create the veth pair"
ip -n ns2 addr add 10.98.0.1/24 dev vf2
ip -n ns2 addr add fd98::1/64 dev vf2 nodad
ip -n ns3 addr add 10.98.0.2/24 dev vf3
ip -n ns3 addr add fd98::2/64 dev vf3 nodad
ip -n ns2 link set vf2 up
ip -n ns3 link set vf3 up
ip -n ns3 link set lo up
ip -n ns3 route add default via 10.98.0.1
ip -n ns3 -6 route add default via fd98::1
ip -n ns1 route add 10.98.0.0/24 via 10.99.0.2
ip -n ns1 -6 route add fd98::/64 via fd99::2
ip netns exec ns2 sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
ip netns exec ns2 ethtool -K vf2 tx off > /dev/null || fail "cannot turn veth tx-checksumming off"
ip netns exec ns3 ethtool -K vf3 gro off > /dev/null
ip netns exec ns2 ethtool -k vf2 | grep -E "^tx-checksumming|tcp-segmentation-offload"
ip netns exec ns1 ping -q -c 1 -W 5 10.98.0.2 > /dev/null || fail "no ping from ns1 to ns3"
ip netns exec ns1 ping -q -c 1 -W 5 fd98::2 > /dev/null || fail "no IPv6 ping from ns1 to ns3"
: > /tmp/cap.out
ip netns exec ns3 $frames csum-capture vf3 $((300 * scale)) > /tmp/cap.out &
capture=$!
wait_listen /tmp/cap.out || fail "the capture in ns3 did not start"
# ordinary UDP sockets: the stack offloads their checksums to dta
ip netns exec ns1 python3 -c "
import socket
for fam, dst in ((socket.AF_INET, '10.98.0.2'), (socket.AF_INET6, 'fd98::2')):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    for size in (1, 100, 1000, 1400):
        for i in range(10):
            s.sendto(bytes((i + k) % 256 for k in range(size)), (dst, 9000))"
# TCP both ways over the forwarder, data from ns1: TSO frames and single segments
fwd_stream() {
	local pid
	: > /tmp/fwd.out
	ip netns exec ns3 /devtcp/selftests/net/tcp_stream recv $1 -p "$2" -n 500000 -s 5 \
		> /tmp/fwd.out 2>&1 &
	pid=$!
	wait_listen /tmp/fwd.out
	ip netns exec ns1 /devtcp/selftests/net/tcp_stream send $1 -a "$3" -p "$2" -n 500000 -s 5 \
		> /dev/null
	wait $pid
}
check "a validated TCP stream from ns1 to ns3 through the forwarder" fwd_stream "" 5600 10.98.0.2
check "... and over IPv6" fwd_stream -6 5601 fd98::2
ip netns exec ns1 python3 -c "
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'rawframes-stop', ('10.98.0.2', 9))"
wait $capture
cat /tmp/cap.out
read -r _ udp4 _ udp4_bad _ tcp4 _ tcp4_bad _ udp6 _ udp6_bad _ tcp6 _ tcp6_bad \
	< <(grep '^udp4 ' /tmp/cap.out)
check "ns3 captured the forwarded frames up to the last" grep -qx "stop 1" /tmp/cap.out
check "forwarded UDP/IPv4 datagrams: all $udp4 with the right checksum" \
	test "$udp4" -ge 40 -a "$udp4_bad" = 0
check "forwarded UDP/IPv6 datagrams: all $udp6 with the right checksum" \
	test "$udp6" -ge 40 -a "$udp6_bad" = 0
check "forwarded TCP/IPv4 segments: all $tcp4 with the right checksum" \
	test "$tcp4" -ge 100 -a "$tcp4_bad" = 0
check "forwarded TCP/IPv6 segments: all $tcp6 with the right checksum" \
	test "$tcp6" -ge 100 -a "$tcp6_bad" = 0
ip -n ns2 link del vf2
ip netns exec ns2 sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0

phase "devmem"
echo "== devmem (at ${SECONDS} s)"
# A devmem stream into a dma-buf bound to queue 3, and while it runs TCP
# segments of 3000 bytes with a wrong checksum on its 4-tuple (MTU 9000 for
# them), steered to the same queue.
devmem_steer ns2 dtb $q 5001 || fail "cannot steer port 5001 to queue $q"
ip -n ns1 link set dta mtu 9000
ip -n ns2 link set dtb mtu 9000
tcp_errors0=$(snmp ns2 Tcp InCsumErrors)
bad0=$(ethtool_stat ns2 dtb rx${q}_csum_bad)
: > /tmp/rx.out
timeout 300 ip netns exec ns2 /devtcp/selftests/net/devmem_rx -i dtb -q $q -p 5001 -n "$bytes" \
	-s 41 > /tmp/rx.out 2>&1 &
rxpid=$!
wait_listen /tmp/rx.out || fail "the devmem receiver did not start"
# the bad segments go the moment the stream's connection is up: the
# stream starts once their sender looks for it (it lasts 1.6 s here,
# python's start under TCG about as long)
: > /tmp/bad.out
ip netns exec ns1 $frames tcp-bad dta "$dmac" auto 5001 $n 3000 > /tmp/bad.out 2>&1 &
badpid=$!
for _ in $(seq $((100 * scale))); do grep -q waiting /tmp/bad.out && break; sleep 0.1; done
timeout 300 ip netns exec ns1 /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 \
	-n "$bytes" -s 41 > /dev/null &
txpid=$!
wait $badpid
badrc=$?
cat /tmp/bad.out
# the sender still runs once they went: they went during the stream
running=0
kill -0 $txpid 2> /dev/null && running=1
wait $txpid
txrc=$?
wait $rxpid
rxrc=$?
cat /tmp/rx.out
tcp_errors=$(($(snmp ns2 Tcp InCsumErrors) - tcp_errors0))
bad=$(($(ethtool_stat ns2 dtb rx${q}_csum_bad) - bad0))
echo "TcpInCsumErrors +$tcp_errors, rx${q}_csum_bad +$bad"
check "$n segments went on the stream's 4-tuple while it ran" test $badrc = 0 -a $running = 1
check "$n TCP segments with a wrong checksum: TcpInCsumErrors in ns2 rose by $n" \
	test $tcp_errors = $n
check "... rx${q}_csum_bad rose by $n" test $bad = $n
check "the devmem stream completed, every byte validated (sender $txrc, receiver $rxrc)" \
	test $txrc = 0 -a $rxrc = 0
check "... none mismatched" grep -q " 0 mismatched" /tmp/rx.out
kernel_quiet "devtcp-test: phase checksums start" "the checksum tests"
dma_failed=$(dmesg | awk '/devtcp-test: phase checksums start/ { n = 0 } /payload DMA failed/ { n++ }
	END { print n + 0 }')
check "no payload DMA failed (devtcp's log: $dma_failed)" test "$dma_failed" = 0
echo "== teardown (at ${SECONDS} s)"
teardown ns1 ns2 ns3
finish
