#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The fault lines are bounded. With a 10 s delay (the most devtcp-fault
# takes) on dta, a UDP flood from ns1 waits in dta's lines as clones: the
# sockets' skbs are freed at once (as on a real wire, the delay does not hold
# the sender's buffer), so neither their send buffers nor their memory
# cgroup bound what waits. The lines take at most 16 MiB of skb truesize per
# device and drop what comes beyond, counted in fault_overlimit (and as
# dta's tx_dropped); before, every datagram sent in the 10 s waited, limited
# only by the TX rings. The flood: 16 sockets in two processes, 8972-byte
# datagrams at MTU 9000 (UDP GSO), for 8 s, all of it still in the lines
# when it ends; dta's TX rings at 4096 frames, so that the rings are not
# what bounds the lines. Checked: fault_overlimit rises, and MemAvailable
# drops by less than 48 MiB meanwhile: 7 to 16 MiB with the bound, while the
# unbounded lines took about what was sent (95 MiB down for 85 MiB sent on a
# host busy with other VMs, 263 MiB for 249 MiB on a quieter one). Then,
# faults off, the lines drain within 12 s, ping and a stream pass, and no
# page pool is left with pages out.
. "$(dirname "$0")/../lib.sh"

FAULT=/devtcp/userspace/tools/devtcp-fault
secs=8
bound_kb=$((48 * 1024))
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ip -n ns1 link set dta mtu 9000
ip -n ns2 link set dtb mtu 9000
ip netns exec ns1 ethtool -G dta tx 4096 || fail "cannot set dta's TX rings to 4096"
# The delay would hold ARP and its answer too: neighbours are static.
ip -n ns1 neigh replace 10.99.0.2 lladdr "$(ip netns exec ns2 cat /sys/class/net/dtb/address)" \
	dev dta nud permanent
ip -n ns2 neigh replace 10.99.0.1 lladdr "$(ip netns exec ns1 cat /sys/class/net/dta/address)" \
	dev dtb nud permanent
fstat() { ethtool_stat ns1 dta "fault_$1"; }
# link_stat NS DEV NAME: a counter of /sys/class/net/DEV/statistics
link_stat() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
memavail() { awk '$1 == "MemAvailable:" { print $2 }' /proc/meminfo; }
slab() { awk '$1 == "Slab:" { print $2 }' /proc/meminfo; }
# kB in the skbuff slab caches (skbuff_head_cache, skbuff_fclone_cache, ...)
skbuff_kb() {
	awk '$1 ~ /^skbuff_/ { kb += $3 * $4 / 1024 } END { printf "%d", kb }' /proc/slabinfo
}
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools0=$(page_pools ns2 "$ifindex")

# flooder GOFILE FIRST_PORT: 8 UDP sockets sending to ports FIRST_PORT.. of
# ns2 for $secs seconds once GOFILE exists, 62804 bytes a call cut by UDP
# GSO into 7 datagrams of 8972 bytes (one 9000-byte frame each: a seventh of
# the system calls, which are what limits a flood from python under TCG);
# prints "sent N" (datagrams).
flooder() {
	ip netns exec ns1 python3 - "$secs" "$@" <<'PY'
import os, select, socket, sys, time
SOL_UDP, UDP_SEGMENT, SEG, NSEG = 17, 103, 8972, 7
secs, go, first = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
socks = []
for _ in range(8):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setblocking(False)
    s.setsockopt(SOL_UDP, UDP_SEGMENT, SEG)
    socks.append(s)
data = b"x" * (SEG * NSEG)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
sent = 0
end = time.monotonic() + secs
while time.monotonic() < end:
    n = 0
    for i, s in enumerate(socks):
        try:
            s.sendto(data, ("10.99.0.2", first + i))
            n += 1
        except OSError:
            pass
    sent += n * NSEG
    if not n:
        select.select([], socks, [], 0.05)
print(f"sent {sent}", flush=True)
PY
}

check "a 10 s delay on dta is accepted" ip netns exec ns1 $FAULT set dta delay 10000000
o0=$(fstat overlimit)
d0=$(link_stat ns1 dta tx_dropped)
tx0=$(link_stat ns1 dta tx_packets)
rx0=$(( $(link_stat ns2 dtb rx_packets) + $(link_stat ns2 dtb rx_dropped) ))
rm -f /tmp/flood.go /tmp/flood.done
flooders=()
for p in 6000 6100; do
	: > /tmp/flood.$p
	flooder /tmp/flood.go $p > /tmp/flood.$p 2>&1 &
	flooders+=($!)
