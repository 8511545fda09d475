#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A ring request that changes nothing restarts nothing: dtb's ring sizes set
# again as they are leave its page pools in place (the same netdev netlink
# ids). ethtool -G's netlink request stops in the core when nothing changes;
# the ethtool ioctl (ETHTOOL_SRINGPARAM) hands the values to the driver
# whatever they are, and each one used to stop every queue and recreate its
# pools. A real change (rx 512) does replace every pool: the positive
# control. And a ring change leaves txqueuelen alone: it used to be
# overwritten with the TX ring's size.
. "$(dirname "$0")/../lib.sh"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
e() { ip netns exec ns2 ethtool "$@"; }
ring() { e -g dtb | awk -v k="$1:" '$1 " " $2 == k || $1 == k { v = $NF } END { print v }'; }
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
txqlen() { ip netns exec ns2 cat /sys/class/net/dtb/tx_queue_len; }

# pool_ids: the ids of dtb's page pools in use (not those destroyed and
# waiting for pages), sorted, on a line.
pool_ids() {
	ip netns exec ns2 env PYTHONDONTWRITEBYTECODE=1 python3 - "$ifindex" <<'PY'
import socket, sys
sys.path.insert(0, "/devtcp/selftests/net")
import genl
sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, genl.NETLINK_GENERIC)
fam = genl.family(sock, "netdev")
ids = sorted(genl.uint(pp[genl.PP_ID])
             for pp in genl.request(sock, fam, genl.CMD_PAGE_POOL_GET, b"", genl.NLM_F_DUMP)
             if genl.PP_IFINDEX in pp and genl.u32(pp[genl.PP_IFINDEX]) == int(sys.argv[1])
             and genl.PP_DETACH not in pp)
print(*ids)
PY
}

# ioctl_rings [RX TX]: with RX and TX, sets dtb's rings through the ioctl
# (ETHTOOL_SRINGPARAM, the other fields as ETHTOOL_GRINGPARAM read them);
# prints "rx N tx N" as the driver then reports them.
ioctl_rings() {
	ip netns exec ns2 python3 - dtb "$@" <<'PY'
import array, fcntl, socket, struct, sys
SIOCETHTOOL, ETHTOOL_GRINGPARAM, ETHTOOL_SRINGPARAM = 0x8946, 0x10, 0x11
# struct ethtool_ringparam: cmd, rx/rx_mini/rx_jumbo/tx max, rx, rx_mini, rx_jumbo, tx
RX, TX = 5, 8
ring = array.array("I", [ETHTOOL_GRINGPARAM] + [0] * 8)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ifr = struct.pack("16sP16x", sys.argv[1].encode(), ring.buffer_info()[0])   # struct ifreq
fcntl.ioctl(sock, SIOCETHTOOL, ifr)
if len(sys.argv) > 2:
    ring[0], ring[RX], ring[TX] = ETHTOOL_SRINGPARAM, int(sys.argv[2]), int(sys.argv[3])
    try:
        fcntl.ioctl(sock, SIOCETHTOOL, ifr)
    except OSError as err:
        print(f"ETHTOOL_SRINGPARAM: {err.strerror}", file=sys.stderr)
        sys.exit(1)
    ring[0] = ETHTOOL_GRINGPARAM
    fcntl.ioctl(sock, SIOCETHTOOL, ifr)
print(f"rx {ring[RX]} tx {ring[TX]}")
PY
}

ids0=$(pool_ids)
echo "page pools of dtb: $ids0"
check "dtb has 16 page pools (header and payload for each of 8 queues)" \
	test "$(wc -w <<< "$ids0")" = 16
check "the ioctl reads the rings ethtool -g shows (1024, 1024)" \
	test "$(ioctl_rings)" = "rx 1024 tx 1024"

check "ethtool -G dtb rx 1024 tx 1024 (as they are) succeeds" e -G dtb rx 1024 tx 1024
ids=$(pool_ids)
echo "after: $ids"
check "... and leaves every page pool in place" test "$ids" = "$ids0"

out=$(ioctl_rings 1024 1024 2>&1)
rc=$?
echo "ETHTOOL_SRINGPARAM rx 1024 tx 1024: $out"
check "the same rings through the ioctl succeed (exit $rc)" test $rc = 0
ids=$(pool_ids)
echo "after: $ids"
check "... and leave every page pool in place (no queue restarted)" test "$ids" = "$ids0"

# The positive control: a change recreates the pools, none of the old
# ones stays in use.
check "ethtool -G dtb rx 512 succeeds" e -G dtb rx 512
check "... rx ring reads back 512" test "$(ring RX)" = 512
ids1=$(pool_ids)
echo "after rx 512: $ids1"
check "... with 16 page pools again" test "$(wc -w <<< "$ids1")" = 16
check "... all of them new" \
	test -z "$(comm -12 <(tr ' ' '\n' <<< "$ids0" | sort) <(tr ' ' '\n' <<< "$ids1" | sort))"

out=$(ioctl_rings 512 1024 2>&1)
check "rx 512 tx 1024 again through the ioctl (exit $?): $out" test "$out" = "rx 512 tx 1024"
check "... leaves the new pools in place" test "$(pool_ids)" = "$ids1"

# txqueuelen is the qdisc's, not the ring's.
ip -n ns2 link set dtb txqueuelen 5000 || fail "cannot set txqueuelen"
check "txqueuelen reads 5000" test "$(txqlen)" = 5000
check "ethtool -G dtb rx 512 tx 512 succeeds" e -G dtb rx 512 tx 512
check "... tx ring reads back 512" test "$(ring TX)" = 512
echo "txqueuelen after the ring change: $(txqlen)"
check "... and txqueuelen is still 5000" test "$(txqlen)" = 5000
check "ethtool -G dtb rx 1024 tx 1024 succeeds" e -G dtb rx 1024 tx 1024
check "... txqueuelen still 5000" test "$(txqlen)" = 5000
check "... and the pools were replaced" \
	test -z "$(comm -12 <(tr ' ' '\n' <<< "$ids1" | sort) <(pool_ids | tr ' ' '\n' | sort))"

check "ping from ns1" ip netns exec ns1 ping -q -c 3 -i 0.2 -W 2 10.99.0.2
check "a plain stream arrives intact" plain_stream 5400 20000000 71
teardown ns1 ns2
finish
