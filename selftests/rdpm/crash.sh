#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rdpmd killed with SIGKILL while a client holds a binding and a flow: the
# binding goes with its netlink socket, the rule and RSS context stay; a
# restarted rdpmd removes them (its state file says they are its own),
# serves again, and restores the NIC exactly at clean exit.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rdpm_lib.sh"

rdpm_setup
before=$(snapshot)
check "rdpmd starts" start_rdpmd
"${U1000[@]}" $CLIENT hold dtb 5100 > /tmp/hold.out 2>&1 &
ph=$!
check "a client holds a flow" wait_for /tmp/hold.out ready
check "... one rule" test "$(rules)" = 1
kill -KILL $RDPMD_PID
wait $RDPMD_PID 2> /dev/null
check "rdpmd SIGKILLed: the binding went with its socket" within_1s no_bindings
check "... the rule stays behind (stale)" test "$(rules)" = 1
check "... the state file lists it" grep -q "^rule_del " /tmp/rdpm/state/dtb.state
wait $ph 2> /dev/null
check "a restarted rdpmd starts" start_rdpmd
check "... after removing the stale rule" grep -q "recovery removed 1 stale rule" $RDPM_LOG
check "... no rule left" test "$(rules)" = 0
check "... serves again" as_user 1000 $CLIENT register dtb
check "rdpmd exits cleanly" stop_rdpmd
after=$(snapshot)
check "the NIC is as before the first rdpmd" test "$before" = "$after"
[ "$before" = "$after" ] || diff <(echo "$before") <(echo "$after")
check "... no RSS context left" eval "! ip netns exec ns2 ethtool -x dtb context 1 > /dev/null 2>&1"
echo "--- rdpmd log"
cat $RDPM_LOG
rdpm_cleanup
finish
