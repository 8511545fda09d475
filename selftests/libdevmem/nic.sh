#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libdevmem's nic and binding sections on a devtcp pair: each change made
# through the library (header split, queues, ntuple, RSS spread, a context,
# IPv4 and IPv6 rules) is checked with ethtool; a udmabuf bound to a queue
# shows in devmem_nic_queues() and in netdev netlink (genl.py) and goes away
# on unbind; restore puts back exactly what ethtool -g -l -x -n -k showed
# before; refusals name the interface, the queue and what to change; queue
# counters move under a plain stream. nic_test runs the library calls and
# keeps the handles; this script talks to it one command a line.
. "$(dirname "$0")/../lib.sh"

dir=$(cd "$(dirname "$0")" && pwd)
[ -x "$dir/nic_test" ] || fail "nic_test is not built (make)"
[ -c /dev/udmabuf ] || skip "no /dev/udmabuf"

cleanup() {
	[ -n "${NT_PID:-}" ] && kill "$NT_PID" 2>/dev/null
	ip netns del ns1 2>/dev/null
	ip netns del ns2 2>/dev/null
}
trap cleanup EXIT

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
et() { ip netns exec ns2 ethtool "$@"; }
genl() { ip netns exec ns2 python3 /devtcp/selftests/net/genl.py "$@"; }
ifindex=$(ip -n ns2 -o link show dtb | cut -d: -f1)
snapshot() { local o; for o in -g -l -x -n -k; do echo "== ethtool $o"; et $o dtb; done; }

coproc NT { ip netns exec ns2 "$dir/nic_test" 2>&1; }

# nt CMD...: one command to nic_test; its answer in $reply.
nt() {
	echo "$*" >&"${NT[1]}"
	IFS= read -r -t 120 reply <&"${NT[0]}" || reply="err 0 (no answer from nic_test)"
	echo "  $* -> $reply"
}
# okc DESC CMD...: CMD answers ok.
okc() { local d=$1; shift; nt "$@"; check "$d" test "${reply%% *}" = ok; }
# errc DESC ERRNO REGEX CMD...: CMD fails with errno ERRNO (a regex) and a
# message matching REGEX.
errc() {
	local d=$1 e=$2 re=$3
	shift 3
	nt "$@"
	check "$d" grep -qE "^err ($e) .*$re" <<< "$reply"
}
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' <<< "$reply"; }

before=$(snapshot)

echo "# open"
okc "open dtb" open 0 dtb
errc "open of a missing interface: -ENODEV naming it" 19 "nosuchdev0: no such interface" \
	open 1 nosuchdev0
okc "state" state 0
q0=$(field queues)
check "state: $q0 queues, header split off, ntuple off" \
	grep -q "split 0 .*ntuple 0 indir [1-9]" <<< "$reply"

echo "# header split"
okc "header split on" split 0 on
check "ethtool -g: tcp-data-split on" grep -qE "TCP data split:[[:space:]]+on" <<< "$(et -g dtb)"
if genl hds-thresh dtb > /dev/null 2>&1; then
	check "hds-thresh 0" test "$(genl hds-thresh dtb)" = "hds-thresh 0 max 1024"
else
	echo "# not checked: this kernel has no hds-thresh (6.14 and later)"
fi
okc "header split on again (no change)" split 0 on

echo "# queues"
okc "6 queues" queues 0 6
check "ethtool -l: combined 6" test "$(et -l dtb | awk '/^Combined:/ { v = $2 } END { print v }')" = 6
errc "99 queues refused" 22 "dtb: 99 queues requested, the device has at most" queues 0 99

echo "# ntuple"
okc "ntuple on" ntuple 0 on
check "ethtool -k: ntuple-filters on" grep -q "^ntuple-filters: on" <<< "$(et -k dtb)"

echo "# RSS"
okc "spread over queues 1..5" spread 0 1 5
check "ethtool -x: table uses queues 1..5 only" test "$(rss_queues ns2 dtb)" = "1 2 3 4 5"
errc "spread past the last queue refused" 22 \
	"dtb: RSS spread over queues 4..8: queue 6 does not exist \(6 RX queues" spread 0 4 5
okc "context over queues 2..3" ctx_add 0 2 2
ctx=$(field ctx)
check "ethtool -x context $ctx: queues 2 3" test "$(rss_queues ns2 dtb context "$ctx")" = "2 3"

