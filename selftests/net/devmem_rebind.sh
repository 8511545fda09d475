#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bind, receive, and unbind under traffic, many times: a devmem receiver on
# queue 3 is killed mid-stream (its netlink socket closes, so the binding
# goes away while frames still arrive). Afterwards no page pool and no
# dma-buf is left behind, and the queue carries plain TCP again.
# DEVTCP_REBINDS sets the number of cycles (default 100).
. "$(dirname "$0")/../lib.sh"

cycles=${DEVTCP_REBINDS:-100}
q=3
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
devmem_steer ns2 dtb $q 5001 || fail "cannot steer port 5001 to queue $q"
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }

pools0=$(pools)
bufs0=$(dmabufs)
bytes0=$(ethtool_stat ns2 dtb rx${q}_bytes)
restarts0=$(ethtool_stat ns2 dtb rx${q}_restarts)
echo "before: $pools0, $bufs0 dma-bufs"
bound=0
for ((i = 0; i < cycles; i++)); do
	devmem_rebind_cycle $q 5001 && bound=$((bound + 1))
done
check "all $cycles receivers bound and listened ($bound)" test $bound = "$cycles"
moved=$(( $(ethtool_stat ns2 dtb rx${q}_bytes) - bytes0 ))
echo "queue $q received $moved bytes over the cycles"
check "traffic was flowing into the bindings (>= 64 KiB a cycle)" test $moved -ge $((cycles * 65536))
restarts=$(( $(ethtool_stat ns2 dtb rx${q}_restarts) - restarts0 ))
check "queue $q was restarted for every bind and unbind ($restarts times)" \
	test $restarts -ge $((2 * cycles))

# Buffers still held by dying sockets come back within seconds.
wait_buffers_back ns2 "$ifindex" "$pools0" "$bufs0" 60
echo "after: $(pools), $(dmabufs) dma-bufs"
check "no page pool left behind" test "$(pools)" = "$pools0"
check "no dma-buf left behind" test "$(dmabufs)" = "$bufs0"

check "queue $q carries a plain stream intact afterwards" plain_stream 5001 50000000 3
teardown ns1 ns2
finish
