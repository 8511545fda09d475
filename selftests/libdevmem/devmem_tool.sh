#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The devmem tool (and through it libdevmem's nic, binding, rx, tx and zcrx
# parts) over a devtcp pair: nic setup/show/teardown checked against ethtool,
# devmem RX from a plain sender and from a devmem sender into udmabuf and
# heap memory, io_uring zero-copy receive into user memory and a dma-buf,
# both into 16 KiB buffers at MTU 9000 (--page-size),
# a netcat-style file transfer, and errors a person can act on.
. "$(dirname "$0")/../lib.sh"

bytes=${DEVTCP_TOOL_BYTES:-200000000}
devmem=/devtcp/userspace/tools/devmem
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
b() { ip netns exec ns2 "$@"; }
a() { ip netns exec ns1 "$@"; }
snapshot() { for o in -g -l -k -x -n; do b ethtool $o dtb 2>&1; done | grep -v "^Features for\|fixed\]"; }

before=$(snapshot)
out=$(b $devmem nic setup dtb --reserve 2 2>&1)
check "nic setup reserves queues 6-7" test $? = 0
echo "$out"
check "... header split is on" grep -q "TCP data split:.*on" <<< "$(b ethtool -g dtb)"
check "... ntuple is on" grep -q "ntuple-filters: on" <<< "$(b ethtool -k dtb)"
check "... the main RSS table spreads over queues 0-5" test "$(rss_queues ns2 dtb)" = "0 1 2 3 4 5"
ctx=$(sed -n 's/.*RSS context \([0-9]*\).*/\1/p' <<< "$out")
check "... an RSS context ($ctx) spans queues 6-7" test "$(rss_queues ns2 dtb context "$ctx")" = "6 7"
out=$(b $devmem nic setup dtb 2>&1)
check "a second setup is refused" test $? = 1
echo "$out"
check "... saying how to start over" grep -q "teardown dtb" <<< "$out"

json=$(b $devmem nic show dtb --json)
echo "$json"
check "nic show --json parses and reports the reservation" python3 -c "
import json, sys
d = json.loads(sys.argv[1])
assert d['header_split'] and d['ntuple'] and d['reserved'] == [6, 7], d
assert len(d['rx_queues']) == 8, d
# Two page pools (headers, payload) per queue, all on host memory now.
assert len(d['page_pools']) == 16, d
assert all(p['dmabuf_id'] == 0 and not p['detached'] for p in d['page_pools']), d
" "$json"

# While a receiver holds queue 6, show reports its binding and page pool.
: > /tmp/rx0.err
ip netns exec ns2 timeout 60 $devmem rx --iface dtb --queue 6 --port 5000 > /dev/null 2> /tmp/rx0.err &
pid=$!
wait_listen /tmp/rx0.err
json=$(b $devmem nic show dtb --json)
kill $pid
wait $pid 2>/dev/null
check "nic show lists the binding of queue 6 and a page pool using it" python3 -c "
import json, sys
d = json.loads(sys.argv[1])
q6 = [q for q in d['rx_queues'] if q['id'] == 6][0]
assert q6['dmabuf_id'] > 0, q6
assert [p for p in d['page_pools'] if p['dmabuf_id'] == q6['dmabuf_id']], d['page_pools']
" "$json"
b $devmem nic show dtb

# rx_run PORT QUEUE RXOPTS... -- SENDER...: a devmem receiver, then the sender.
rx_run() {
	local port=$1 q=$2 pid rc
	shift 2
	local rxopts=()
	while [ "$1" != -- ]; do rxopts+=("$1"); shift; done
	shift
	: > /tmp/rx.err
	b timeout 300 $devmem rx --iface dtb --queue "$q" --port "$port" --steer "${rxopts[@]}" \
		> /tmp/rx.out 2> /tmp/rx.err &
	pid=$!
	wait_listen /tmp/rx.err || { cat /tmp/rx.err; return 1; }
	a timeout 300 "$@" > /tmp/tx.out 2>&1
	rc=$?
	wait $pid || rc=1
	cat /tmp/tx.out /tmp/rx.err /tmp/rx.out
	return $rc
}

check "devmem rx (udmabuf) from a plain sender, validated" \
	rx_run 5001 6 --bytes $bytes --pattern 11 -- \
	/devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n $bytes -s 11
check "... 0 mismatched, all through the dma-buf" grep -q "(${bytes} via dma-buf, 0 linear).* 0 mismatched" /tmp/rx.out
check "devmem tx to devmem rx (heap), validated" \
	rx_run 5002 7 --bytes $bytes --pattern 12 --mem heap -- \
	$devmem tx --iface dta --addr 10.99.0.2 --port 5002 --bytes $bytes --pattern 12
check "... the sender saw every send complete" grep -q "all completed" /tmp/tx.out
check "io_uring zcrx into user memory, validated" \
	rx_run 5003 6 --bytes $bytes --pattern 13 --zcrx --mem user -- \
	/devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5003 -n $bytes -s 13
check "... all zero-copy" grep -q "(${bytes} zero-copy, 0 linear).* 0 mismatched" /tmp/rx.out
check "io_uring zcrx into a udmabuf area, validated" \
	rx_run 5004 7 --bytes $bytes --pattern 14 --zcrx -- \
	/devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5004 -n $bytes -s 14