echo "# flow rules"
okc "tcp4 rule dport 5201 -> queue 3" flow 0 4 - 10.99.0.2 0 5201 3 0
r4=$(field rule)
okc "tcp6 rule dport 5202 -> context $ctx" flow 0 6 - fd99::2 0 5202 0 "$ctx"
r6=$(field rule)
okc "tcp4 5-tuple rule -> queue 1" flow 0 4 10.99.0.1 10.99.0.2 40000 5203 1 0
r5=$(field rule)
rules=$(et -n dtb)
echo "$rules"
check "three rules at distinct locations" test "$(grep -c '^Filter:' <<< "$rules")" = 3 -a \
	"$r4" != "$r6" -a "$r6" != "$r5"
rule4=$(et -n dtb rule "$r4")
check "v4 rule: TCP over IPv4, dst 10.99.0.2, dport 5201, queue 3" \
	grep -q "TCP over IPv4" <<< "$rule4"
check "... fields" bash -c 'grep -q "Dest IP addr: 10.99.0.2 mask: 0.0.0.0" <<< "$1" &&
	grep -q "Dest port: 5201 mask: 0x0" <<< "$1" && grep -q "Src port: 0 mask: 0xffff" <<< "$1" &&
	grep -q "Action: Direct to queue 3" <<< "$1"' _ "$rule4"
rule6=$(et -n dtb rule "$r6")
check "v6 rule: TCP over IPv6, dst fd99::2, dport 5202, context $ctx" \
	bash -c 'grep -q "TCP over IPv6" <<< "$1" && grep -q "Dest IP addr: fd99::2 mask: ::" <<< "$1" &&
	grep -q "Dest port: 5202" <<< "$1" && grep -q "Action: Direct to RSS Context $2" <<< "$1"' _ "$rule6" "$ctx"
rule5=$(et -n dtb rule "$r5")
check "5-tuple rule: src 10.99.0.1:40000" bash -c 'grep -q "Src IP addr: 10.99.0.1 mask: 0.0.0.0" <<< "$1" &&
	grep -q "Src port: 40000 mask: 0x0" <<< "$1" && grep -q "Action: Direct to queue 1" <<< "$1"' _ "$rule5"
okc "devmem_nic_flow_find: the tcp4 rule" flow_find 0 4 - 10.99.0.2 0 5201
check "... at its location $r4" test "$(field rule)" = "$r4"
okc "devmem_nic_flow_find: the tcp6 rule (to a context)" flow_find 0 6 - fd99::2 0 5202
check "... at its location $r6" test "$(field rule)" = "$r6"
okc "devmem_nic_flow_find: the 5-tuple rule" flow_find 0 4 10.99.0.1 10.99.0.2 40000 5203
check "... at its location $r5" test "$(field rule)" = "$r5"
errc "devmem_nic_flow_find: another port matches none" 2 "dtb: no flow rule matches that flow" \
	flow_find 0 4 - 10.99.0.2 0 5204
errc "devmem_nic_flow_find: fewer fields than the 5-tuple rule match none" 2 \
	"dtb: no flow rule matches that flow" flow_find 0 4 - 10.99.0.2 0 5203
errc "rule to queue 9 refused" 22 "dtb: flow rule to queue 9: queue 9 does not exist \(6 RX queues" \
	flow 0 4 - - 0 1 9 0
errc "fewer queues than the RSS table uses: the kernel's reason" 22 \
	"dtb: set 2 queues \(ethtool -L dtb combined 2\): Invalid argument: requested channel counts are too low for existing" \
	queues 0 2
okc "delete the 5-tuple rule" flow_del 0 "$r5"
no_rule() { ! et -n dtb rule "$1" > /dev/null 2>&1; }
check "ethtool -n: rule $r5 gone" no_rule "$r5"
errc "delete it again: no such rule" 2 "dtb: no flow rule at location $r5" flow_del 0 "$r5"
errc "context used by a rule is not deleted" "16|22" "context $ctx" ctx_del 0 "$ctx"

echo "# bindings"
okc "udmabuf" mem 4194304
okc "bind-rx queue 3" bind_rx 0 0 3
id=$(field id)
check "dmabuf id non-zero" test "${id:-0}" -gt 0
nt qlist 0
check "devmem_nic_queues: rx3 has dmabuf $id" grep -q " rx3:napi=y:dmabuf=$id:" <<< "$reply"
check "... and no other queue" test "$(grep -o 'dmabuf=[1-9][0-9]*' <<< "$reply" | wc -l)" = 1
check "netdev netlink: rx 3 dmabuf $id" grep -qx "rx 3 dmabuf $id" <<< "$(genl dmabufs "$ifindex")"
errc "same queue again refused" "[0-9]+" "dtb queue 3 is already bound to dmabuf $id: unbind it first" \
	bind_rx 1 0 3
