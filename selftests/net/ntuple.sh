#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# ntuple flow steering and RSS contexts: rules on the receiving end (dtb)
# steer TCP and UDP flows to a queue, to an RSS context or to the floor, as
# dtb's per-queue counters show; bad rules are refused without changing the
# rule list; rules and contexts go away with the device and the module.
. "$(dirname "$0")/../lib.sh"

mb=50000000 small=16384
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
# flows() binds these source ports: keep earlier connections' ephemeral
# ports off them, or a bind may find one still closing.
ip netns exec ns1 sysctl -qw net.ipv4.ip_local_reserved_ports=40000-40015,41000-41015 ||
	fail "cannot reserve the flows' source ports"

et() { ip netns exec ns2 ethtool "$@"; }

rx_bytes() { # per-queue rx bytes of dtb, one line "queue bytes" each
	et -S dtb | sed -n 's/^ *rx\([0-9]*\)_bytes: \([0-9]*\)$/\1 \2/p'
}

measure() { # measure CMD...: runs CMD, prints per-queue byte deltas of dtb
	local before after
	before=$(rx_bytes)
	"$@" >&2 || echo "traffic failed: $*" >&2
	after=$(rx_bytes)
	join <(echo "$before") <(echo "$after") | awk '{ print $1, $3 - $2 }'
}

# only_queue DELTAS Q MIN: queue Q got at least MIN bytes, no other one much.
only_queue() {
	awk -v q="$2" -v min="$3" -v s=$small \
		'$1 == q && $2 < min { bad = 1 } $1 != q && $2 > s { bad = 1 } END { exit bad }' <<< "$1"
}

qbytes() { awk -v q="$2" '$1 == q { print $2 }' <<< "$1"; }

avoid() { # avoid Q: the main RSS table spreads over every queue but Q
	local w=() i
	for i in 0 1 2 3 4 5 6 7; do w+=("$([ "$i" = "$1" ] && echo 0 || echo 1)"); done
	et -X dtb weight "${w[@]}" || fail "cannot set the RSS weights"
}

stream() { # stream [-6] ADDR PORT BYTES: one validated TCP stream ns1 -> ns2
	local v6=()
	if [ "$1" = -6 ]; then v6=(-6); shift; fi
	ip netns exec ns2 selftests/net/tcp_stream recv "${v6[@]}" -p "$2" -n "$3" &
	sleep 0.3
	ip netns exec ns1 selftests/net/tcp_stream send "${v6[@]}" -a "$1" -p "$2" -n "$3"
	wait $!
}

udp_send() { # udp_send PORT COUNT: COUNT datagrams of 1000 bytes to ns2
	ip netns exec ns1 python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[2])):
    s.sendto(b"u" * 1000, ("10.99.0.2", int(sys.argv[1])))' "$1" "$2"
}

flows() { # flows PORT SPORT0: 16 TCP flows with distinct source ports
	local rpid
	ip netns exec ns2 python3 selftests/net/flows.py recv "$1" 16 65536 > /dev/null &
	rpid=$!
	sleep 1
	# A failed send must not leave the receiver waiting for its flows.
	ip netns exec ns1 python3 selftests/net/flows.py send 10.99.0.2 "$1" 16 65536 "$2" ||
		{ kill "$rpid"; wait "$rpid"; return 1; }
	wait "$rpid"
}

rules() { et -n dtb 2>&1 | grep -v "RX rings available"; }
nrules() { et -n dtb | sed -n 's/^Total \([0-9]*\) rules$/\1/p'; }

check "inserting a rule with ntuple off fails" \
	bash -c '! ip netns exec ns2 ethtool -N dtb flow-type tcp4 dst-port 5001 action 5'
et -K dtb ntuple on || fail "cannot turn ntuple on"

# tcp4 to one queue, then back to RSS once the rule is gone.
avoid 5
et -N dtb flow-type tcp4 dst-port 5001 action 5 loc 0 || fail "cannot insert a tcp4 rule"
d=$(measure stream 10.99.0.2 5001 $mb)
echo "tcp4 dst-port 5001 action 5:"; echo "$d"
check "a tcp4 rule steers a stream to queue 5 only" only_queue "$d" 5 $mb
et -N dtb delete 0 || fail "cannot delete rule 0"
d=$(measure stream 10.99.0.2 5001 $mb)
echo "rule deleted:"; echo "$d"
check "without the rule the stream goes by RSS, not to queue 5" test "$(qbytes "$d" 5)" -eq 0

