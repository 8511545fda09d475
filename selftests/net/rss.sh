#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# RSS: 16 flows land on the queues the Toeplitz hash and the indirection
# table say (checked against per-queue counters with a known key), a table
# that points at one queue gets everything, and channel changes reset it.
. "$(dirname "$0")/../lib.sh"

n=16 unit=262144 port=7000
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
# The key of Microsoft's RSS verification suite.
key=6d:5a:56:da:25:5b:0e:c2:41:67:25:3d:43:a3:8f:b0:d0:ca:2b:cb:ae:7b:30:b4:77:cb:2d:a3:80:30:f2:0c:6a:42:b7:3b:be:ac:01:fa
ip netns exec ns2 ethtool -X dtb hkey $key equal 8 || fail "cannot set the RSS key"

rx_bytes() { # per-queue rx bytes of dtb, one line "queue bytes" each
	ip netns exec ns2 ethtool -S dtb | sed -n 's/^ *rx\([0-9]*\)_bytes: \([0-9]*\)$/\1 \2/p'
}

run_flows() { # run_flows SPORT0: moves the flows, prints per-queue byte deltas
	local before after
	before=$(rx_bytes)
	ip netns exec ns2 python3 selftests/net/flows.py recv $port $n $unit > /tmp/recv.out &
	sleep 1
	ip netns exec ns1 python3 selftests/net/flows.py send 10.99.0.2 $port $n $unit "$1" ||
		echo "sender failed" >&2
	wait $! || echo "receiver failed: $(cat /tmp/recv.out)" >&2
	after=$(rx_bytes)
	join <(echo "$before") <(echo "$after") | awk '{ print $1, $3 - $2 }'
}

indir=$(ip netns exec ns2 ethtool -x dtb | awk '/^ *[0-9]+:/ { for (i = 2; i <= NF; i++) { printf "%s%s", s, $i; s = "," } }')
expected=$(python3 selftests/net/flows.py queues $key "$indir" 10.99.0.1 10.99.0.2 $port $n 40000 |
	awk -v u=$unit '{ b[$1] += ($2 + 1) * u } END { for (q in b) print q, b[q] }' | sort -n)
echo "expected payload per queue:"; echo "$expected"
deltas=$(run_flows 40000)
echo "received per queue:"; echo "$deltas"
# Each queue got its flows' payload plus headers and handshakes (< 5%).
ok=1
while read -r q want; do
	got=$(awk -v q="$q" '$1 == q { print $2 }' <<< "$deltas")
	if [ -z "$got" ] || [ "$got" -lt "$want" ] || [ "$got" -gt $((want + want / 20 + 4096)) ]; then
		echo "queue $q: got ${got:-0} bytes, want about $want"
		ok=0
	fi
done <<< "$expected"
check "every flow landed on the queue Toeplitz + indirection table give" test $ok = 1
busy=$(awk '$2 > 65536' <<< "$deltas" | wc -l)
check "16 flows spread over several queues ($busy)" test "$busy" -ge 3

ip netns exec ns2 ethtool -X dtb weight 0 0 0 1 0 0 0 0 || fail "cannot set weights"
deltas=$(run_flows 41000)
echo "with all weight on queue 3:"; echo "$deltas"
check "a table pointing at queue 3 sends all flows there" \
	bash -c "awk '\$1 != 3 && \$2 > 65536 { bad = 1 } \$1 == 3 && \$2 < $((unit * n)) { bad = 1 } END { exit bad }' <<< '$deltas'"

out=$(ip netns exec ns2 ethtool -L dtb combined 2 2>&1)
check "channels cannot drop below a queue the user's RSS table uses" test $? -ne 0
echo "$out"
ip netns exec ns2 ethtool -X dtb default || fail "cannot reset the table"
check "with the default table, channels can shrink to 2" ip netns exec ns2 ethtool -L dtb combined 2
deltas=$(run_flows 42000)
echo "with 2 channels:"; echo "$deltas"
check "with 2 channels only queues 0 and 1 receive" \
	bash -c "awk '\$1 >= 2 && \$2 > 0 { bad = 1 } END { exit bad }' <<< '$deltas'"
teardown ns1 ns2
finish
