#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# netdev_queue_mgmt_ops: RX queues restarted one at a time by the core with
# fresh memory, a thousand times while a stream flows: the stream arrives
# intact, every restart is counted, and no page pool is left behind.
. "$(dirname "$0")/../lib.sh"

restarts=${DEVTCP_RESTARTS:-1000}
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ip netns exec ns2 ethtool -G dtb tcp-data-split on || fail "cannot enable header split"
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
nl() { ip netns exec ns2 python3 selftests/net/genl.py "$@"; }

echo "before: $(nl page-pools "$ifindex")"
check "every RX queue has a NAPI in netdev netlink" \
	test "$(nl queues "$ifindex" | awk '$1 == "rx" && $4 > 0' | wc -l)" = 8
check "TX queue N shares RX queue N's NAPI (combined channels)" \
	test "$(nl queues "$ifindex" | awk '{ napi[$1, $2] = $4 } END {
		for (q = 0; q < 8; q++) if (napi["rx", q] != napi["tx", q]) bad = 1; print bad + 0 }')" = 0
check "two page pools per RX queue (header and payload)" \
	bash -c "[[ '$(nl page-pools "$ifindex")' == 'pools 16 '* ]]"

bytes=200000000
ip netns exec ns2 selftests/net/tcp_stream recv -p 5300 -n $bytes -s 3 > /tmp/recv.out &
rpid=$!
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5300 -n $bytes -s 3 > /dev/null &
spid=$!
ip netns exec ns2 bash -c "
	for ((i = 0; i < $restarts; i++)); do
		echo \$((i % 8)) > /sys/class/net/dtb/devtcp/restart_rx_queue || exit 1
	done" || echo "a restart failed"
wait $spid
wait $rpid
rc=$?
cat /tmp/recv.out
check "the stream arrived intact across $restarts restarts" test $rc = 0
done_restarts=$(ip netns exec ns2 ethtool -S dtb | awk '/rx[0-9]+_restarts:/ { s += $2 } END { print s }')
check "the driver counted $restarts restarts ($done_restarts)" test "$done_restarts" = "$restarts"

et_bytes() { ip netns exec ns2 ethtool -S dtb | sed -n 's/^ *rx\([0-9]*\)_bytes: \([0-9]*\)$/\1 \2/p'; }
# Stray frames (IPv6 neighbour discovery) may land between two reads: the
# netlink value must lie between ethtool's values read before and after it.
before=$(et_bytes)
nl_bytes=$(nl qstats "$ifindex" | awk '$1 == "rx" { print $2, $6 }')
after=$(et_bytes)
echo "rx bytes per queue (qstats-get):"; echo "$nl_bytes"
check "netdev qstats-get per-queue rx bytes match ethtool -S" test "$(
	join <(echo "$before") <(echo "$nl_bytes") | join - <(echo "$after") |
	awk '$2 > $3 || $3 > $4 { bad++ } END { print NR == 8 && !bad }')" = 1
check "qstats-get counts the stream" \
	test "$(awk '{ s += $2 } END { print s }' <<< "$nl_bytes")" -ge $bytes

out=$(ip netns exec ns2 bash -c 'echo 8 > /sys/class/net/dtb/devtcp/restart_rx_queue' 2>&1)
check "restarting a queue that does not exist fails" test $? -ne 0
echo "$out"

# Pools replaced by restarts go away once their pages come back.
for i in $(seq 30); do
	[[ "$(nl page-pools "$ifindex")" == "pools 16 "* ]] && break
	sleep 1
done
echo "after: $(nl page-pools "$ifindex")"
check "still exactly 16 page pools after the restarts" \
	bash -c "[[ '$(nl page-pools "$ifindex")' == 'pools 16 '* ]]"
teardown ns1 ns2
finish
