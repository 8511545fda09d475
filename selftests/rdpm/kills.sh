#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# SIGKILLs under traffic: an rdpmd client (uid 1000) receiving a devmem
# stream is killed mid-stream every cycle, and every fourth cycle rdpmd is
# killed first and started again (it removes the rule its predecessor left).
# After every cycle nothing stays bound or steered; at the end no page pool
# or dma-buf is left and the NIC is as before rdpmd. DEVTCP_KILLS sets the
# cycles (default 8; selftests/bench/soak runs 200).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rdpm_lib.sh"

cycles=${DEVTCP_KILLS:-8}
rdpm_setup
ifx=$(ifindex)
before=$(snapshot)
pools0=$(page_pools ns2 "$ifx")
bufs0=$(dmabufs)
echo "before: $pools0, $bufs0 dma-bufs"
check "rdpmd starts" start_rdpmd
rx_bytes() { b ethtool -S dtb | awk '/^ *rx[0-9]+_bytes:/ { s += $2 } END { print s + 0 }'; }
bytes0=$(rx_bytes)

client_kills=0 daemon_kills=0 clean=0
for ((i = 1; i <= cycles; i++)); do
	port=$((5200 + i))
	: > /tmp/kill.err
	"${U1000[@]}" $CLIENT recv dtb $port 4000000000 $i > /dev/null 2> /tmp/kill.err &
	pc=$!
	if ! wait_for /tmp/kill.err listening; then
		echo "cycle $i: the client never listened"
		cat /tmp/kill.err
		break
	fi
	a timeout 600 /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p $port \
		-n 4000000000 -s $i > /dev/null 2>&1 &
	ps=$!
	# Mid-stream: once a megabyte has come in (on the debug kernel a
	# process start alone can take longer than a fixed wait would).
	cycle0=$(rx_bytes)
	for _ in $(seq 100); do (($(rx_bytes) - cycle0 >= 1000000)) && break; sleep 0.1; done
	if ((i % 4 == 0)); then
		kill -KILL "$RDPMD_PID"
		wait "$RDPMD_PID" 2> /dev/null
		daemon_kills=$((daemon_kills + 1))
	fi
	kill -KILL $pc
	wait $pc 2> /dev/null
	client_kills=$((client_kills + 1))
	kill $ps 2> /dev/null
	wait $ps 2> /dev/null
	if ((i % 4 == 0)) && ! start_rdpmd; then
		echo "cycle $i: rdpmd did not start again"
		break
	fi
	if ! within_1s nothing_bound; then
		echo "cycle $i: left behind: $(rules) rules, $(bound_queues) bound queues"
		break
	fi
	clean=$((clean + 1))
done
echo "kills: client $client_kills, daemon $daemon_kills"
moved=$(( $(rx_bytes) - bytes0 ))
check "each client was killed mid-stream ($moved bytes received, >= 1 MB a cycle)" \
	test $moved -ge $((cycles * 1000000))
check "$cycles cycles: nothing bound or steered after any ($clean clean)" test $clean = "$cycles"
check "rdpmd's restarts removed the rules left by the killed ones" \
	test "$(grep -c 'recovery removed 1 stale rule' $RDPM_LOG)" = $((cycles / 4))
check "rdpmd exits cleanly" stop_rdpmd
check "the NIC is as before rdpmd" test "$before" = "$(snapshot)"
check "no page pool or dma-buf left" wait_buffers_back ns2 "$ifx" "$pools0" "$bufs0" 60
echo "after: $(page_pools ns2 "$ifx"), $(dmabufs) dma-bufs"
rdpm_cleanup
finish