errc "queue 9 refused" 22 "dtb: queue 9 does not exist \(6 RX queues" bind_rx 1 0 9
errc "a queue listed twice refused" 22 "dtb: queue 2 is listed twice" bind_rx 1 0 2,2
errc "header split off while bound refused" "[0-9]+" "dtb: cannot turn header split off while .* unbind first" \
	split 0 off
if kernel_has netdev_nl_bind_tx_doit; then
	okc "bind-tx" bind_tx 3 0
	check "bind-tx id non-zero and not $id" test "$(field id)" -gt 0 -a "$(field id)" != "$id"
	okc "unbind tx" unbind 3
else
	errc "bind-tx refused: this kernel has no devmem TX" 95 \
		"dtb: this kernel has no devmem TX \(netdev bind-tx: Linux 6.15" bind_tx 3 0
fi

# A binding outlives the NIC handle it was made with (devmem.h).
okc "second handle" open 2 dtb
okc "bind-rx queue 2 through it" bind_rx 2 2 2
id2=$(field id)
okc "close that handle without restoring" close 2
check "queue 2 still bound after the handle closed" \
	grep -qx "rx 2 dmabuf $id2" <<< "$(genl dmabufs "$ifindex")"
okc "unbind queue 2" unbind 2
check "queue 2 unbound" grep -qx "rx 2 dmabuf 0" <<< "$(genl dmabufs "$ifindex")"

okc "unbind queue 3" unbind 0
check "netdev netlink: no queue bound" test "$(genl dmabufs "$ifindex" | grep -vc 'dmabuf 0$')" = 0
nt qlist 0
check "devmem_nic_queues: no queue bound, 6 rx + 6 tx" \
	bash -c '[ "$(grep -o "dmabuf=[1-9]" <<< "$1" | wc -l)" = 0 ] && [[ "$1" == "ok 12 "* ]]' _ "$reply"

echo "# rx-page-size"
errc "12 KiB buffers: refused by the library" 22 \
	"dtb: rx-page-size 12288: want a power of two from the page size \(4096\) up" bind_rx 1 0 3 12288
if kernel_has netdev_queue_config; then
	okc "a one-page udmabuf" mem 4096
	errc "16 KiB buffers on it: its chunk is not aligned" 22 \
		"dtb: the dma-buf's chunks are not aligned to the rx-page-size 16384: use huge pages" \
		bind_rx 1 0 3 16384
	okc "a dma-heap buffer (aligned chunks)" heap 4194304
	okc "bind-rx queue 3 with 16 KiB buffers" bind_rx 1 0 3 16384
	check "devmem_binding_page_size: 16384" test "$(field page)" = 16384
	errc "128 KiB buffers: devtcp refuses, the kernel's reason given" 34 \
		"rx-page-size 131072: devtcp takes a power of two from 4096 to 65536" bind_rx 2 0 2 131072
	okc "unbind" unbind 1
	okc "bind-rx with the page size: the default, no attribute" bind_rx 1 0 3 4096
	check "devmem_binding_page_size: 4096" test "$(field page)" = 4096
	okc "unbind" unbind 1
else
	okc "a dma-heap buffer" heap 4194304
	errc "16 KiB buffers: this kernel has none (7.3)" "[0-9]+" \
		"dtb: this kernel has no rx-page-size \(Linux 7.3 and later\)" bind_rx 1 0 3 16384
fi

echo "# restore"
okc "restore" restore 0
after=$(snapshot)
check "ethtool -g -l -x -n -k as before" diff <(echo "$before") <(echo "$after")
okc "state after restore" state 0
check "state: $q0 queues, header split off, ntuple off" \
	grep -q "^ok queues $q0 .*split 0 .*ntuple 0" <<< "$reply"
okc "restore again: nothing to do" restore 0

echo "# refusals on the restored device"
errc "bind-rx with header split off" "[0-9]+" \
	"dtb queue 1: header split is off: call devmem_nic_set_header_split\(nic, true\) \(ethtool -G dtb tcp-data-split on\)" \
	bind_rx 1 0 1
errc "rule with ntuple off" 95 "dtb: ntuple filters are off: enable with devmem_nic_set_ntuple" \
	flow 0 4 - 10.99.0.2 0 5201 0 0
errc "qstats of queue 9" 22 "dtb: queue 9 does not exist" qstats 0 9
okc "close with restore" close 0 restore
check "nothing changed by close" diff <(echo "$before") <(snapshot)

