#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdpmd on a devtcp pair with real clients (selftests/rdpm/rdpm_client, the
# libdevmem rdpm API): the reservation it makes and undoes, two clients with
# their own dma-bufs receiving only their own validated streams, cleanup
# when a client is SIGKILLed, ownership, an unauthorised uid, privileged
# ports, 1000 steer/unsteer cycles, quotas, malformed messages, drain, link
# down, rdpmctl status.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rdpm_lib.sh"

bytes=${RDPM_TEST_BYTES:-20000000}
rdpm_setup
before=$(snapshot)
check "rdpmd starts" start_rdpmd
check "... and says what the kernel offers (bind-rx at least)" \
	grep -q "<6>kernel offers:.* bind-rx.*; lacks:" $RDPM_LOG
check "... header split is on" grep -q "TCP data split:.*on" <<< "$(b ethtool -g dtb)"
check "... ntuple is on" grep -q "ntuple-filters: on" <<< "$(b ethtool -k dtb)"
check "... the main RSS table spreads over queues 0-3" test "$(rss_queues ns2 dtb)" = "0 1 2 3"
ctx=$(sed -n 's/.*RSS context \([0-9]*\).*/\1/p' $RDPM_LOG | head -1)
check "... an RSS context ($ctx) spans reserved queues 4-7" test "$(rss_queues ns2 dtb context "$ctx")" = "4 5 6 7"
check "... and logs with syslog priority prefixes" grep -q "^<6>dtb: queues 4-7 reserved" $RDPM_LOG

# Two clients, root and uid 1000, separate dma-bufs on one NIC. rmem_max
# as 6.12 has it (7.x: 4 MiB), below what rdpmd gives the clients' sockets.
rmem_was=$(cat /proc/sys/net/core/rmem_max)
echo 212992 > /proc/sys/net/core/rmem_max
b $CLIENT recv dtb 5001 $bytes 21 > /tmp/c1.out 2> /tmp/c1.err &
p1=$!
as_user 1000 $CLIENT recv dtb 5002 $bytes 22 > /tmp/c2.out 2> /tmp/c2.err &
p2=$!
wait_for /tmp/c1.err listening && wait_for /tmp/c2.err listening
cat /tmp/c1.err /tmp/c2.err
check "two clients got different queues" test \
	"$(sed -n 's/.*queue \([0-9]*\),.*/\1/p' /tmp/c1.err)" != \
	"$(sed -n 's/.*queue \([0-9]*\),.*/\1/p' /tmp/c2.err)"
check "... two rules steer their ports" test "$(rules)" = 2
check "... four queues are bound" test "$(bound_queues)" = 4
a /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n $bytes -s 21 > /dev/null &
s1=$!
a /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5002 -n $bytes -s 22 > /dev/null &
s2=$!
wait $s1 $s2
wait $p1; r1=$?
wait $p2; r2=$?
cat /tmp/c1.out /tmp/c1.err /tmp/c2.out /tmp/c2.err
check "client 1 (root) received its stream into its own dma-buf, validated" test $r1 = 0
check "client 2 (uid 1000) received its stream into its own dma-buf, validated" test $r2 = 0
check "... neither saw the other's data" grep -q "0 mismatched, 0 in another" /tmp/c2.out
# rdpmd limits the uid 1000 client's window to its 16 MiB buffer's share,
# setting a receive buffer past rmem_max that the client could not set.
rmem=$(b cat /proc/sys/net/core/rmem_max)
echo "$rmem_was" > /proc/sys/net/core/rmem_max
rcv=$(sed -n 's/^window limited to [0-9]* bytes, receive buffer \([0-9]*\) bytes$/\1/p' /tmp/c2.err)
check "rdpmd set the uid 1000 client's receive buffer past rmem_max (${rcv:-none} > 2 x $rmem)" \
	test "${rcv:-0}" -gt $((2 * rmem))
check "... and refused a share beyond the buffer, and a pipe, saying why" \
	bash -c "grep -q 'more than the 16777216-byte dma-buf' /tmp/c2.err &&
		grep -q 'not a TCP socket' /tmp/c2.err"
check "both clients gone: no rule left" within_1s no_rules
check "... no binding left" within_1s no_bindings

# An IPv6 flow: a tcp6 rule to fd99::2, the stream from fd99::1 received the same way.
timeout 600 "${U1000[@]}" $CLIENT recv6 dtb 5003 $bytes 23 > /tmp/c3.out 2> /tmp/c3.err &
p3=$!
wait_for /tmp/c3.err listening
cat /tmp/c3.err
b ethtool -n dtb
check "an IPv6 flow is steered by a tcp6 rule to fd99::2 port 5003" \
	bash -c "ip netns exec ns2 ethtool -n dtb | tr -d '\t' | grep -A9 '^Rule Type: TCP over IPv6' |
		grep -q '^Dest IP addr: fd99::2 ' && ip netns exec ns2 ethtool -n dtb | grep -q 'Dest port: 5003'"
timeout 600 ip netns exec ns1 /devtcp/selftests/net/tcp_stream send -6 -a fd99::2 -p 5003 -n $bytes -s 23 > /dev/null
wait $p3; r3=$?
cat /tmp/c3.out
check "the IPv6 stream arrived in the client's dma-buf, validated" test $r3 = 0
check "... with no payload on the linear path" grep -q "(0 linear), 0 mismatched" /tmp/c3.out
check "... and its rule and binding are gone with the client" \
	within_1s nothing_bound

