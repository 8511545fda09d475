#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The same TCP stream over the devtcp pair, received (a) with plain recv()
# into host memory and (b) with MSG_SOCK_DEVMEM into a bound 64 MiB udmabuf,
# in the same boot, with the same NIC set-up (header split on, the flow
# steered to queue 3; only the binding differs). The receivers run without
# validation (-V, --no-validate): checking bytes costs CPU and is not what is
# measured here; the devmem receiver still checks every frag's bounds and
# token accounting. Prints the median of each figure and the ratio
# devmem/plain, and writes /devtcp-out/devmem_vs_recv.csv when that folder
# exists. A benchmark, not a test: exits 0 whenever every transfer completed.
#
#   DEVTCP_BENCH_DEVMEM_BYTES  bytes of a stream (default 256 MiB)
#   DEVTCP_BENCH_REPEATS       runs per receiver, median reported (3)
#
# Figures (of the receiving process, from its getrusage() and own counts):
#   MB/s          10^6 bytes over the time from the sender's start to the
#                 receiver's end
#   CPU ms/MiB    user + system CPU time of the receiving process over the
#                 receive, per MiB; softirq work the kernel happens to run in
#                 its context counts, the rest of the RX path does not
#   copied/byte   bytes the kernel copied into the process's buffers per byte
#                 delivered: all for plain, only linear (non-dma-buf) bytes
#                 for devmem
#   recv/MiB, dontneed/MiB, syscalls/MiB   recv()/recvmsg() calls, and
#                 SO_DEVMEM_DONTNEED setsockopt() calls, per MiB
. "$(dirname "$0")/../lib.sh"
set -u

bytes=${DEVTCP_BENCH_DEVMEM_BYTES:-$((256 << 20))}
repeats=${DEVTCP_BENCH_REPEATS:-3}
q=3
csv=/devtcp-out/devmem_vs_recv.csv
modes=(plain devmem)

for p in selftests/net/tcp_stream selftests/net/devmem_rx; do
	[ -x $p ] || fail "$p is not built; run 'make' first"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; ip netns del ns1 2>/dev/null; ip netns del ns2 2>/dev/null' EXIT

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the devtcp pair"
devmem_steer ns2 dtb $q $(seq 7000 $((7000 + 2 * repeats - 1))) ||
	fail "cannot steer the benchmark's ports to queue $q"

# transfer MODE PORT: one stream; prints "MB/s utime stime recv_calls
# dontneed_calls copied" from the receiver's stats line.
transfer() {
	local mode=$1 port=$2 rx t0 t1 rc=0
	if [ "$mode" = plain ]; then
		ip netns exec ns2 selftests/net/tcp_stream recv -p "$port" -n "$bytes" -V \
			> "$tmp/rx" 2>&1 &
	else
		ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p "$port" -n "$bytes" \
			--no-validate > "$tmp/rx" 2>&1 &
	fi
	rx=$!
	# Start the clock once the receiver listens (and, for devmem, is bound).
	until grep -q listening "$tmp/rx"; do
		kill -0 $rx 2>/dev/null || break
		sleep 0.02
	done
	t0=$EPOCHREALTIME
	ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p "$port" -n "$bytes" \
		> "$tmp/tx" 2>&1 &
	wait $rx || rc=1
	t1=$EPOCHREALTIME
	wait $! || rc=1
	if [ $rc != 0 ]; then
		echo "$mode: the transfer failed:" >&2
		cat "$tmp/rx" "$tmp/tx" >&2
		return 1
	fi
	awk -v t0="$t0" -v t1="$t1" '$1 == "stats" {
		printf "%.1f %s %s %s %s %s\n", $3 / (t1 - t0) / 1e6, $7, $9, $11, $13, $15
	}' "$tmp/rx"
}

median() { tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

mib=$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')
echo "== $(uname -r), $(nproc) CPUs; $repeats run(s) each of a $bytes-byte stream," \
	"not validated; devmem: 64 MiB udmabuf on queue $q"
declare -A runs
port=7000
# Alternate the receivers so that drift in the VM's speed hits both alike.
for ((r = 1; r <= repeats; r++)); do
	for mode in "${modes[@]}"; do
		read -r mbps ut st rcalls dcalls copied < <(transfer $mode $port) ||
			fail "$mode, run $r"
		[ -n "${mbps:-}" ] || fail "$mode, run $r: no stats line"
		port=$((port + 1))
		cpu=$(awk -v u="$ut" -v s="$st" -v m="$mib" 'BEGIN { printf "%.3f", (u + s) * 1000 / m }')
		vals=("$mbps" "$cpu"
		      "$(awk -v c="$copied" -v b="$bytes" 'BEGIN { printf "%.4f", c / b }')"
		      "$(awk -v n="$rcalls" -v m="$mib" 'BEGIN { printf "%.2f", n / m }')"
		      "$(awk -v n="$dcalls" -v m="$mib" 'BEGIN { printf "%.2f", n / m }')"
		      "$(awk -v n="$((rcalls + dcalls))" -v m="$mib" 'BEGIN { printf "%.2f", n / m }')")
		for i in "${!vals[@]}"; do
			runs[$mode/$i]="${runs[$mode/$i]:-}${runs[$mode/$i]:+ }${vals[i]}"
		done
		printf 'run %d/%d: %-7s %8.1f MB/s, CPU %6.3f s (user %s, sys %s), %s recv + %s dontneed calls, %s bytes copied\n' \
			$r "$repeats" $mode "$mbps" "$(awk -v u="$ut" -v s="$st" 'BEGIN { print u + s }')" \
			"$ut" "$st" "$rcalls" "$dcalls" "$copied"
	done
done

names=("MB/s" "CPU ms/MiB" "copied/byte" "recv/MiB" "dontneed/MiB" "syscalls/MiB")
[ -d /devtcp-out ] && echo "figure,plain,devmem,devmem_over_plain,plain_runs,devmem_runs" > $csv
echo
printf '%-14s %12s %12s %14s\n' "median of $repeats" plain devmem devmem/plain
for i in "${!names[@]}"; do
	p=$(median <<< "${runs[plain/$i]}")
	d=$(median <<< "${runs[devmem/$i]}")
	ratio=$(awk -v d="$d" -v p="$p" 'BEGIN { if (p > 0) printf "%.2f", d / p; else print "-" }')
	printf '%-14s %12s %12s %14s\n' "${names[i]}" "$p" "$d" "$ratio"
	[ -d /devtcp-out ] && echo "${names[i]},$p,$d,$ratio,${runs[plain/$i]// /;},${runs[devmem/$i]// /;}" >> $csv
done
exit 0