echo "# restore while a queue is bound, then again after unbinding"
okc "open" open 1 dtb
okc "header split on" split 1 on
okc "6 queues" queues 1 6
okc "bind-rx queue 3" bind_rx 0 1 3
# The core refuses (7.x, EINVAL and why), else the driver (6.12, EBUSY).
errc "fewer queues than the bound one refused" "22|16" \
	"dtb: set 3 queues .*(too low for existing memory provider setting|Device or resource busy)" \
	queues 1 3
errc "restore while bound: header split stays, says why" "[0-9]+" \
	"dtb: restore: header split stays on while a dma-buf .* unbind first, then restore" restore 1
check "... the rest was restored: $q0 queues" \
	test "$(et -l dtb | awk '/^Combined:/ { v = $2 } END { print v }')" = "$q0"
check "... header split still on" grep -qE "TCP data split:[[:space:]]+on" <<< "$(et -g dtb)"
okc "unbind" unbind 0
okc "restore again" restore 1
check "ethtool -g -l -x -n -k as before" diff <(echo "$before") <(snapshot)
okc "close" close 1

echo "# RSS through SIOCETHTOOL (kernels without ethtool netlink RSS_SET)"
okc "open" open 3 dtb
okc "switch to the ioctl" rss_ioctl 3
okc "spread over queues 0..3" spread 3 0 4
check "ethtool -x: queues 0..3" test "$(rss_queues ns2 dtb)" = "0 1 2 3"
okc "context over queues 4..7" ctx_add 3 4 4
c=$(field ctx)
check "ethtool -x context $c: queues 4..7" test "$(rss_queues ns2 dtb context "$c")" = "4 5 6 7"
okc "delete context $c" ctx_del 3 "$c"
no_ctx() { ! et -x dtb context "$1" > /dev/null 2>&1; }
check "context $c gone" no_ctx "$c"
okc "another context over queues 6..7" ctx_add 3 6 2
c=$(field ctx)
okc "restore" restore 3
check "ethtool -g -l -x -n -k as before" diff <(echo "$before") <(snapshot)
check "context $c gone" no_ctx "$c"
okc "close" close 3

echo "# a context the library did not create comes back on restore"
c=$(et -X dtb context new start 1 equal 2 | awk '/New RSS context is/ { print $NF }')
check "ethtool made context ${c:-?}" test -n "$c"
okc "open" open 3 dtb
okc "delete context $c" ctx_del 3 "$c"
check "context $c gone" no_ctx "$c"
errc "delete it again: does not exist" 2 "dtb: RSS context $c does not exist" ctx_del 3 "$c"
okc "restore" restore 3
check "context $c back over queues 1..2" test "$(rss_queues ns2 dtb context "$c")" = "1 2"
okc "close" close 3
et -X dtb context "$c" delete
check "ethtool -g -l -x -n -k as before" diff <(echo "$before") <(snapshot)

echo "# queue counters"
devmem_steer ns2 dtb 3 5301 || fail "devmem_steer"
okc "open" open 1 dtb
nt qstats 1 3; q3a=$(field rx_bytes)
nt qstats 1 -1; deva=$(field rx_bytes)
plain_stream 5301 4000000 7
check "plain stream to queue 3" test $? = 0
nt qstats 1 3; q3b=$(field rx_bytes)
check "queue 3 rx_bytes grew by the stream ($q3a -> $q3b)" test $((q3b - q3a)) -ge 4000000
nt qstats 1 -1; devb=$(field rx_bytes)
check "device rx_bytes grew ($deva -> $devb)" test $((devb - deva)) -ge 4000000
okc "close" close 1

# End of input: nic_test closes what is left and exits.
nt_in=${NT[1]}
exec {nt_in}>&-
wait "$NT_PID"
check "nic_test exits cleanly" test $? = 0
NT_PID=
# devmem_kernel_features(3), through `devmem nic show`, agrees with the
# kernel's own symbols: bind-rx always (6.12 on), bind-tx and zcrx from 6.15.
show=$(ip netns exec ns2 /devtcp/userspace/tools/devmem nic show dtb)
offers=$(sed -n 's/^kernel offers:\(.*\); kernel lacks:.*/\1/p' <<< "$show")
echo "kernel offers:$offers"
has() { [[ " $offers " == *" $1 "* ]]; }
check "devmem nic show: the kernel offers bind-rx" has bind-rx
for f in "bind-tx netdev_nl_bind_tx_doit" "io_uring-zcrx io_zcrx_recv_skb"; do
	set -- $f
	if kernel_has "$2"; then
		check "devmem nic show: the kernel offers $1 (it has $2)" has "$1"
	else
		check "devmem nic show: the kernel lacks $1 (it has no $2)" bash -c "! [[ ' $offers ' == *' $1 '* ]]"
	fi
done
finish