# tcp6 and udp4 rules.
avoid 6
et -N dtb flow-type tcp6 dst-port 5002 action 6 || fail "cannot insert a tcp6 rule"
d=$(measure stream -6 fd99::2 5002 $mb)
echo "tcp6 dst-port 5002 action 6:"; echo "$d"
check "a tcp6 rule steers a stream to queue 6 only" only_queue "$d" 6 $mb
avoid 2
et -N dtb flow-type udp4 dst-port 5003 action 2 || fail "cannot insert a udp4 rule"
d=$(measure udp_send 5003 2000)
echo "udp4 dst-port 5003 action 2:"; echo "$d"
check "a udp4 rule steers datagrams to queue 2 only" only_queue "$d" 2 2000000

# Masked addresses: a matching and a non-matching source prefix.
avoid 5
et -N dtb flow-type tcp4 src-ip 10.98.0.0 m 0.0.255.255 dst-port 5004 action 5 ||
	fail "cannot insert a masked rule"
et -N dtb flow-type tcp4 src-ip 10.99.0.0 m 0.0.0.255 dst-ip 10.99.0.2 m 0.0.0.0 \
	dst-port 5004 action 7 || fail "cannot insert a masked rule"
avoid 7
d=$(measure stream 10.99.0.2 5004 $mb)
echo "src-ip 10.98/16 -> 5, src-ip 10.99.0/24 dst-ip 10.99.0.2 -> 7:"; echo "$d"
check "masked address rules: the matching one steers to queue 7" only_queue "$d" 7 $mb

# Drop rule.
drops0=$(ethtool_stat ns2 dtb rx_ntuple_drops)
et -N dtb flow-type udp4 dst-port 5009 action -1 || fail "cannot insert a drop rule"
d=$(measure udp_send 5009 500)
drops1=$(ethtool_stat ns2 dtb rx_ntuple_drops)
check "a drop rule discards and counts (rx_ntuple_drops +$((drops1 - drops0)))" \
	test $((drops1 - drops0)) -eq 500
check "dropped datagrams reach no queue" only_queue "$d" none 0
# The rules read the frame's bytes: a packet socket's skb that claims to be
# no IP (ETH_P_LOOP) does not slip past them.
dmac=$(ip netns exec ns2 cat /sys/class/net/dtb/address)
got=$(ip netns exec ns2 python3 /devtcp/selftests/net/rawframes.py udp-xfer ns1 dta "$dmac" \
	5009 20 loop | awk '/^delivered/ { print $2 }')
drops2=$(ethtool_stat ns2 dtb rx_ntuple_drops)
check "datagrams whose skb claims ETH_P_LOOP meet the drop rule too (delivered $got, rx_ntuple_drops +$((drops2 - drops1)))" \
	test "$got" = 0 -a $((drops2 - drops1)) -eq 20

# An RSS context over queues 4-7 for port 6000, the main table on 0-3.
# Both hash with a fixed key (Microsoft's RSS verification key, as in
# rss.sh): the 16 flows' source ports differ in their low 4 bits only, and
# with a random key their hashes all pick the same queue once in about 256
# boots. With this one, flows.py queues puts 4 flows on each of 4-7.
key=6d:5a:56:da:25:5b:0e:c2:41:67:25:3d:43:a3:8f:b0:d0:ca:2b:cb:ae:7b:30:b4:77:cb:2d:a3:80:30:f2:0c:6a:42:b7:3b:be:ac:01:fa
out=$(et -X dtb context new start 4 equal 4 hkey $key) || fail "cannot create an RSS context"
echo "$out"
ctx=$(sed -n 's/^New RSS context is \([0-9]*\)$/\1/p' <<< "$out")
check "the new context has an id ($ctx)" test -n "$ctx"
et -X dtb hkey $key weight 1 1 1 1 0 0 0 0 || fail "cannot set the main table"
et -N dtb flow-type tcp4 dst-port 6000 context "$ctx" loc 100 ||
	fail "cannot insert a rule to context $ctx"
d=$(measure flows 6000 40000)
echo "16 flows to port 6000 (context $ctx):"; echo "$d"
check "flows of the context rule land on queues 4-7 only" \
	awk -v s=$small '$1 < 4 && $2 > s { bad = 1 } $1 >= 4 { t += $2 } END { exit bad || t < 8912896 }' <<< "$d"