# A client holding a buffer and a flow; ownership checks from another.
"${U1000[@]}" $CLIENT hold dtb 5100 > /tmp/hold.out 2>&1 &
ph=$!
wait_for /tmp/hold.out ready
cat /tmp/hold.out
read -r _ _ handle _ flow _ <<< "$(grep ready /tmp/hold.out)"
json=$(as_user 1000 $RDPMCTL -s $RDPM_SOCKET status --json)
echo "$json"
check "rdpmctl status --json lists the binding (4 KiB buffers), its flow and the client" python3 -c "
import json, sys
d = json.loads(sys.argv[1])
n = d['nics'][0]
assert n['name'] == 'dtb' and n['up'] and n['rss_ctx'] > 0, n
assert [q['queue'] for q in n['reserved']] == [4, 5, 6, 7], n
b = [b for b in n['bindings'] if b['handle'] == int(sys.argv[2])][0]
assert b['uid'] == 1000 and len(b['queues']) == 2 and b['page_size'] == 4096, b
assert [f['dport'] for f in b['flows']] == [5100], b
assert any(c['uid'] == 1000 for c in d['clients']), d
" "$json" "$handle"
b $RDPMCTL -s $RDPM_SOCKET status
out=$(as_user 1000 $CLIENT steal dtb 5100 "$handle" "$flow" 2>&1)
check "another client cannot take, steer to, unsteer or unregister what is not its own" test $? = 0
echo "$out"
check "the holder's rule is still there" test "$(rules)" = 1
kill -KILL $ph
wait $ph 2> /dev/null
check "SIGKILLed client: its rule is gone within 1 s" within_1s no_rules
check "... and its binding" within_1s no_bindings

out=$(as_user 1001 $CLIENT register dtb 2>&1)
check "an unauthorised uid (1001) is refused" test $? = 1
echo "$out"
check "... saying why" grep -q "uid 1001 may use no NIC of rdpmd" <<< "$out"
# The kernel lets uid 1000 listen on port 80 here: rdpmd's low_port_users decides.
lowstart=$(b sysctl -n net.ipv4.ip_unprivileged_port_start)
b sysctl -qw net.ipv4.ip_unprivileged_port_start=0
out=$(as_user 1000 $CLIENT lowport dtb 80 2>&1)
check "uid 1000 may not steer port 80" test $? = 1
echo "$out"
check "... saying why" grep -q "may not steer port 80" <<< "$out"
b sysctl -qw net.ipv4.ip_unprivileged_port_start="$lowstart"
out=$(b $CLIENT lowport dtb 80 2>&1)
check "root may" test $? = 0
echo "$out"

out=$(as_user 1000 $CLIENT cycles dtb 1000 2>&1)
check "1000 steer/unsteer cycles" test $? = 0
echo "$out"
check "... leave no rule" within_1s no_rules
check "... and no binding" within_1s no_bindings

out=$(as_user 1000 $CLIENT quota dtb 2>&1)
check "quotas: max_rules, max_bytes and a duplicate dma-buf refused clearly" test $? = 0
echo "$out"
check "... max_rules named" grep -q "quota: 16 flow rules on dtb" <<< "$out"
check "... no rule left" within_1s no_rules

out=$(as_user 1000 $CLIENT malformed 2>&1)
check "malformed, truncated, oversized, out-of-order messages get error replies" test $? = 0
echo "$out"
check "... rdpmd still runs" kill -0 $RDPMD_PID

# Drain and link down: the holder is told, its state dropped.
"${U1000[@]}" $CLIENT hold dtb 5200 > /tmp/hold.out 2>&1 &
ph=$!
wait_for /tmp/hold.out ready
out=$(as_user 1000 $RDPMCTL -s $RDPM_SOCKET drain dtb 2>&1)
check "drain needs an admin" test $? = 1
echo "$out"
check "rdpmctl drain dtb (root)" b $RDPMCTL -s $RDPM_SOCKET drain dtb
check "... the client gets a DRAINED event" wait_for /tmp/hold.out "event 3 .* dtb"
check "... its rule and binding are gone" within_1s nothing_bound
kill $ph; wait $ph 2> /dev/null
"${U1000[@]}" $CLIENT hold dtb 5300 > /tmp/hold.out 2>&1 &
ph=$!
wait_for /tmp/hold.out ready
b ip link set dtb down
check "link down: the client gets a LINK_DOWN event" wait_for /tmp/hold.out "event 1 .* dtb"
check "... its rule and binding are gone" within_1s nothing_bound
out=$(as_user 1000 $CLIENT register dtb 2>&1)
check "... registering on the down NIC is refused" grep -q "dtb is down" <<< "$out"
b ip link set dtb up
check "link up: registering works again" as_user 1000 $CLIENT register dtb
kill $ph; wait $ph 2> /dev/null

check "rdpmctl reload" b $RDPMCTL -s $RDPM_SOCKET reload
check "rdpmd exits cleanly on SIGTERM" stop_rdpmd
after=$(snapshot)
check "... restoring rings, channels, features, RSS and rules exactly" test "$before" = "$after"
[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after")
check "... and removing its state file" test ! -e /tmp/rdpm/state/dtb.state
echo "--- rdpmd log"
cat $RDPM_LOG
rdpm_cleanup
finish
