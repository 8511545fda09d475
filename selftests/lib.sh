# SPDX-License-Identifier: GPL-2.0
# Helpers for the VM tests (sourced). Tests run as root inside the VM with
# devtcp.ko loaded and the tree at /devtcp (read-only).
# Exit codes follow kselftest: 0 pass, 1 fail, 4 skip.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4
# vm/run says which build of the module this kernel loads.
DEVTCP_KO=${DEVTCP_KO:-/devtcp/kernel/devtcp.ko}
# Tests multiply their waits and time bounds by this: make check-debug sets
# it to 4, its kernel (KASAN, lockdep, kmemleak under TCG) being that much
# slower beside the other VM; 1 in make check.
scale=${DEVTCP_TIME_SCALE:-1}

fails=0
failed=()

# check DESCRIPTION CMD...: runs CMD, records a failure if it fails.
check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what"
		fails=$((fails + 1))
		failed+=("$what")
	fi
}

skip() {
	echo "SKIP: $*"
	exit $KSFT_SKIP
}

fail() {
	echo "FAIL: $*"
	exit $KSFT_FAIL
}

# phase WHAT: marks the kernel log, so that a report that comes later (a
# page pool stalled for a minute) names the part of the test it began in.
phase() { echo "devtcp-test: phase $*" > /dev/kmsg 2> /dev/null || true; }

# kernel_quiet MARK WHAT: the kernel reported nothing since MARK (a line in
# its log, such as a phase's), as selftests/vm/kcheck judges it after every
# test: the same reports, and the upstream ones it knows let pass.
kernel_quiet() {
	local out rc
	out=$(dmesg | /devtcp/selftests/vm/kcheck --since "$1")
	rc=$?
	[ -n "$out" ] && echo "$out"
	check "$2: the kernel reported nothing (kcheck: exit $rc)" test $rc = 0
}

# Ends the test: pass if no check failed.
finish() {
	[ "$fails" = 0 ] && exit $KSFT_PASS
	echo "$fails check(s) failed:"
	printf '  FAIL: %s\n' "${failed[@]}"	# again at the end, where logs get cut
	exit $KSFT_FAIL
}

DEVTCP_PAIR=/devtcp/userspace/tools/devtcp-pair

# kernel_has SYMBOL: the running kernel has SYMBOL, the function that a
# feature's tests need (how tests tell 6.12 LTS from newer kernels).
kernel_has() { grep -qw "$1" /proc/kallsyms; }

# devtcp_pair NAME_A NS_A NAME_B NS_B [devtcp-pair options...]
# Creates network namespaces NS_A and NS_B and a devtcp pair between them
# (NAME_A in NS_A, NAME_B in NS_B), brings both ends and the loopbacks up and
# gives them 10.99.0.1/24, 10.99.0.2/24 and fd99::1/64, fd99::2/64.
devtcp_pair() {
	local a=$1 nsa=$2 b=$3 nsb=$4
	shift 4
	ip netns add "$nsa" || return 1
	ip netns add "$nsb" || return 1
	$DEVTCP_PAIR add "$a" "$b" -n "$nsa" -N "$nsb" "$@" || return 1
	ip -n "$nsa" addr add 10.99.0.1/24 dev "$a"
	ip -n "$nsb" addr add 10.99.0.2/24 dev "$b"
	ip -n "$nsa" addr add fd99::1/64 dev "$a" nodad
	ip -n "$nsb" addr add fd99::2/64 dev "$b" nodad
	ip -n "$nsa" link set lo up
	ip -n "$nsb" link set lo up
	ip -n "$nsa" link set "$a" up
	ip -n "$nsb" link set "$b" up
}

