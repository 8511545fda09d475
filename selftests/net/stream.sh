#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A TCP stream over a devtcp pair arrives byte for byte, with header split
# off and on, and the receiver's counters show which buffers it went to.
# DEVTCP_STREAM_BYTES sets the size (default 1 GiB).
. "$(dirname "$0")/../lib.sh"

bytes=${DEVTCP_STREAM_BYTES:-1073741824}
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"

sum_stat() { # sum of rx*_NAME on dtb
	ip netns exec ns2 ethtool -S dtb | awk -v n="_$1:" 'index($1, n) && $1 ~ /^rx/ { s += $2 } END { print s + 0 }'
}

stream() { # stream SEED
	local port=$((5000 + $1)) rc
	ip netns exec ns2 selftests/net/tcp_stream recv -p $port -n "$bytes" -s "$1" &
	ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p $port -n "$bytes" -s "$1"
	wait $!
}

seed=0
for split in off on; do
	seed=$((seed + 1))
	ip netns exec ns2 ethtool -G dtb tcp-data-split $split || fail "cannot set tcp-data-split $split"
	b0=$(sum_stat bytes)
	s0=$(sum_stat split_packets)
	check "$bytes bytes intact with header split $split" stream $seed
	b1=$(sum_stat bytes)
	s1=$(sum_stat split_packets)
	check "receiver counted at least $bytes bytes (split $split)" test $((b1 - b0)) -ge "$bytes"
	if [ $split = on ]; then
		check "payload went to payload buffers (split_packets grew by $((s1 - s0)))" \
			test $((s1 - s0)) -gt 0
	else
		check "nothing was split with header split off" test $((s1 - s0)) -eq 0
	fi
done

check "IPv6 stream intact" bash -c "
	ip netns exec ns2 selftests/net/tcp_stream recv -6 -p 6000 -n 100000000 -s 9 &
	ip netns exec ns1 selftests/net/tcp_stream send -6 -a fd99::2 -p 6000 -n 100000000 -s 9
	wait \$!"
teardown ns1 ns2
finish