done
for p in 6000 6100; do
	for ((i = 0; i < 100 * scale; i++)); do grep -q ready /tmp/flood.$p && break; sleep 0.1; done
done
sleep 1
mem0=$(memavail) slab0=$(slab) skb0=$(skbuff_kb)
# The lowest MemAvailable while the flood runs, sampled every 0.2 s.
(
	min=$mem0
	while [ ! -e /tmp/flood.done ]; do
		m=$(memavail)
		[ "$m" -lt "$min" ] && min=$m
		sleep 0.2
	done
	echo "$min"
) > /tmp/flood.min &
sampler=$!
touch /tmp/flood.go
t0=$(date +%s%N)
wait "${flooders[@]}"
mem1=$(memavail) slab1=$(slab) skb1=$(skbuff_kb)
touch /tmp/flood.done
wait $sampler
min=$(cat /tmp/flood.min)
over=$(( $(fstat overlimit) - o0 ))
sent=$(cat /tmp/flood.6000 /tmp/flood.6100 | awk '$1 == "sent" { s += $2 } END { print s + 0 }')
rise=$((mem0 - min))
echo "flood: $sent datagrams of 8972 bytes in ${secs} s ($((sent * 8972 / 1048576)) MiB)," \
	"fault_overlimit +$over"
echo "memory: MemAvailable $mem0 kB before, lowest $min kB: down $((rise / 1024)) MiB" \
	"(bound: $((bound_kb / 1024)) MiB); at the end, Slab +$(( (slab1 - slab0) / 1024 )) MiB," \
	"skbuff caches +$(( (skb1 - skb0) / 1024 )) MiB, MemAvailable down $(( (mem0 - mem1) / 1024 )) MiB"
check "the flood sent more than the lines may hold (> 32 MiB)" \
	test $((sent * 8972)) -gt $((32 << 20))
check "fault_overlimit rose (the lines were full)" test "${over:-0}" -gt 0
dropped=$(( $(link_stat ns1 dta tx_dropped) - d0 ))
echo "dta tx_dropped +$dropped"
check "... and those frames count as dropped by dta (tx_dropped), not sent" \
	test "$dropped" -ge "${over:-0}"
check "kernel memory stays bounded: MemAvailable fell by less than $((bound_kb / 1024)) MiB" \
	test "$rise" -lt "$bound_kb"

# Faults off: frames already waiting go out at their time, none is kept.
# Drained: dtb got every frame that went into the lines (dta's tx_packets;
# those over the limit count as dropped).
ip netns exec ns1 $FAULT off dta
t1=$(date +%s%N)
deadline=$(( $(date +%s) + 15 * scale ))
while :; do
	tx=$(( $(link_stat ns1 dta tx_packets) - tx0 ))
	rx=$(( $(link_stat ns2 dtb rx_packets) + $(link_stat ns2 dtb rx_dropped) - rx0 ))
	[ "$rx" -ge "$tx" ] && break
	[ "$(date +%s)" -ge $deadline ] && break
	sleep 0.2
done
drained_ms=$(( ($(date +%s%N) - t1) / 1000000 ))
echo "dta sent $tx frames, dtb got $rx: drained ${drained_ms} ms after faults off," \
	"$(( ($(date +%s%N) - t0) / 1000000 )) ms after the flood began;" \
	"MemAvailable now $(( ($(memavail) - mem0) / 1024 )) MiB from before"
check "the lines drain within 12 s after faults off" \
	test "$rx" -ge "$tx" -a "$drained_ms" -le $((12000 * scale))
check "ping from ns1" ip netns exec ns1 ping -q -c 3 -i 0.2 -W 2 10.99.0.2
check "a plain stream arrives intact" plain_stream 5400 20000000 101
wait_buffers_back ns2 "$ifindex" "$pools0" -
echo "page pools of dtb before: $pools0, now: $(page_pools ns2 "$ifindex")"
check "no page pool left with pages out" test "$(page_pools ns2 "$ifindex")" = "$pools0"
teardown ns1 ns2
finish