# teardown NS...: deletes the namespaces a test made, checking that their
# devtcp queues got every page back. The pairs go first, while the
# namespaces live: their destroyed page pools then stay listed under lo
# until their last page returns (once a namespace is gone they are hidden,
# and only the kernel's "stalled pool shutdown" 60 s later, during some
# other test, would tell). Connections get 5 s to close before, so that no
# orphan socket is left resending its FIN to a deleted device; pages on
# defer lists come back with softirq_each_cpu. A page still out 10 s after
# its device went is a leak: a failed check, with the sockets left.
teardown() {
	local ns dev i
	phase "teardown of $*"
	for ns; do
		for ((i = 0; i < 50; i++)); do
			[ -z "$(ip netns exec "$ns" ss -Htan | awk '$1 != "LISTEN" && $1 != "TIME-WAIT"')" ] &&
				break
			sleep 0.1
		done
		for dev in $(ip -n "$ns" -o link show type devtcp | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }'); do
			ip -n "$ns" link del "$dev" 2> /dev/null
		done
	done
	pages_back "$@"
}

# pages_back NS...: once a namespace's devtcp devices are gone, every page
# of their pools comes back (checked); then the namespace goes.
pages_back() {
	local ns held held0 i
	for ns; do
		for ((i = 0; i < 10; i++)); do
			held=$(ip netns exec "$ns" python3 /devtcp/selftests/net/genl.py page-pools all |
				awk '{ print $8 }')
			[ $i = 0 ] && held0=$held
			[ "$held" = 0 ] && break
			softirq_each_cpu "$ns"
			sleep 1
		done
		[ "$held0" != 0 ] && echo "$ns: $held0 page(s) were still out when the devices went"
		check "$ns: every page back in its pool 10 s after the pair went (held: $held)" \
			test "$held" = 0
		[ "$held" = 0 ] || ip netns exec "$ns" ss -tanemi
		ip netns del "$ns"
	done
}

# within_1s CMD...: CMD succeeds within one second (polled). CMD is run
# anew each time: pass a command or function, not an expanded $(...) value.
within_1s() {
	local t0
	t0=$(date +%s%N)
	while :; do
		"$@" && return 0
		[ $(( ($(date +%s%N) - t0) / 1000000 )) -ge 1000 ] && { "$@"; return; }
		sleep 0.05
	done
}

# ethtool_stat NS DEV NAME: one counter of ethtool -S.
ethtool_stat() {
	ip netns exec "$1" ethtool -S "$2" | awk -v n="$3:" '$1 == n { print $2 }'
}

# devmem_steer NS DEV QUEUE PORT...: prepares DEV's queue QUEUE for a devmem
# binding: header split on, RSS kept off the queue, and ntuple rules steering
# TCP/IPv4 to each PORT there.
devmem_steer() {
	local ns=$1 dev=$2 q=$3 n weights= i port
	shift 3
	n=$(ip netns exec "$ns" ethtool -l "$dev" | awk '/^Combined:/ { v = $2 } END { print v }')
	for ((i = 0; i < n; i++)); do weights+=" $((i != q))"; done
	ip netns exec "$ns" ethtool -G "$dev" tcp-data-split on || return 1
	# shellcheck disable=SC2086
	ip netns exec "$ns" ethtool -X "$dev" weight $weights || return 1
	ip netns exec "$ns" ethtool -K "$dev" ntuple on || return 1
	for port in "$@"; do
		ip netns exec "$ns" ethtool -N "$dev" flow-type tcp4 dst-port "$port" \
			action "$q" > /dev/null || return 1
	done
}

# plain_stream PORT BYTES SEED: a validated plain TCP stream from ns1
# (10.99.0.1) to ns2 (10.99.0.2); its status is the receiver's.
plain_stream() {
	local pid
	ip netns exec ns2 /devtcp/selftests/net/tcp_stream recv -p "$1" -n "$2" -s "$3" > /tmp/plain.out &
	pid=$!
	ip netns exec ns1 /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p "$1" -n "$2" \
		-s "$3" > /dev/null
	wait $pid
}

# softirq_each_cpu NS: a NET_RX softirq on every CPU (a ping over NS's
# loopback from each). Skbs that recvmsg() freed on another CPU than the one
# that received them wait on that CPU's defer list (skb_attempt_defer_free())
# for its next NET_RX softirq, holding their page pool buffers meanwhile; on
# an idle CPU that may take long. Tests waiting for buffers to return run it.
softirq_each_cpu() {
	local cpu
	for ((cpu = 0; cpu < $(nproc); cpu++)); do
		taskset -c $cpu ip netns exec "$1" ping -q -c 1 -W 1 127.0.0.1 > /dev/null
	done
}

