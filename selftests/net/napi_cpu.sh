#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Each channel's NAPI runs on one CPU, queue i on the i-th online CPU (modulo
# their number), as a NIC's interrupt bound by IRQ affinity would, whatever
# CPU sends: with sender and receiver both on CPU 0, every receive poll of a
# flow steered to queue 1 runs on CPU 1 and of one steered to queue 0 on
# CPU 0 (the napi_poll tracepoint says where). Received on the sender's CPU
# instead, freed skbs could wait on an idle CPU's defer list with their
# buffers while the queue dropped the resends that would free them.
. "$(dirname "$0")/../lib.sh"

[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs, the VM has $(nproc)"
tr=/sys/kernel/tracing
[ -d $tr/events ] || mount -t tracefs nodev $tr 2>/dev/null
[ -d $tr/events/napi/napi_poll ] || skip "no napi_poll tracepoint (tracefs: $tr)"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
# nothing but the streams reaches dtb: no ARP (static neighbours), no IPv6
# (router solicitations, MLD), which RSS would put on other queues
for end in "ns1 dta 10.99.0.2 dtb ns2" "ns2 dtb 10.99.0.1 dta ns1"; do
	read -r ns dev addr peer pns <<< "$end"
	ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
	ip -n "$ns" neigh replace "$addr" dev "$dev" nud permanent \
		lladdr "$(ip -n "$pns" -br link show "$peer" | awk '{ print $3 }')" ||
		fail "cannot add a static neighbour in $ns"
done
et() { ip netns exec ns2 ethtool "$@"; }
et -K dtb ntuple on || fail "cannot turn ntuple on"
et -N dtb flow-type tcp4 dst-port 7100 action 1 > /dev/null || fail "cannot steer to queue 1"
et -N dtb flow-type tcp4 dst-port 7101 action 0 > /dev/null || fail "cannot steer to queue 0"

# polls_by_cpu PORT: a 20 MB stream to PORT from CPU 0 to CPU 0; prints
# "CPU POLLS" for dtb's polls that received frames (TX completions are no
# RX work), and fails if the stream did
polls_by_cpu() {
	local rc
	echo 0 > $tr/tracing_on
	echo > $tr/trace
	echo 'work > 0' > $tr/events/napi/napi_poll/filter
	echo 1 > $tr/events/napi/napi_poll/enable
	echo 1 > $tr/tracing_on
	taskset -c 0 ip netns exec ns2 selftests/net/tcp_stream recv -p "$1" -n 20000000 > /dev/null &
	sleep 0.3
	taskset -c 0 ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p "$1" \
		-n 20000000 > /dev/null
	wait $!
	rc=$?
	echo 0 > $tr/tracing_on
	echo 0 > $tr/events/napi/napi_poll/enable
	sed -n 's/.*\[0*\([0-9][0-9]*\)\].*napi_poll:.* device dtb work .*/\1/p' $tr/trace |
		sort -n | uniq -c | awk '{ print $2, $1 }'
	return $rc
}

q1=$(polls_by_cpu 7100)
check "a validated stream steered to queue 1" test $? = 0
echo "dtb receive polls per CPU, queue 1:"; echo "$q1"
q0=$(polls_by_cpu 7101)
check "a validated stream steered to queue 0" test $? = 0
echo "dtb receive polls per CPU, queue 0:"; echo "$q0"

on_cpu() { awk -v c="$2" '$1 == c { n = $2 } END { print n + 0 }' <<< "$1"; }
off_cpu() { awk -v c="$2" '$1 != c { n += $2 } END { print n + 0 }' <<< "$1"; }
check "queue 1 received in polls on CPU 1 ($(on_cpu "$q1" 1))" test "$(on_cpu "$q1" 1)" -ge 10
check "queue 1 received on no other CPU ($(off_cpu "$q1" 1))" test "$(off_cpu "$q1" 1)" = 0
check "queue 0 received in polls on CPU 0 ($(on_cpu "$q0" 0))" test "$(on_cpu "$q0" 0)" -ge 10
check "queue 0 received on no other CPU ($(off_cpu "$q0" 0))" test "$(off_cpu "$q0" 0)" = 0
echo 0 > $tr/events/napi/napi_poll/filter
echo > $tr/trace
teardown ns1 ns2
finish
