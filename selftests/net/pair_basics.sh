#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A devtcp pair: creation through rtnetlink (devtcp-pair and plain ip link)
# with default and explicit queue counts, IPv4/IPv6 and jumbo traffic,
# deletion of both ends, and bad input refused with a clear message and
# nothing created.
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"

check "ethtool -i names the driver" \
	bash -c 'ip netns exec ns1 ethtool -i dta | grep -qx "driver: devtcp"'
check "8 combined channels by default" \
	bash -c 'ip netns exec ns1 ethtool -l dta | awk "/^Combined:/{print \$2}" | grep -qx 8'
check "the ends know each other (iflink)" \
	bash -c 'ip -n ns1 -o link show dta | grep -q "dta@if"'
check "IPv4 ping" ip netns exec ns1 ping -q -c 2 -i 0.2 -W 2 10.99.0.2
check "IPv6 ping" ip netns exec ns1 ping -q -6 -c 2 -i 0.2 -W 2 fd99::2
check "MTU 9000 on both ends" \
	bash -c 'ip -n ns1 link set dta mtu 9000 && ip -n ns2 link set dtb mtu 9000'
check "an 8972-byte ping crosses unfragmented" \
	ip netns exec ns1 ping -q -c 2 -i 0.2 -W 2 -M do -s 8972 10.99.0.2

out=$(ip -n ns1 link set dta mtu 9001 2>&1)
check "MTU 9001 is refused" test $? -ne 0
check "the MTU stays 9000" bash -c 'ip -n ns1 link show dta | grep -q "mtu 9000 "'

check "deleting one end removes both" \
	bash -c 'ip -n ns1 link del dta && ! ip -n ns2 link show dtb 2>/dev/null'

out=$(ip link add dtx numtxqueues 65 numrxqueues 65 type devtcp 2>&1)
check "65 queues are refused" test $? -ne 0
check "... with a message naming the limit" grep -q "at most 64 queues" <<< "$out"
echo "$out"
out=$(ip link add dtx numtxqueues 4 numrxqueues 2 type devtcp 2>&1)
check "different TX and RX queue counts are refused" test $? -ne 0
echo "$out"
# One count alone leaves the other at the default (8): refused too (the old
# module took it and wrote past its 2 TX queues).
out=$(ip link add dtx numtxqueues 2 type devtcp 2>&1)
check "numtxqueues 2 alone is refused" test $? -ne 0
check "... naming both counts" grep -q "2 TX and 8 RX queues" <<< "$out"
echo "$out"
out=$(ip link add dtx numrxqueues 2 type devtcp 2>&1)
check "numrxqueues 2 alone is refused" test $? -ne 0
out=$(ip link add dtx numtxqueues 2 numrxqueues 2 type devtcp 2>&1)
check "2 and 2 queues are taken" test $? = 0
check "... and are what ethtool shows" \
	grep -q "^Combined:[[:space:]]*2" <<< "$(ethtool -l dtx | sed -n '/Current/,$p')"
ip link del dtx 2> /dev/null
check "nothing was created by refused requests" \
	bash -c '! ip -o link show type devtcp | grep -q .'

check "a 64-queue pair can be made" \
	ip link add dtx numtxqueues 64 numrxqueues 64 type devtcp
check "... and has 64 channels" \
	bash -c 'ethtool -l dtx | awk "/^Combined:/{print \$2}" | tail -n1 | grep -qx 64'
check "ip link add without a peer names the peer devtcp%d" \
	bash -c 'ip -o link show dtx | grep -q "dtx@devtcp[0-9]"'
ip link del dtx

ip netns add ns3
check "devtcp-pair names both ends and places the peer" \
	$DEVTCP_PAIR add dtp dtq -q 4 -m 9000 -N ns3
check "... with 4 queues" \
	bash -c 'ip netns exec ns3 ethtool -l dtq | awk "/^Combined:/{print \$2}" | tail -n1 | grep -qx 4'
check "... and MTU 9000 on both ends" \
	bash -c 'ip link show dtp | grep -q "mtu 9000" && ip -n ns3 link show dtq | grep -q "mtu 9000"'
out=$($DEVTCP_PAIR add dtp dtr 2>&1)
check "an existing name is refused" test $? -ne 0
echo "$out"
out=$($DEVTCP_PAIR add dty dtz -q 65 2>&1)
check "65 queues are refused with the driver's message" grep -q "at most 64 queues" <<< "$out"
echo "$out"
out=$($DEVTCP_PAIR add dty dtz -N no-such-ns 2>&1)
check "an unknown namespace is refused" test $? -ne 0
echo "$out"
check "devtcp-pair del removes both ends" \
	bash -c "$DEVTCP_PAIR del dtq -n ns3 && ! ip link show dtp 2>/dev/null"
teardown ns3 ns1 ns2
finish
