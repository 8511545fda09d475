#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The RX path under bounce buffers (swiotlb=force, as in SEV/TDX guests):
# the device writes frames through the buffers' DMA addresses, so the sync
# for the CPU copies them in; a device model that wrote the pages and then
# synced got them overwritten by stale bounce slots. A validated stream
# with header split off and on (net/stream.sh), in a boot of its own. With
# the old device model the stream never finished (15 minutes, then killed);
# the VM's 300 s limit fails such a run.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
selftests/vm/run --append swiotlb=force --out "$out/run" --timeout 300 \
	--env DEVTCP_STREAM_BYTES=200000000 -- bash -c '
	mount -t debugfs none /sys/kernel/debug 2> /dev/null
	( . selftests/lib.sh; devtcp_pair dta ns1 dtb ns2 &&
	  ip netns exec ns1 ping -q -c 2 -i 0.2 10.99.0.2 > /dev/null
	  cat /sys/kernel/debug/swiotlb/io_tlb_used > /devtcp-out/used
	  ip netns del ns1; ip netns del ns2 )
	selftests/net/stream.sh'
rc=$?
used=$(cat "$out/run/used" 2> /dev/null)
if [ -z "$used" ] || [ "$used" -eq 0 ]; then
	echo "FAIL: an up pair's buffers took no bounce slot (io_tlb_used '$used'): the test proved nothing"
	exit 1
fi
echo "ok: an up pair's buffers are mapped through bounce slots (io_tlb_used $used)"
[ $rc = 0 ] || { echo "FAIL: net/stream.sh under swiotlb=force exited $rc"; exit 1; }
echo "ok: streams intact under bounce buffers"