# Receive buffers larger than a page (rx-page-size, Linux 7.x): at MTU 9000
# a segment's 8948 bytes land in one 16 KiB buffer, for a devmem binding
# and for zcrx (io_uring's rx_buf_len) alike, so fragments outgrow a page.
largest() { sed -n 's/.* fragments (largest \([0-9]*\)).*/\1/p' /tmp/rx.out; }
if kernel_has netdev_queue_config; then
	a ip link set dta mtu 9000 && b ip link set dtb mtu 9000 || fail "cannot set MTU 9000"
	check "devmem rx into 16 KiB buffers (heap), validated" \
		rx_run 5006 6 --bytes $bytes --pattern 15 --mem heap --page-size 16K -- \
		/devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5006 -n $bytes -s 15
	check "... bound with 16384-byte buffers" grep -q "bound as dmabuf [0-9]*, 16384-byte buffers" /tmp/rx.err
	check "... fragments of more than a page (largest $(largest))" test "$(largest)" -gt 4096
	check "io_uring zcrx into 16 KiB buffers (heap area), validated" \
		rx_run 5007 7 --bytes $bytes --pattern 16 --zcrx --mem heap --page-size 16K -- \
		/devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5007 -n $bytes -s 16
	check "... registered with 16384-byte buffers" \
		grep -q "zero-copy receive into [0-9]* bytes of dma-heap memory, 16384-byte buffers" /tmp/rx.err
	check "... all zero-copy, 0 mismatched" grep -q "(${bytes} zero-copy, 0 linear).* 0 mismatched" /tmp/rx.out
	check "... chunks of more than a page (largest $(largest))" test "$(largest)" -gt 4096
	out=$(b $devmem rx --iface dtb --queue 7 --port 5008 --zcrx --mem heap --page-size 12K 2>&1)
	check "io_uring zcrx with 12 KiB buffers is refused (exit $?)" test $? = 1
	echo "$out"
	check "... saying why" grep -q "12288 is not a power of two of at least the page size" <<< "$out"
	a ip link set dta mtu 1500 && b ip link set dtb mtu 1500 || fail "cannot set MTU 1500"
else
	echo "# SKIP: 16 KiB receive buffers: this kernel has no rx-page-size (Linux 7.x)"
fi

# netcat style: a file through devmem TX and devmem RX, compared.
head -c 30000001 /dev/urandom > /tmp/in.bin
rx_file() {
	local pid rc
	: > /tmp/rx.err
	b timeout 600 $devmem rx --iface dtb --queue 6 --port 5005 --steer --output /tmp/out.bin \
		> /tmp/rx.out 2> /tmp/rx.err &
	pid=$!
	wait_listen /tmp/rx.err || return 1
	a timeout 600 $devmem tx --iface dta --addr 10.99.0.2 --port 5005 < /tmp/in.bin > /tmp/tx.out 2>&1
	rc=$?
	wait $pid || rc=1
	cat /tmp/tx.out /tmp/rx.err /tmp/rx.out
	return $rc
}
check "a file sent with devmem tx < FILE arrives with devmem rx --output" rx_file
check "... byte for byte" cmp /tmp/in.bin /tmp/out.bin

# Errors a person can act on.
out=$(b $devmem rx --iface nosuch0 --queue 1 --port 5006 2>&1)
check "an unknown interface fails with status 1" test $? = 1
echo "$out"
check "... naming it" grep -q "nosuch0" <<< "$out"
# The VM has no GPU: the CUDA path can only be checked for its error.
out=$(b $devmem rx --iface dtb --queue 6 --port 5006 --mem cuda 2>&1)
check "CUDA memory without a GPU fails with status 1" test $? = 1
echo "$out"
check "... saying there is no CUDA driver" grep -q "CUDA memory: .*libcuda" <<< "$out"
echo "SKIP: CUDA data path not exercised: no GPU in the VM"
out=$(b $devmem rx --iface dtb --queue 6 --port 5006 --size 12x 2>&1)
check "a malformed size is a usage error (status 2)" test $? = 2
echo "$out"
out=$(a $devmem tx --iface dta --addr 10.99.0.2 --port 5006 --mem user --pattern 1 2>&1)
check "tx from user memory is refused" test $? = 1
echo "$out"

out=$(b $devmem nic teardown dtb 2>&1)
check "nic teardown" test $? = 0
echo "$out"
after=$(snapshot)
check "... puts rings, channels, features, RSS and rules back exactly" test "$before" = "$after"
[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after")

# With the channel count changed too: show reports the queues really
# reserved, the state file lists each change, teardown puts all back.
out=$(b $devmem nic setup dtb --queues 4 --reserve 1 2>&1)
check "nic setup --queues 4 --reserve 1" test $? = 0
echo "$out"
json=$(b $devmem nic show dtb --json)
check "... show reports queue 3 of 4 reserved" python3 -c "
import json, sys
d = json.loads(sys.argv[1])
assert d['queues'] == 4 and d['reserved'] == [3, 3], d
" "$json"
check "... the state file records the channel count to restore" \
	grep -q "^channels 8$" /run/devmem/dtb.state
check "nic teardown" b $devmem nic teardown dtb
check "... 8 queues and everything else back" test "$before" = "$(snapshot)"
out=$(b $devmem nic setup dtb --reserve 8 2>&1)
check "reserving every queue is refused" test $? = 1
echo "$out"
check "... saying how many may be" grep -q "reserve 1 to 7" <<< "$out"
check "... the NIC untouched, no state file" \
	eval 'test "$before" = "$(snapshot)" && ! test -e /run/devmem/dtb.state'

# Header split off: binding fails and says what to change.
out=$(b $devmem rx --iface dtb --queue 3 --port 5007 2>&1)
check "rx on a queue without header split fails" test $? = 1
echo "$out"
check "... saying to turn header split on" grep -qi "header split" <<< "$out"
teardown ns1 ns2
finish
