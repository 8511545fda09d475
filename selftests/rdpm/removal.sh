#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A managed NIC disappears under rdpmd (the devtcp pair is deleted while a
# client holds a binding and a flow): the client is told, rdpmd keeps
# serving and refuses the NIC clearly; when a device of that name appears
# again rdpmd sets it up, and clients can register on it.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rdpm_lib.sh"

rdpm_setup
check "rdpmd starts" start_rdpmd
"${U1000[@]}" $CLIENT hold dtb 5400 > /tmp/hold.out 2>&1 &
ph=$!
check "a client holds a flow" wait_for /tmp/hold.out ready

ip -n ns2 link del dtb
# Deleting a device takes it down first: the client hears LINK_DOWN (1) then,
# had it anything left, REMOVED (2).
check "device removed: the client is told" wait_for /tmp/hold.out "event [12] .* dtb"
check "... rdpmd dropped the client's binding" wait_for $RDPM_LOG "dtb: link down; 1 binding(s) dropped"
check "... rdpmd logs it" wait_for $RDPM_LOG "dtb: removed"
check "... and still serves" b $RDPMCTL -s $RDPM_SOCKET status
out=$(as_user 1000 $CLIENT register dtb 2>&1)
check "registering on the missing NIC is refused" test $? != 0
echo "$out"
check "... naming it" grep -q "dtb" <<< "$out"
kill $ph; wait $ph 2> /dev/null

# A new device named dtb (ip link add names the peer devtcpN, same netns).
ip -n ns2 link add dtb type devtcp
ip -n ns2 link set dtb up
check "a new dtb appears: rdpmd sets it up" wait_for $RDPM_LOG "dtb: appeared"
check "... header split is on" wait_for <(b ethtool -g dtb) "TCP data split:.*on"
check "... and a client can register on it" as_user 1000 $CLIENT register dtb
check "rdpmd exits cleanly on SIGTERM" stop_rdpmd
echo "--- rdpmd log"
cat $RDPM_LOG
rdpm_cleanup
finish
