#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: inside the test VM, bring up a devtcp NIC pair between two
# namespaces and receive a TCP stream straight into a dma-buf (devmem TCP):
# a udmabuf is bound to RX queue 3 with netdev bind-rx, an ntuple rule steers
# the flow there, and the receiver validates every byte in the dma-buf.
. "$(dirname "$0")/lib.sh"

bytes=${DEVTCP_DEMO_BYTES:-268435456}
q=3

echo "== devtcp demo on Linux $(uname -r)"
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the devtcp pair"
devmem_steer ns2 dtb $q 5001 || fail "cannot steer the flow to queue $q"
echo "pair: dta (ns1, 10.99.0.1) <-> dtb (ns2, 10.99.0.2), 8 channels"
echo "receiver: header split on, RSS kept off queue $q, tcp dst-port 5001 -> queue $q"

echo
echo "== receiving $bytes bytes into a 64 MiB udmabuf bound to dtb queue $q"
ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5001 -n "$bytes" -s 42 > /tmp/rx.out 2>&1 &
rx=$!
for _ in $(seq 100); do grep -q listening /tmp/rx.out && break; sleep 0.1; done
ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n "$bytes" -s 42
wait $rx || { cat /tmp/rx.out; fail "the devmem stream did not arrive intact"; }
grep -v listening /tmp/rx.out

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
echo "Queue $q split every data frame: TCP headers went to host-memory header"
echo "buffers, the payload into the dma-buf, which the receiver read through"
echo "mmap (recvmsg with MSG_SOCK_DEVMEM returned dma-buf offsets, not bytes)."
ip netns del ns1
ip netns del ns2
