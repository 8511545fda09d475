#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libdevcoll over a devtcp pair, one rank per namespace: the collectives of
# coll_check over the plain receive path, then over the devmem receive path
# (every connection steered to queue 6, a udmabuf bound there, reductions
# reading the fragments in place). Both runs must be right and the devmem
# run must give the same results as the plain one, with its payload through
# the dma-buf; a dup'ed communicator shares the binding.
. "$(dirname "$0")/../lib.sh"

prog=/devtcp/selftests/coll/coll_check
devmem=/devtcp/userspace/tools/devmem
[ -x $prog ] || fail "$prog is not built (make -C selftests/coll)"
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ip netns exec ns1 $devmem nic setup dta --reserve 2 > /dev/null || fail "nic setup dta"
ip netns exec ns2 $devmem nic setup dtb --reserve 2 > /dev/null || fail "nic setup dtb"

# run MODE PORT: both ranks; outputs in /tmp/coll.MODE.{0,1}{,.err}
run() {
	local mode=$1 port=$2 pid rc=0
	ip netns exec ns2 env DEVCOLL_RANK=1 DEVCOLL_SIZE=2 DEVCOLL_ADDR=10.99.0.1:$port \
		DEVCOLL_RX=$mode DEVCOLL_DEVMEM_IFACE=dtb DEVCOLL_DEVMEM_QUEUE=6 DEVCOLL_DEBUG=1 \
		DEVCOLL_TIMEOUT_MS=60000 timeout 600 $prog > /tmp/coll.$mode.1 2> /tmp/coll.$mode.1.err &
	pid=$!
	ip netns exec ns1 env DEVCOLL_RANK=0 DEVCOLL_SIZE=2 DEVCOLL_ADDR=10.99.0.1:$port \
		DEVCOLL_RX=$mode DEVCOLL_DEVMEM_IFACE=dta DEVCOLL_DEVMEM_QUEUE=6 DEVCOLL_DEBUG=1 \
		DEVCOLL_TIMEOUT_MS=60000 timeout 600 $prog > /tmp/coll.$mode.0 2> /tmp/coll.$mode.0.err || rc=1
	wait $pid || rc=1
	tail -n 1 /tmp/coll.$mode.0 /tmp/coll.$mode.1
	cat /tmp/coll.$mode.0.err /tmp/coll.$mode.1.err
	return $rc
}

t0=$(date +%s)
check "plain receive path: every collective right on both ranks" run plain 7100
echo "plain run: $(($(date +%s) - t0)) s"
t0=$(date +%s)
check "devmem receive path: every collective right on both ranks" run devmem 7200
echo "devmem run: $(($(date +%s) - t0)) s"
for r in 0 1; do
	check "rank $r: devmem results identical to the plain ones ($(grep -c . /tmp/coll.plain.$r) lines)" \
		cmp /tmp/coll.plain.$r /tmp/coll.devmem.$r
	# one line per communicator (the world and its dup)
	bytes=$(sed -n 's/.*devmem: \([0-9]*\) bytes via the dma-buf.*/\1/p' /tmp/coll.devmem.$r.err |
		awk '{ s += $1 } END { print s + 0 }')
	comms=$(grep -c "bytes via the dma-buf" /tmp/coll.devmem.$r.err)
	check "rank $r: the payload came through the dma-buf ($bytes bytes, $comms communicators)" \
		test "$bytes" -gt 10000000 -a "$comms" = 2
done
# the rules and bindings are gone with the communicator
check "no flow rule is left on dtb" test -z "$(ip netns exec ns2 ethtool -n dtb | grep -i 'Filter:')"
ip netns exec ns1 $devmem nic teardown dta > /dev/null
ip netns exec ns2 $devmem nic teardown dtb > /dev/null
ip netns del ns1
ip netns del ns2
finish
