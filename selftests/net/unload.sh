#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Removing the module with pairs up in namespaces and traffic flowing removes
# every devtcp device, every page of their pools comes back, and the kernel
# stays clean (the runner checks dmesg).
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the first pair"
devtcp_pair dtc ns3 dtd ns4 || fail "cannot create the second pair"
# Both ends reset the connection when they are killed (-R), so no orphaned
# socket, with unsent data and no device left for its FIN, resends for
# minutes and keeps its namespace alive after the test.
ip netns exec ns2 selftests/net/tcp_stream recv -R -p 5200 -n 4000000000 > /dev/null 2>&1 &
rpid=$!
ip netns exec ns1 selftests/net/tcp_stream send -R -a 10.99.0.2 -p 5200 -n 4000000000 > /dev/null 2>&1 &
spid=$!
sleep 2
check "traffic is flowing before the unload" \
	test "$(ip -n ns2 -s -j link show dtb | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["bytes"])')" -gt 1000000
check "rmmod with pairs up and traffic flowing succeeds" rmmod devtcp
# The stream cannot finish without its link: end it.
kill -9 $spid $rpid 2>/dev/null
wait
check "no TCP connection is left in any namespace" bash -c '
	for ns in ns1 ns2 ns3 ns4; do ip netns exec $ns ss -Htn state all; done | grep -q . && exit 1; exit 0'
check "no devtcp device is left in any namespace" bash -c '
	for ns in ns1 ns2 ns3 ns4; do ip -n $ns -o link show type devtcp; done | grep -q . && exit 1; exit 0'
# The receiver's pages outlive the module: its socket and the per-CPU
# deferred-free lists of skbs it read still held them when the pools went.
# They must all come back (pages_back kicks every CPU's list and checks);
# deleting the namespaces with pages out makes the kernel report a stalled
# page pool a minute later.
pages_back ns1 ns2 ns3 ns4
check "the module loads again" insmod "$DEVTCP_KO"
finish