# wait_listen FILE: until the receiver writing FILE says it listens (10 s at
# most, times scale), so that its sender does not connect too early. Empty
# FILE before starting the receiver (: > FILE): its own "> FILE" runs in the
# background, and until it does, a listening line of an earlier receiver in
# FILE passes at once.
wait_listen() {
	for _ in $(seq $((100 * scale))); do grep -q listening "$1" && return 0; sleep 0.1; done
	return 1
}

# page_pools NS IFINDEX: "pools N detached N" of a device (netdev netlink;
# IFINDEX "all" for the namespace). A pool destroyed with pages out stays
# listed as detached, so a leaked page shows; in-flight pages vary with
# traffic and are left out.
page_pools() {
	ip netns exec "$1" python3 /devtcp/selftests/net/genl.py page-pools "$2" |
		awk '{ print $1, $2, $5, $6 }'
}

# dmabufs: the number of dma-bufs in the system (debugfs), for leak checks.
dmabufs() { awk '/^Total/ { print $2; exit }' /sys/kernel/debug/dma_buf/bufinfo; }

# wait_buffers_back NS IFINDEX POOLS BUFS [SECONDS]: waits, 30 s unless
# SECONDS, until the device's page_pools read POOLS and dmabufs BUFS again
# ("-" for either: not waited for), with softirq_each_cpu NS every second:
# buffers of closed sockets come back late, not never. Sets waited to the
# seconds it took.
wait_buffers_back() {
	local ns=$1 dev=$2 pools=$3 bufs=$4 secs=${5:-30}
	for ((waited = 0; waited < secs; waited++)); do
		softirq_each_cpu "$ns"
		{ [ "$pools" = - ] || [ "$(page_pools "$ns" "$dev")" = "$pools" ]; } &&
			{ [ "$bufs" = - ] || [ "$(dmabufs)" = "$bufs" ]; } && return 0
		sleep 1
	done
	return 1
}

# devmem_rebind_cycle Q PORT: one bind and unbind under traffic, on the pair
# devtcp_pair made (dta in ns1, dtb in ns2): a devmem receiver bound to dtb's
# queue Q, a stream from ns1 to its PORT, and the receiver killed 0.3 s in,
# so its binding goes while frames still arrive. Fails if it never listened.
devmem_rebind_cycle() {
	local rx tx rc=0
	: > /tmp/rx.out
	ip netns exec ns2 /devtcp/selftests/net/devmem_rx -i dtb -q "$1" -p "$2" -n 4000000000 \
		> /tmp/rx.out 2>&1 &
	rx=$!
	wait_listen /tmp/rx.out || rc=1
	ip netns exec ns1 /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p "$2" \
		-n 4000000000 > /dev/null 2>&1 &
	tx=$!
	sleep 0.3
	kill -9 $rx
	wait $rx 2>/dev/null
	kill -9 $tx 2>/dev/null
	wait $tx 2>/dev/null
	return $rc
}

# stream_to OUT PORT BYTES SEED RECEIVER...: RECEIVER (a command in ns2 that
# takes -p PORT -n BYTES -s SEED, its output in OUT) gets a stream from a
# plain sender in ns1; the status and the output printed are the receiver's.
stream_to() {
	local out=$1 port=$2 n=$3 seed=$4 pid rc
	shift 4
	: > "$out"
	timeout 600 ip netns exec ns2 "$@" -p "$port" -n "$n" -s "$seed" > "$out" 2>&1 &
	pid=$!
	wait_listen "$out"
	timeout 600 ip netns exec ns1 /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 \
		-p "$port" -n "$n" -s "$seed" > /dev/null
	wait $pid
	rc=$?
	cat "$out"
	return $rc
}

