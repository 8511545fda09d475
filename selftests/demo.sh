#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: inside the test VM, a devtcp NIC pair between two namespaces
# carries a TCP stream from a dma-buf on the sender (devmem TX) into a dma-buf
# on the receiver (devmem RX), all set up with the devmem tool: the receiving
# NIC gets header split, RSS kept off two reserved queues, an ntuple rule and
# a udmabuf bound to one of them; every byte is validated in the dma-buf.
. "$(dirname "$0")/lib.sh"

bytes=${DEVTCP_DEMO_BYTES:-268435456}
q=7
devmem=/devtcp/userspace/tools/devmem

echo "== devtcp demo on Linux $(uname -r)"
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the devtcp pair"
echo "pair: dta (ns1, 10.99.0.1) <-> dtb (ns2, 10.99.0.2), 8 channels"

echo
echo "== devmem nic setup dtb --reserve 2"
ip netns exec ns2 $devmem nic setup dtb --reserve 2 || fail "nic setup failed"

echo
echo "== devmem rx on dtb queue $q  <-  devmem tx from dta, $bytes bytes"
: > /tmp/rx.err
ip netns exec ns2 $devmem rx --iface dtb --queue $q --port 5001 --steer --bytes "$bytes" \
	--pattern 42 > /tmp/rx.out 2> /tmp/rx.err &
rx=$!
wait_listen /tmp/rx.err
ip netns exec ns1 $devmem tx --iface dta --addr 10.99.0.2 --port 5001 --bytes "$bytes" \
	--pattern 42 || fail "the devmem sender failed"
wait $rx || { cat /tmp/rx.err /tmp/rx.out; fail "the devmem stream did not arrive intact"; }
grep -v listening /tmp/rx.err
cat /tmp/rx.out

echo
echo "== where it landed: devmem nic show dtb"
ip netns exec ns2 $devmem nic show dtb

echo
echo "The sender's NIC read the payload straight from its dma-buf (sendmsg with"
echo "MSG_ZEROCOPY and a dmabuf id); queue $q of the receiver split every frame:"
echo "TCP headers went to host-memory header buffers, the payload into the"
echo "receiver's dma-buf, which it read through mmap (recvmsg with MSG_SOCK_DEVMEM"
echo "returned dma-buf offsets, not bytes)."

echo
echo "== devmem nic teardown dtb"
ip netns exec ns2 $devmem nic teardown dtb || fail "teardown failed"
teardown ns1 ns2
finish
