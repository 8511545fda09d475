#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Hostile frames at the receiving NIC (selftests/net/frame_fuzz.py: short and
# truncated frames, every IPv4 IHL and TCP data offset, bad lengths and
# options, short UDP, IPv4 fragments, IPv6 extension headers, VLAN tags,
# zero-payload, maximum-size and oversized frames, good and bad checksums,
# random bytes; from an AF_PACKET socket on dta and AF_INET raw sockets, the
# first frame the 4-byte UDP datagram that once hit a BUG in
# __pskb_pull_tail) in phases, each beside validated TCP streams:
#   1 header split off;
#   2 header split on, MTU 9000 (jumbo frames);
#   3 devmem RX bound on queue 3, MTU 9000, the fuzzer's frames steered there
#     too (TCP and UDP, IPv4 and IPv6);
#   4 io_uring zcrx registered on queue 3 (kernels with zcrx: 6.15 and later);
#   5 RX queues restarting and rings changing all along.
# Per phase: the kernel reports nothing (upstream reports that
# selftests/vm/kcheck knows aside), every stream arrives intact, and the
# receiver's ethtool -S counters (summed over queues) count at least the
# frames that were certainly malformed (rx<q>_malformed) or certainly carried
# a wrong TCP/UDP checksum (rx<q>_csum_bad) and reached the wire, less what
# the pair lost on the way (drops, frames on a ring when its queue
# restarted); with an older module, which has no such counters, that is
# said and not checked. After the run the pair pings, no page pool is left
# with pages out and every dma-buf is back.
# DEVTCP_FRAME_FUZZ_SECONDS (default 30) is the fuzzing time of all phases
# together, DEVTCP_FRAME_FUZZ_FRAMES bounds each phase's frames,
# DEVTCP_FRAME_FUZZ_STREAM sets the size of each stream (default 10 MB), and
# DEVTCP_FRAME_FUZZ_SEED (printed; default random) replays a run: phase N's
# frames are frame_fuzz.py's with that seed and --phase N.
. "$(dirname "$0")/../lib.sh"

