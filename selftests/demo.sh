#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: inside the test VM, bring up a devtcp NIC pair between two
# namespaces, turn header split on at the receiver, move a validated TCP
# stream across and show where it landed.
#
# devmem RX (payload into a dma-buf) is not in the driver yet: this demo runs
# the NIC's plain TCP path, with payload in page pool buffers of host memory.
. "$(dirname "$0")/lib.sh"

bytes=${DEVTCP_DEMO_BYTES:-268435456}

echo "== devtcp demo on Linux $(uname -r)"
echo "note: devmem RX/TX is not implemented yet; this is the plain TCP path of the NIC"
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the devtcp pair"
ip netns exec ns2 ethtool -G dtb tcp-data-split on || fail "cannot enable header split"
echo
echo "== the pair: dta (ns1, 10.99.0.1) <-> dtb (ns2, 10.99.0.2)"
ip -n ns2 -d link show dtb | sed -n '1,3p'
ip netns exec ns2 ethtool -i dtb | sed -n '1p;5p'
echo "channels: $(ip netns exec ns2 ethtool -l dtb | awk '/^Combined:/ { v = $2 } END { print v }')," \
	"header split: $(ip netns exec ns2 ethtool -g dtb | awk -F: '/TCP data split/ { gsub(/[ \t]/, "", $2); print $2 }')"

echo
echo "== sending $bytes bytes of a seeded pattern from ns1 to ns2"
ip netns exec ns2 selftests/net/tcp_stream recv -p 5001 -n "$bytes" -s 42 > /tmp/recv.out &
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n "$bytes" -s 42
wait $! || { cat /tmp/recv.out; fail "the stream did not arrive intact"; }
grep received /tmp/recv.out

echo
echo "== where it landed (dtb receive queues)"
printf '%-6s %12s %14s %14s\n' queue frames bytes split-frames
ip netns exec ns2 ethtool -S dtb | awk '
	match($1, /^rx[0-9]+_/) {
		q = substr($1, 3, RLENGTH - 3); k = substr($1, RLENGTH + 1); sub(/:$/, "", k)
		v[q, k] = $2; qs[q] = 1
	}
	END {
		for (q = 0; (q in qs); q++)
			if (v[q, "packets"] > 0)
				printf "rx%-4d %12d %14d %14d\n", q, v[q, "packets"], v[q, "bytes"], v[q, "split_packets"]
	}'
echo
echo "split frames: TCP headers in a header buffer (host memory), payload in payload"
echo "page pool buffers: the layout a devmem binding needs on that queue."
ip netns del ns1
ip netns del ns2
