# SPDX-License-Identifier: GPL-2.0
# Shared by the RDPM VM tests (sourced after lib.sh): a devtcp pair with
# rdpmd managing dtb in ns2, and helpers to look at the NIC independently
# of rdpmd (ethtool, netdev netlink through genl.py).
RDPMD=/devtcp/rdpm/rdpmd
RDPMCTL=/devtcp/rdpm/rdpmctl
CLIENT=/devtcp/selftests/rdpm/rdpm_client
export RDPM_SOCKET=/tmp/rdpm/rdpm.sock
RDPM_CONF=/tmp/rdpm.conf
RDPM_LOG=/tmp/rdpmd.log

b() { ip netns exec ns2 "$@"; }
a() { ip netns exec ns1 "$@"; }
# As uid 1000 (allowed by the test configuration) or another uid.
as_user() { local uid=$1; shift; ip netns exec ns2 setpriv --reuid "$uid" --regid "$uid" --clear-groups "$@"; }
# The same as a command prefix, for processes started with & whose pid is
# signalled: a backgrounded shell function would be a subshell's pid.
U1000=(ip netns exec ns2 setpriv --reuid 1000 --regid 1000 --clear-groups)
snapshot() { for o in -g -l -k -x -n; do b ethtool $o dtb 2>&1; done | grep -v "^Features for\|fixed\]"; }
rules() { b ethtool -n dtb | sed -n 's/^Total \([0-9]*\) rules.*/\1/p'; }
ifindex() { b cat /sys/class/net/dtb/ifindex; }
# Queues of dtb with a dma-buf bound (netdev netlink).
bound_queues() { b python3 /devtcp/selftests/net/genl.py dmabufs "$(ifindex)" | awk '$4 != 0' | wc -l; }

write_conf() {
	cat > $RDPM_CONF <<CONF
# rdpmd test configuration
[global]
socket = $RDPM_SOCKET
state_dir = /tmp/rdpm/state

[nic dtb]
reserve = 4
queues_per_binding = 2
users = root, 1000
max_rules = 16
max_bytes = 32M
low_port_users = 0
CONF
}

# Starts rdpmd in ns2; waits for it to listen. Only this rdpmd's lines
# count: after a SIGKILL the log holds the last one's "ready" and its
# socket file is still there.
RDPMD_PID=
start_rdpmd() {
	local from=$(($(wc -l < $RDPM_LOG) + 1))
	ip netns exec ns2 $RDPMD -c $RDPM_CONF 2>> $RDPM_LOG &
	RDPMD_PID=$!
	for _ in $(seq 100); do
		tail -n +$from $RDPM_LOG | grep -q "<6>ready" && [ -S $RDPM_SOCKET ] && return 0
		kill -0 $RDPMD_PID 2> /dev/null || break
		sleep 0.1
	done
	cat $RDPM_LOG
	return 1
}

stop_rdpmd() {
	kill -TERM $RDPMD_PID
	wait $RDPMD_PID
}

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (10 s).
wait_for() {
	for _ in $(seq 100); do grep -q "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done
	return 1
}

# no_rules, no_bindings, nothing_bound: dtb's state now (for within_1s).
no_rules() { [ "$(rules)" = 0 ]; }
no_bindings() { [ "$(bound_queues)" = 0 ]; }
nothing_bound() { no_rules && no_bindings; }

rdpm_setup() {
	devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
	mkdir -p /tmp/rdpm
	write_conf
	: > $RDPM_LOG
	# The unprivileged client makes its own udmabuf.
	UDMABUF_MODE=$(stat -c %a /dev/udmabuf)
	chmod 666 /dev/udmabuf
}

rdpm_cleanup() {
	chmod "$UDMABUF_MODE" /dev/udmabuf
	teardown ns1 ns2
}
