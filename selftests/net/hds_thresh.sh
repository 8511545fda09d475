#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# hds-thresh (ethtool netlink, set by genl.py; kernels from 6.14): frames
# whose payload is no larger than the threshold stay whole in the header
# buffer, larger ones are split; out-of-range thresholds are refused with
# the core's message and change nothing.
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
if ! hds_nl hds-thresh dtb > /dev/null 2>&1; then
	ip netns del ns1
	ip netns del ns2
	skip "this kernel has no hds-thresh in ethtool (6.14 and later; before, every segment with payload is split)"
fi
ip netns exec ns2 ethtool -G dtb tcp-data-split on || fail "cannot enable header split"
check "hds-thresh starts at 0 with maximum 1024" \
	test "$(hds_nl hds-thresh dtb)" = "hds-thresh 0 max 1024"

out=$(hds_nl set-hds-thresh dtb 2000 2>&1)
check "hds-thresh 2000 is refused" test $? -ne 0
echo "$out"
check "... with a message" grep -q "exceeds maximum" <<< "$out"
check "... and it stays 0" test "$(hds_nl hds-thresh dtb)" = "hds-thresh 0 max 1024"

check "hds-thresh 256 is accepted" hds_nl set-hds-thresh dtb 256
check "... and reads back" test "$(hds_nl hds-thresh dtb)" = "hds-thresh 256 max 1024"
hds_thresh=256 udp_split 100
check "100-byte datagrams stay whole under threshold 256" test $split -eq 0
check "... and were received" test $frames -ge 200
hds_thresh=256 udp_split 600
check "600-byte datagrams are split under threshold 256" test $split -ge 200

check "a stream is intact with hds-thresh 256" plain_stream 5400 50000000 11

teardown ns1 ns2
finish