# rss_queues NS DEV [ethtool -x options]: the distinct queues of DEV's RSS
# indirection table ("context N" for another than the main one), on a line.
# Table rows only: "N: q q ..."; the hash key's "30:16:b2:..." has no space.
rss_queues() {
	local ns=$1 dev=$2
	shift 2
	ip netns exec "$ns" ethtool -x "$dev" "$@" |
		awk '/^ *[0-9]+: / { for (i = 2; i <= NF; i++) print $i }' | sort -un | xargs
}

# Header split on the pair devtcp_pair made (dtb in ns2): frame and split
# counters summed over its queues, UDP datagrams from ns1, and genl.py.
hds_nl() { ip netns exec ns2 python3 selftests/net/genl.py "$@"; }
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

# udp_split SIZE: sends 200 datagrams of SIZE bytes, sets $frames and $split
# to how many frames the receiver got and how many of them it split.
udp_split() {
	local s0 p0
	s0=$(split_total); p0=$(rx_total)
	send_udp "$1" 200
	sleep 1
	split=$(($(split_total) - s0)); frames=$(($(rx_total) - p0))
	echo "threshold ${hds_thresh:-0}, $1 bytes: $frames frames, $split split"
}

# ns_rdpmd_start NS DEV SOCKET USERS: an rdpmd in network namespace NS
# managing DEV (2 queues reserved) for USERS, listening on SOCKET, with its
# configuration, state and log (/tmp/rdpm/NS.log) of its own; waits until
# it serves. ns_rdpmd_stop NS: SIGTERM, and its exit status.
declare -A NS_RDPMD_PID
ns_rdpmd_start() {
	local ns=$1 dev=$2 sock=$3 users=$4
	mkdir -p /tmp/rdpm
	cat > /tmp/rdpm/$ns.conf <<CONF
[global]
socket = $sock
state_dir = /tmp/rdpm/state.$ns

[nic $dev]
reserve = 2
users = $users
max_rules = 16
max_bytes = 256M
shared_bytes = 128M
CONF
	: > /tmp/rdpm/$ns.log
	ip netns exec "$ns" /devtcp/rdpm/rdpmd -c /tmp/rdpm/$ns.conf 2>> /tmp/rdpm/$ns.log &
	NS_RDPMD_PID[$ns]=$!
	for _ in $(seq 100); do
		[ -S "$sock" ] && grep -q "<6>ready" /tmp/rdpm/$ns.log && return 0
		kill -0 "${NS_RDPMD_PID[$ns]}" 2> /dev/null || break
		sleep 0.1
	done
	cat /tmp/rdpm/$ns.log
	return 1
}
ns_rdpmd_stop() {
	kill -TERM "${NS_RDPMD_PID[$1]}" && wait "${NS_RDPMD_PID[$1]}"
}

# nothing_left NS DEV: no flow rule on DEV, no dma-buf bound to its queues.
nothing_left() {
	local ifindex
	ifindex=$(ip netns exec "$1" cat /sys/class/net/"$2"/ifindex)
	ip netns exec "$1" ethtool -n "$2" | grep -qi 'Filter:' && return 1
	[ "$(ip netns exec "$1" python3 /devtcp/selftests/net/genl.py dmabufs "$ifindex" |
		awk '$4 != 0' | wc -l)" = 0 ]
}

# queue_dmabuf NS IFINDEX Q: the id of the dma-buf bound to RX queue Q of
# the device (0: none).
queue_dmabuf() {
	ip netns exec "$1" python3 /devtcp/selftests/net/genl.py dmabufs "$2" |
		awk -v q="$3" '$2 == q { print $4 }'
}

# check_buffers_back NS IFINDEX POOLS BUFS: once they have had the time to
# come back (wait_buffers_back), the device's page pools read POOLS and the
# system's dma-bufs BUFS again (checked).
check_buffers_back() {
	wait_buffers_back "$1" "$2" "$3" "$4"
	echo "page pools before: $3, now: $(page_pools "$1" "$2"); dma-bufs before: $4, now: $(dmabufs)"
	check "no page pool left behind" test "$(page_pools "$1" "$2")" = "$3"
	check "no dma-buf left behind" test "$(dmabufs)" = "$4"
}