secs=${DEVTCP_FRAME_FUZZ_SECONDS:-30}
max_frames=${DEVTCP_FRAME_FUZZ_FRAMES:-1000000}
seed=${DEVTCP_FRAME_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
stream_bytes=${DEVTCP_FRAME_FUZZ_STREAM:-10000000}
ff=/devtcp/selftests/net/frame_fuzz.py
net=/devtcp/selftests/net
q=3
port=5001	# the devmem and zcrx streams', steered to queue $q with the fuzzer's frames
plain_port=5600

phases="1 2 3 4 5"
kernel_has io_zcrx_recv_skb || {
	phases="1 2 3 5"
	echo "phase 4 (io_uring zcrx) will not run: this kernel has no io_uring zero-copy receive (6.15 and later)"
}
nphases=$(wc -w <<< "$phases")
per=$(awk -v s="$secs" -v n="$nphases" 'BEGIN { printf "%.1f", s / n }')
echo "frame_fuzz: seed $seed (DEVTCP_FRAME_FUZZ_SEED=$seed replays it), $secs s over phases $phases ($per s each)"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
# Fragments the fuzzer sends wait for the rest of their datagram holding
# page pool buffers, 30 s (IPv4) and 60 s (IPv6) by default: 3 s here, so
# that pools replaced by queue restarts go soon after the run.
ip netns exec ns2 sysctl -qw net.ipv4.ipfrag_time=3 net.ipv6.ip6frag_time=3
mac=$(ip netns exec ns2 cat /sys/class/net/dtb/address)
ip netns exec ns1 ping -q -c 1 -W 5 10.99.0.2 > /dev/null	# ARP, for the AF_INET frames
phase "frame_fuzz start"
detached() { page_pools ns2 all | awk '{ print $4 }'; }
detached0=$(detached)
bufs0=$(dmabufs)
rxcsum=$(ip netns exec ns2 ethtool -k dtb | awk '$1 == "rx-checksumming:" { print $2 }')
echo "dtb rx-checksumming: $rxcsum"

# snapshot FILE begin|end: "name value" lines: dtb's per-queue ethtool -S
# counters summed over its queues (malformed, csum_bad, packets, ...), dta's
# TX packets and drops, the drops of dta's qdiscs (AF_INET frames pass them),
# and ns2's checksum error counters. A phase reads the sender first when it
# begins and last when it ends: a frame between the two reads then only ever
# adds to the frames counted as lost on the way.
snap_tx() {
	ip netns exec ns1 sh -c 'ethtool -S dta; tc -s qdisc show dev dta' | awk '
		match($1, /^tx[0-9]+_(packets|dropped):$/) { s["tx_" substr($1, RLENGTH - 7, 7)] += $2 }
		/^qdisc/ { child = / parent / }
		child && /\(dropped / { v = $0; sub(/.*\(dropped /, "", v); sub(/,.*/, "", v); q += v }
		END { print "tx_packets", s["tx_packets"] + 0; print "tx_dropped", s["tx_dropped"] + 0
			print "qdisc_dropped", q + 0 }'
}
snap_rx() {
	ip netns exec ns2 sh -c 'ethtool -S dtb; cat /proc/net/snmp /proc/net/snmp6' | awk '
		match($1, /^rx[0-9]+_/) { k = substr($1, RLENGTH + 1); sub(/:$/, "", k); s[k] += $2 }
		$1 == "rx_ntuple_drops:" { s["ntuple_drops"] = $2 }
		$1 == "Tcp:" || $1 == "Udp:" {
			if (!seen[$1]++) { for (i = 2; i <= NF; i++) name[$1, i] = $i; next }
			for (i = 2; i <= NF; i++) if (name[$1, i] == "InCsumErrors")
				s[substr($1, 1, 3) "InCsumErrors"] = $i
		}
		$1 == "Udp6InCsumErrors" { s[$1] = $2 }
		END { for (k in s) print k, s[k] }'
}
snapshot() {
	if [ "$2" = begin ]; then snap_tx; snap_rx; else snap_rx; snap_tx; fi > "$1"
}
# deltas BEFORE AFTER: D[name] is how much each counter grew ("-" where absent).
declare -A D
deltas() {
	local k v
	D=()
	while read -r k v; do D[$k]=$v; done < <(awk 'FNR == NR { a[$1] = $2; next }
		{ print $1, $2 - a[$1] }' "$1" "$2")
	for k in packets malformed csum_bad csum_none csum_unnecessary csum_drops alloc_fail \
		dma_faults ntuple_drops restarts TcpInCsumErrors UdpInCsumErrors Udp6InCsumErrors tx_packets \
		tx_dropped qdisc_dropped; do
		[ -n "${D[$k]:-}" ] || D[$k]=-
	done
}

# streams KIND N: validated streams of $stream_bytes, one after the other,
# into ns2 until /tmp/ff.stop exists (one at least): KIND plain (tcp_stream),
# devmem (devmem_rx bound to queue $q) or zcrx (zcrx_rx on queue $q); each
# one's result is a line of /tmp/ff_streams.N.
streams() {
	local kind=$1 n=$2 i=0 rx sport=$port pid rc
	case $kind in
	plain) rx=("$net/tcp_stream" recv); sport=$plain_port ;;
	devmem) rx=("$net/devmem_rx" -i dtb -q "$q") ;;
	zcrx) rx=("$net/zcrx_rx" -i dtb -q "$q") ;;
	esac
	while [ $i = 0 ] || [ ! -e /tmp/ff.stop ]; do
		i=$((i + 1))
		: > /tmp/ff_rx.out
		timeout $((120 * scale)) ip netns exec ns2 "${rx[@]}" -p $sport -n "$stream_bytes" \
			-s $((n * 1000 + i)) > /tmp/ff_rx.out 2>&1 &
		pid=$!
		if ! wait_listen /tmp/ff_rx.out; then
			kill $pid 2> /dev/null
			wait $pid
			echo "stream $i ($kind, port $sport): the receiver did not listen: $(tail -n 2 /tmp/ff_rx.out)" \
				>> "/tmp/ff_streams.$n"
			break
		fi
		timeout $((120 * scale)) ip netns exec ns1 "$net/tcp_stream" send -a 10.99.0.2 -p $sport \
			-n "$stream_bytes" -s $((n * 1000 + i)) > /dev/null
		wait $pid
		rc=$?
		echo "stream $i ($kind, port $sport): exit $rc: $(grep -m 1 '^received' /tmp/ff_rx.out)" \
			>> "/tmp/ff_streams.$n"
	done
}

# restarts: RX queues restarted one after the other until /tmp/ff.stop, the
# rings resized and header split switched now and then (both restart every
# queue); counts them in /tmp/ff_restarts. One shell in ns2 for the loop.
restarts() {
	# shellcheck disable=SC2016 # expanded by that shell
	ip netns exec ns2 sh -c '
		i=0 ok=0 bad=0 rings=0
		while [ ! -e /tmp/ff.stop ]; do
			i=$((i + 1))
			if echo $((i % 8)) > /sys/class/net/dtb/devtcp/restart_rx_queue; then
				ok=$((ok + 1))
			else
				bad=$((bad + 1))
			fi
			if [ $((i % 5)) = 0 ]; then
				split=on
				[ $((i % 15)) = 0 ] && split=off
				ethtool -G dtb rx $((i % 10 ? 512 : 1024)) tcp-data-split $split &&
					rings=$((rings + 1))
			fi
			sleep 0.1
		done 2> /dev/null
		echo "$ok queue restarts, $bad refused, $rings ring changes" > /tmp/ff_restarts'
}

# run_phase N TITLE STREAMS [frame_fuzz.py options]: the fuzzer for $per s
# beside streams of kind STREAMS, then the phase's checks.
summary=() ran=()
run_phase() {
	local n=$1 title=$2 kind=$3 fpid frc spid sent refused yes csum drops lost slack m c v
	local b=/tmp/ff_before.$n a=/tmp/ff_after.$n
	shift 3
	ran+=("$n")
	phase "frame_fuzz $n: $title"
	echo "== phase $n: $title (at $SECONDS s)"
	rm -f /tmp/ff.stop /tmp/ff.go
	: > "/tmp/ff_streams.$n"
	# Python starts while the phase sets up; its first frame waits for ff.go.
	PYTHONPYCACHEPREFIX=/tmp/ff_pycache ip netns exec ns1 python3 "$ff" -i dta --dst-mac "$mac" \
		-t "$per" -n "$max_frames" -s "$seed" --phase "$n" --go /tmp/ff.go "$@" \
		> "/tmp/ff_out.$n" 2>&1 &
	fpid=$!
	snapshot "$b" begin
	streams "$kind" "$n" &
	spid=$!
	touch /tmp/ff.go
	wait $fpid
	frc=$?
	touch /tmp/ff.stop
	wait $spid
	# What is still on a wire ring gets received.
	sleep 0.2
	snapshot "$a" end
	grep -v '^ff-' "/tmp/ff_out.$n"
	cat "/tmp/ff_streams.$n"
	read -r sent refused yes _ csum < <(awk '$1 == "ff-total" { print $2, $3, $4, $5, $6 }' "/tmp/ff_out.$n")
	check "phase $n: the fuzzer ran (exit $frc) and sent frames (${sent:-none})" \
		test "$frc" = 0 -a "${sent:-0}" -gt 0
	check "phase $n: every stream beside it arrived intact ($(grep -c . "/tmp/ff_streams.$n") streams)" \
		awk '{ n++ } !/: exit 0: received [0-9]+ bytes.* 0 mismatched/ { bad++ } END { exit !(n && !bad) }' \
			"/tmp/ff_streams.$n"
	kernel_quiet "devtcp-test: phase frame_fuzz $n:" "phase $n"

	# Frames the pair lost on the way: dropped by the sender's qdisc or
	# driver, by the receiver for want of a buffer or by a rule, or on a
	# wire ring when its queue restarted (sent, but neither received nor
	# dropped).
	echo "receiver's counters in phase $n (summed over dtb's queues; sender: dta):"
	deltas "$b" "$a"
	for v in packets malformed csum_bad csum_none csum_unnecessary csum_drops alloc_fail \
		dma_faults ntuple_drops restarts TcpInCsumErrors UdpInCsumErrors Udp6InCsumErrors \
		tx_packets tx_dropped qdisc_dropped; do
		printf '  %-18s %s\n' "$v" "${D[$v]}"
	done
	m=${D[malformed]} c=${D[csum_bad]}
	if [ "$m" = - ] || [ "$c" = - ]; then
		echo "phase $n: this module has no rx<q>_malformed / rx<q>_csum_bad counters: not checked"
		summary+=("$(printf '%-5s %8s %8s %10s %10s %9s %9s %7s' "$n" "$sent" "$refused" "$yes" - "$csum" - -)")
		return
	fi
	# (rx<q>_csum_drops: TCP frames checked good that the device dropped
	# when their sum came out wrong as it wrote them to provider memory.)
	drops=$(( D[alloc_fail] + D[dma_faults] + D[ntuple_drops] + ${D[csum_drops]/-/0} ))
	lost=$(( D[tx_packets] - D[packets] - m - drops ))
	[ $lost -lt 0 ] && lost=0
	slack=$(( lost + drops + D[tx_dropped] + D[qdisc_dropped] ))
	echo "phase $n: frames lost on the way: $lost; all drops and losses: $slack"
	summary+=("$(printf '%-5s %8s %8s %10s %10s %9s %9s %7s' "$n" "$sent" "$refused" "$yes" "$m" \
		"$csum" "$c" "$slack")")
	if [ $((yes - slack)) -ge 1 ]; then
		check "phase $n: rx*_malformed rose by >= the certainly malformed frames on the wire, less losses ($m >= $yes - $slack)" \
			test "$m" -ge $((yes - slack))
	else
		echo "phase $n: $yes certainly malformed frames sent, $slack lost: rx*_malformed not checked"
	fi
	if [ "$rxcsum" != on ]; then
		echo "phase $n: rx-checksumming is off: rx*_csum_bad not checked"
	elif [ $((csum - slack)) -ge 1 ]; then
		check "phase $n: rx*_csum_bad rose by >= the frames sent with a wrong checksum, less losses ($c >= $csum - $slack)" \
			test "$c" -ge $((csum - slack))
		v=$(( D[TcpInCsumErrors] + D[UdpInCsumErrors] + ${D[Udp6InCsumErrors]/-/0} ))
		check "phase $n: ... and the stack counted checksum errors (Tcp/Udp/Udp6InCsumErrors: $v)" \
			test "$v" -gt 0
	else
		echo "phase $n: $csum frames with a wrong checksum sent, $slack lost: rx*_csum_bad not checked"
	fi
}

run_phase 1 "header split off" plain

ip netns exec ns2 ethtool -G dtb tcp-data-split on || fail "cannot turn header split on"
ip -n ns1 link set dta mtu 9000
ip -n ns2 link set dtb mtu 9000
run_phase 2 "header split on, MTU 9000" plain
ip -n ns1 link set dta mtu 1500
ip -n ns2 link set dtb mtu 1500

# The fuzzer's IPv6 and UDP frames to the port go there too (devmem_steer
# steers TCP over IPv4 only), and at MTU 9000 IPv6 extension headers can run
# past the device's header buffer.
devmem_steer ns2 dtb $q $port || fail "cannot steer port $port to queue $q"
for flow in tcp6 udp4 udp6; do
	ip netns exec ns2 ethtool -N dtb flow-type $flow dst-port $port action $q > /dev/null ||
		fail "cannot steer $flow port $port to queue $q"
done
ip -n ns1 link set dta mtu 9000
ip -n ns2 link set dtb mtu 9000
run_phase 3 "devmem RX bound to queue $q, MTU 9000, the fuzzer's frames steered there" devmem \
	--ports $port
ip -n ns1 link set dta mtu 1500
ip -n ns2 link set dtb mtu 1500

if [[ " $phases " == *" 4 "* ]]; then
	run_phase 4 "io_uring zcrx on queue $q, the fuzzer's frames steered there" zcrx \
		--ports $port
fi

# Queues restart under the frames: rules and RSS back to every queue.
for r in $(ip netns exec ns2 ethtool -n dtb | sed -n 's/^Filter: //p'); do
	ip netns exec ns2 ethtool -N dtb delete "$r"
done
ip netns exec ns2 ethtool -X dtb equal 8
rm -f /tmp/ff.stop
restarts &
rpid=$!
run_phase 5 "RX queues restarting, rings and header split changing" plain
touch /tmp/ff.stop
wait $rpid
cat /tmp/ff_restarts
ip netns exec ns2 ethtool -G dtb rx 1024 tcp-data-split on 2> /dev/null

echo "== phases run: ${ran[*]}$([[ " $phases " == *" 4 "* ]] || echo " (4 skipped: no zcrx)")"
echo "frames per class, all phases (sent / refused by the socket / certainly malformed / maybe / wrong checksum):"
cat /tmp/ff_out.* | awk '$1 == "ff-class" { o[$2] = o[$2] ? o[$2] : ++n; k[o[$2]] = $2
		for (i = 3; i <= 7; i++) s[$2, i] += $i }
	END { printf "  %-14s %8s %8s %9s %7s %8s\n", "class", "sent", "refused", "malformed", "maybe", "csum_bad"
		for (j = 1; j <= n; j++) printf "  %-14s %8d %8d %9d %7d %8d\n", k[j],
			s[k[j], 3], s[k[j], 4], s[k[j], 5], s[k[j], 6], s[k[j], 7] }'
echo "per phase (malformed/csum_bad: certainly so and sent, and the receiver's counts; lost: drops and losses):"
printf '  %-5s %8s %8s %10s %10s %9s %9s %7s\n' phase frames refused malformed rx_malf csum_bad rx_csum lost
printf '  %s\n' "${summary[@]}"

kernel_quiet "devtcp-test: phase frame_fuzz start" "the whole run"
check "the pair still pings" ip netns exec ns1 ping -q -c 3 -W 5 10.99.0.2
t0=$SECONDS
for ((i = 0; i < 60; i++)); do
	[ "$(detached)" = "$detached0" ] && [ "$(dmabufs)" = "$bufs0" ] && break
	softirq_each_cpu ns2
	sleep 1
done
echo "waited $((SECONDS - t0)) s for the page pools and dma-bufs"
check "no page pool was left with pages out ($(page_pools ns2 all))" test "$(detached)" = "$detached0"
check "every dma-buf came back ($(dmabufs) of $bufs0)" test "$(dmabufs)" = "$bufs0"
teardown ns1 ns2
echo "frame_fuzz.sh: $SECONDS s"
finish
