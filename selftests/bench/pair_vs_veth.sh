#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# TCP throughput over a devtcp pair (header split off and on) against veth,
# measured in the same boot, with one and with several parallel streams.
# Every transfer is validated byte for byte by tcp_stream. Prints a table of
# medians with the ratio to veth and writes /devtcp-out/pair_vs_veth.csv when
# that folder exists. A benchmark, not a test: exits 0 whenever every transfer
# arrived intact, whatever the numbers.
#
#   DEVTCP_BENCH_BYTES         bytes of a single-stream run (default 256 MiB)
#   DEVTCP_BENCH_STREAM_BYTES  bytes per stream of a multi-stream run (64 MiB)
#   DEVTCP_BENCH_STREAMS       stream counts to measure (default "1 8")
#   DEVTCP_BENCH_REPEATS       runs per configuration, median reported (3)
. "$(dirname "$0")/../lib.sh"
set -u

single_bytes=${DEVTCP_BENCH_BYTES:-$((256 << 20))}
multi_bytes=${DEVTCP_BENCH_STREAM_BYTES:-$((64 << 20))}
stream_counts=${DEVTCP_BENCH_STREAMS:-"1 8"}
repeats=${DEVTCP_BENCH_REPEATS:-3}
configs=("veth" "devtcp split off" "devtcp split on")
csv=/devtcp-out/pair_vs_veth.csv
tcp_stream=selftests/net/tcp_stream

[ -x $tcp_stream ] || fail "$tcp_stream is not built; run 'make' first"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; for ns in ns1 ns2 ns3 ns4; do ip netns del $ns 2>/dev/null; done' EXIT

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the devtcp pair"
ip netns add ns3 && ip netns add ns4 &&
	ip link add vea netns ns3 type veth peer name veb netns ns4 ||
	fail "cannot create the veth pair"
ip -n ns3 addr add 10.98.0.1/24 dev vea
ip -n ns4 addr add 10.98.0.2/24 dev veb
for ns in ns3 ns4; do ip -n $ns link set lo up; done
ip -n ns3 link set vea up && ip -n ns4 link set veb up || fail "cannot bring veth up"

# transfer CONFIG STREAMS BYTES PORT: runs STREAMS validated streams of BYTES
# each from the first namespace of CONFIG to the second and prints the
# aggregate MB/s: all bytes over the time from the start of the first sender
# to the end of the last receiver.
transfer() {
	local cfg=$1 n=$2 bytes=$3 port=$4 tx_ns rx_ns addr i t0 t1 rc=0
	local -a rx=() tx=()
	case $cfg in
	veth) tx_ns=ns3 rx_ns=ns4 addr=10.98.0.2 ;;
	"devtcp split "*)
		tx_ns=ns1 rx_ns=ns2 addr=10.99.0.2
		ip netns exec ns2 ethtool -G dtb tcp-data-split "${cfg##* }" ||
			{ echo "cannot set tcp-data-split ${cfg##* }" >&2; return 1; } ;;
	esac
	for ((i = 0; i < n; i++)); do
		ip netns exec $rx_ns $tcp_stream recv -p $((port + i)) -n "$bytes" -s $((port + i)) \
			> "$tmp/rx$i" 2>&1 &
		rx+=($!)
	done
	# Start the clock once every receiver listens: time transfers, not start-up.
	for ((i = 0; i < n; i++)); do
		until grep -q listening "$tmp/rx$i"; do
			kill -0 "${rx[i]}" 2>/dev/null || break
			sleep 0.02
		done
	done
	t0=$EPOCHREALTIME
	for ((i = 0; i < n; i++)); do
		ip netns exec $tx_ns $tcp_stream send -a $addr -p $((port + i)) -n "$bytes" \
			-s $((port + i)) > "$tmp/tx$i" 2>&1 &
		tx+=($!)
	done
	for i in "${rx[@]}"; do wait "$i" || rc=1; done
	t1=$EPOCHREALTIME
	for i in "${tx[@]}"; do wait "$i" || rc=1; done
	if [ $rc != 0 ]; then
		echo "$cfg, $n stream(s): a transfer failed:" >&2
		cat "$tmp"/rx* "$tmp"/tx* >&2
		return 1
	fi
	awk -v b=$((n * bytes)) -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.1f", b / (t1 - t0) / 1e6 }'
}

median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "== $(uname -r), $(nproc) CPUs; $repeats run(s) each," \
	"1 stream: $single_bytes bytes, N streams: $multi_bytes bytes each;" \
	"every byte validated"
declare -A runs
port=6000
# Repeats go round all configurations so that drift in the VM's speed spreads
# over every configuration instead of biasing one.
for ((r = 1; r <= repeats; r++)); do
	for n in $stream_counts; do
		bytes=$multi_bytes
		[ "$n" = 1 ] && bytes=$single_bytes
		for cfg in "${configs[@]}"; do
			mbps=$(transfer "$cfg" "$n" "$bytes" $port) || fail "$cfg, $n stream(s)"
			port=$((port + n))
			runs[$cfg/$n]="${runs[$cfg/$n]:-}${runs[$cfg/$n]:+ }$mbps"
			printf 'run %d/%d: %-18s %2d stream(s) %8.1f MB/s\n' $r "$repeats" "$cfg" "$n" "$mbps"
		done
	done
done

[ -d /devtcp-out ] && echo "config,streams,bytes_per_stream,median_mbps,vs_veth,runs_mbps" > $csv
echo
printf '%-22s %-8s %-20s %s\n' config streams "MB/s (median of $repeats)" "vs veth"
target=
for n in $stream_counts; do
	bytes=$multi_bytes
	[ "$n" = 1 ] && bytes=$single_bytes
	base=$(median <<< "${runs[veth/$n]}")
	worst=
	for cfg in "${configs[@]}"; do
		med=$(median <<< "${runs[$cfg/$n]}")
		ratio=$(awk -v m="$med" -v b="$base" 'BEGIN { printf "%.2f", m / b }')
		printf '%-22s %-8s %-20s %s\n' "$cfg" "$n" "$med" "$ratio"
		[ -d /devtcp-out ] && echo "$cfg,$n,$bytes,$med,$ratio,${runs[$cfg/$n]// /;}" >> $csv
		[ "$cfg" = veth ] && continue
		worst=$(awk -v r="$ratio" -v w="${worst:-$ratio}" 'BEGIN { print (r < w ? r : w) }')
	done
	met="NOT met"
	awk -v w="$worst" 'BEGIN { exit !(w >= 0.80) }' && met=met
	target="$target${target:+, }$n stream(s): $met (lowest $worst)"
done
echo "target: devtcp >= 0.80 x veth: $target"