check "they spread over several of queues 4-7" \
	test "$(awk '$1 >= 4 && $2 > 65536' <<< "$d" | wc -l)" -ge 2
d=$(measure flows 6001 41000)
echo "16 flows to port 6001 (main table):"; echo "$d"
check "other flows land on queues 0-3 only" \
	awk -v s=$small '$1 >= 4 && $2 > s { bad = 1 } $1 < 4 { t += $2 } END { exit bad || t < 8912896 }' <<< "$d"

# Bad input changes nothing.
before=$(rules)
bad() { check "refused: ethtool $*" bash -c '! ip netns exec ns2 ethtool "$@"' - "$@"; }
bad -N dtb flow-type tcp4 dst-port 7000 action 8
bad -N dtb flow-type tcp4 dst-port 7000 action 1 loc 256
bad -N dtb flow-type ether dst 00:11:22:33:44:55 action 1
bad -N dtb flow-type sctp4 dst-port 7000 action 1
bad -N dtb flow-type tcp4 dst-port 7000 context 9
bad -N dtb delete 200
bad -X dtb context "$ctx" delete
check "the rule list is unchanged after refused requests" test "$(rules)" = "$before"
# One shell in the namespace: ip netns exec per rule is slow under TCG.
ip netns exec ns2 bash -c 'for ((i = $1; i < 256; i++)); do
	ethtool -N dtb flow-type udp4 dst-port $((20000 + i)) action 1 > /dev/null || exit 1
done' - "$(nrules)"
check "256 rules fit" test "$(nrules)" = 256
full=$(rules)
bad -N dtb flow-type tcp4 dst-port 7000 action 1
check "the full rule list is unchanged after the 257th rule" test "$(rules)" = "$full"
ip netns exec ns2 bash -c 'for loc in $(ethtool -n dtb |
	awk "/^Filter:/ { f = \$2 } /Dest port: 2[0-9][0-9][0-9][0-9] / { print f }"); do
	ethtool -N dtb delete $loc || exit 1
done'
check "the filler rules are deleted" test "$(rules)" = "$before"

# Channels cannot drop below a queue a rule uses.
for loc in $(et -n dtb | awk '/^Filter:/ { print $2 }'); do et -N dtb delete "$loc"; done
check "the unused context can be deleted" et -X dtb context "$ctx" delete
et -X dtb default || fail "cannot reset the main table"
et -N dtb flow-type tcp4 dst-port 5001 action 5 loc 3 || fail "cannot insert a rule"
check "channels cannot drop below a queue a rule uses" \
	bash -c '! ip netns exec ns2 ethtool -L dtb combined 4'
check "the channel count is unchanged" \
	test "$(et -l dtb | awk '/^Combined:/ { c = $2 } END { print c }')" = 8
et -N dtb delete 3
check "without the rule channels shrink to 4" et -L dtb combined 4
et -L dtb combined 8 || fail "cannot restore 8 channels"

# ntuple off removes the rules.
et -N dtb flow-type tcp4 dst-port 5001 action 5 > /dev/null || fail "cannot insert a rule"
et -K dtb ntuple off || fail "cannot turn ntuple off"
check "ntuple off removes every rule" test "$(nrules)" = 0

# Rules and contexts go with the device and with the module.
et -K dtb ntuple on
ctx=$(et -X dtb context new equal 2 | sed -n 's/^New RSS context is //p')
et -N dtb flow-type tcp6 dst-port 5002 context "$ctx" > /dev/null || fail "cannot insert a rule"
teardown ns1 ns2
devtcp_pair dta ns1 dtb ns2 || fail "cannot recreate the pair"
et -K dtb ntuple on
check "a recreated pair has no rules" test "$(nrules)" = 0
check "a recreated pair has no context" bash -c '! ip netns exec ns2 ethtool -x dtb context 1'
et -X dtb context new start 4 equal 4 > /dev/null || fail "cannot create a context"
et -N dtb flow-type tcp4 dst-port 6000 context 1 > /dev/null || fail "cannot insert a rule"
et -N dtb flow-type udp4 dst-port 6000 action 3 > /dev/null || fail "cannot insert a rule"
stream 10.99.0.2 6000 1000000 || echo "stream failed"
check "rmmod with rules and contexts installed succeeds" rmmod devtcp
ip netns del ns1
ip netns del ns2
check "the module loads again" insmod "$DEVTCP_KO"
finish
