#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One tenant cannot steer another's flow into its own dma-buf. Tenant A
# (uid 1000) receives a stream on port 5001 through rdpmd. Tenant B (uid
# 1002, also allowed on the NIC) tries to take that port into a buffer of
# its own: the port from one peer and on any address as a bare tuple, with
# a socket another user made, naming A's port with a socket of its own.
# Each is refused, no rule appears, B can still steer its own port, and A's
# data lands whole in A's buffer. An administrator's bare tuple on a port
# then makes the same port refused to a tenant's socket, plain or
# v4-mapped IPv6, without naming the administrator. A rule's address must
# be the NIC's (not every address, not the peer's, not one bound with
# IP_FREEBIND). A rule lives no longer than its socket: once A closes its
# listener (still connected to rdpmd), rdpmd removes A's rule within its
# 1 s re-check and B may take the port.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rdpm_lib.sh"

bytes=${RDPM_TEST_BYTES:-20000000}
U1002=(ip netns exec ns2 setpriv --reuid 1002 --regid 1002 --clear-groups)
# No rule within rdpmd's 1 s re-check of sockets, plus 1 s margin.
no_rules_within_2s() {
	for _ in $(seq 40); do no_rules && return 0; sleep 0.05; done
	no_rules
}
rdpm_setup
sed -i 's/^users = root, 1000$/users = root, 1000, 1002/' $RDPM_CONF
check "rdpmd starts" start_rdpmd

as_user 1000 $CLIENT recv dtb 5001 $bytes 41 > /tmp/a.out 2> /tmp/a.err &
pa=$!
wait_for /tmp/a.err listening
cat /tmp/a.err
check "tenant A's port is steered: one rule" test "$(rules)" = 1
before=$(b ethtool -n dtb)

# B stays connected while the rules are counted: a rule it got would show.
RDPM_UID=1002 ip netns exec ns2 $CLIENT capture dtb 5001 > /tmp/b.out 2>&1 &
pb=$!
wait_for /tmp/b.out "capture done"
out=$(cat /tmp/b.out)
echo "$out"
check "tenant B's every attempt at A's port is refused, its own port is not" \
	grep -q "capture done: 0 failed" <<< "$out"
check "... a bare tuple: only administrators" \
	test "$(grep -c 'ok: the victim.s port .* refused: rdpmd: STEER without a socket' <<< "$out")" = 2
check "... a socket root made" grep -q "ok: a socket another user (root) made refused: .*made by another user" <<< "$out"
check "... A's port named with B's socket" grep -q "ok: .* refused: .*local (destination) port is not the socket's" <<< "$out"
check "... B's wildcard listener's port on every address" \
	grep -q "ok: our wildcard listener's port on every address refused: .*name one of dtb's addresses" <<< "$out"
check "... B's port on the peer's address" \
	grep -q "ok: our port on an address that is not the NIC's refused: .*not one of dtb's" <<< "$out"
check "... a socket with IP_FREEBIND" grep -q "ok: a socket with IP_FREEBIND .* refused: .*IP_FREEBIND" <<< "$out"
check "... no rule appeared: ethtool -n is as before" test "$(b ethtool -n dtb)" = "$before"
b ethtool -n dtb
kill $pb; wait $pb 2> /dev/null

a /devtcp/selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 -n $bytes -s 41 > /dev/null
wait $pa; ra=$?
cat /tmp/a.out
check "tenant A received its whole stream in its own dma-buf, validated" test $ra = 0
check "... none of it elsewhere" grep -q "(0 linear), 0 mismatched, 0 in another" /tmp/a.out
check "... and its rule is gone with it" within_1s no_rules

# An administrator's bare tuple (root: uid 0) on port 5003, any address.
# (ip netns exec directly: $! is then the client, not a subshell)
ip netns exec ns2 $CLIENT own dtb 5003 raw > /tmp/admin.out 2>&1 &
padm=$!
wait_for /tmp/admin.out steered
cat /tmp/admin.out
check "an administrator steers a bare tuple" test "$(rules)" = 1
out=$(as_user 1000 $CLIENT own dtb 5003 2>&1)
check "a tenant's own listener on that port overlaps it: refused (EADDRINUSE)" test $? = 4
echo "$out"
check "... saying so without naming the other user" bash -c \
	"grep -q 'overlaps a flow another user steers on dtb' <<< '$out' && ! grep -q 'uid\|pid' <<< '$out'"
out=$(as_user 1000 $CLIENT own dtb 5003 mapped 2>&1)
check "... so does a v4-mapped IPv6 listener on 10.99.0.2" test $? = 4
echo "$out"
check "... and no rule appeared" test "$(rules)" = 1
kill $padm; wait $padm 2> /dev/null
check "... the administrator's rule goes with its client" within_1s no_rules

# A's listener closed while A stays connected: its rule goes with it.
"${U1000[@]}" $CLIENT own dtb 5005 close > /tmp/a2.out 2>&1 &
pa2=$!
wait_for /tmp/a2.out closed
cat /tmp/a2.out
check "tenant A steers port 5005 and closes its listener" grep -q "steered port 5005" /tmp/a2.out
check "... its rule is gone within the re-check (1 s) + 1 s, A still connected" \
	no_rules_within_2s
check "... rdpmd says why" grep -q "flow [0-9]* removed from dtb: the socket is closed" $RDPM_LOG
"${U1002[@]}" $CLIENT own dtb 5005 > /tmp/b2.out 2>&1 &
pb2=$!
wait_for /tmp/b2.out "steered\|refused"
cat /tmp/b2.out
check "tenant B then listens on port 5005 and steers it" grep -q "steered port 5005" /tmp/b2.out
check "... one rule (ethtool -n): B's, A's being gone" test "$(rules)" = 1
b ethtool -n dtb
kill $pb2 $pa2; wait $pb2 $pa2 2> /dev/null
check "... B's rule goes with its client" within_1s no_rules

check "rdpmd exits cleanly on SIGTERM" stop_rdpmd
echo "--- rdpmd log"
cat $RDPM_LOG
rdpm_cleanup
finish
