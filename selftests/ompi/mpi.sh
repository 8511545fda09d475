#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# btl/devtcp under the real mpirun in the VM: ranks in two network
# namespaces joined by a devtcp pair, each namespace a "node" (mpirun in
# ns1, its daemon in ns2 started by selftests/ompi/netns-rsh). The MPI
# correctness program (every size from 0 B up, MPI_ANY_SOURCE, reversed
# tags, collectives, bytes compared) passes over btl devtcp,self and, as the
# control, over btl tcp,self; the bytes crossed the pair (its counters).
# Then with devmem: directly (root, queues reserved by `devmem nic setup`)
# and through rdpmd (ranks as uid 1000): the payload landed in the
# dma-buf (the devmem queue's counters, each rank's own count), and nothing
# stays bound or steered after the job.
. "$(dirname "$0")/../lib.sh"

VMBUILD=/devtcp/build/ompi-vm
[ -f $VMBUILD/mca_btl_devtcp.so ] || fail "$VMBUILD/mca_btl_devtcp.so is missing (make builds it in the trixie root)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path=$VMBUILD:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi40
# 16 MiB here (ompi/tests/mpirun_test.sh goes to 64 MiB on the host); more
# with DEVTCP_MPI_MAX.
MAX=${DEVTCP_MPI_MAX:-16777216}

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"

# mpi_run NP MAX BTL [MCA ARGS...]: NP ranks, half in each namespace; the
# output goes to /tmp/mpi.out.
mpi_run() {
	local np=$1 max=$2 btl=$3 per=$(($1 / 2))
	shift 3
	ip netns exec ns1 unshare --uts sh -c 'hostname 10.99.0.1 && exec "$@"' sh \
		timeout 900 mpirun --host "10.99.0.1:$per,10.99.0.2:$per" -np "$np" \
		--prtemca plm_ssh_agent /devtcp/selftests/ompi/netns-rsh \
		-x OMPI_MCA_mca_base_component_path --mca pml ob1 --mca btl "$btl" "$@" \
		$VMBUILD/mpi_check "$max" > /tmp/mpi.out 2>&1
}
rx_bytes() { ethtool -S "$1" 2> /dev/null | awk '/^ *rx[0-9]*_bytes:/ { s += $2 } END { print s + 0 }'; }
both_rx() { echo $(($(ip netns exec ns1 bash -c "$(declare -f rx_bytes); rx_bytes dta") + \
		     $(ip netns exec ns2 bash -c "$(declare -f rx_bytes); rx_bytes dtb"))); }
passed() { grep -q "^ok: .* 0 failures in all, $1 ranks, up to $2 bytes" /tmp/mpi.out; }
show() { grep -av "bad prefix\|pmix_mca_\|^or$\|^	\|^ *$" /tmp/mpi.out | tail -15; }

for btl in devtcp,self tcp,self; do
	b0=$(both_rx)
	SECONDS=0
	mpi_run 2 "$MAX" $btl --mca btl_devtcp_devmem off
	rc=$?
	moved=$(($(both_rx) - b0))
	check "2 ranks, one per namespace, btl $btl: every check passes (exit $rc, $SECONDS s)" passed 2 "$MAX"
	passed 2 "$MAX" || show
	# Each rank receives the ring at every size at least once.
	check "... the payload crossed the pair ($moved bytes received by dta and dtb)" \
		test "$moved" -ge $((2 * MAX))
done

SECONDS=0
mpi_run 4 1048576 devtcp,self --mca btl_devtcp_data_links 2 --mca btl_devtcp_devmem off
rc=$?
check "4 ranks, two per namespace, btl devtcp,self, 2 data links (exit $rc, $SECONDS s)" passed 4 1048576
passed 4 1048576 || show

# queue_rx NS DEV Q: bytes queue Q of DEV received.
queue_rx() { ip netns exec "$1" ethtool -S "$2" | awk -v n="rx$3_bytes:" '$1 == n { print $2 }'; }
# landed RANKHOST: the bytes a rank says landed in its dma-buf (read in
# place plus copied out), from its verbose summary at finalize.
landed() {
	sed -n "s/^\[$1:[0-9]*\] btl:devtcp: devmem: \([0-9]*\) payload bytes read in place in the dma-buf, \([0-9]*\) copied.*/\1 \2/p" \
		/tmp/mpi.out | awk '{ s += $1 + $2 } END { print s + 0 }'
}
nothing_left() {
	local ifindex
	ifindex=$(ip netns exec "$1" cat /sys/class/net/"$2"/ifindex)
	ip netns exec "$1" ethtool -n "$2" | grep -qi 'Filter:' && return 1
	[ "$(ip netns exec "$1" python3 /devtcp/selftests/net/genl.py dmabufs "$ifindex" |
		awk '$4 != 0' | wc -l)" = 0 ]
}
# devmem_checks WHAT: after a devmem run, the payload in both dma-bufs.
devmem_checks() {
	local ns dev host q1
	for ns in ns1 ns2; do
		dev=dta host=10.99.0.1
		[ $ns = ns2 ] && dev=dtb host=10.99.0.2
		q1=$(queue_rx $ns $dev 7)
		check "$1: $dev's devmem queue 7 received the payload ($((q1 - ${q0[$ns]})) bytes)" \
			test $((q1 - ${q0[$ns]})) -ge "$DMAX"
		check "... the rank on $host read $(landed $host) payload bytes from its dma-buf" \
			test "$(landed $host)" -ge "$DMAX"
		check "... nothing is bound or steered on $dev after the job" nothing_left $ns $dev
	done
}
declare -A q0
DMAX=4194304
devmem=/devtcp/userspace/tools/devmem
ip netns exec ns1 $devmem nic setup dta --reserve 2 > /dev/null || fail "nic setup dta"
ip netns exec ns2 $devmem nic setup dtb --reserve 2 > /dev/null || fail "nic setup dtb"
q0[ns1]=$(queue_rx ns1 dta 7) q0[ns2]=$(queue_rx ns2 dtb 7)
SECONDS=0
mpi_run 2 $DMAX devtcp,self --mca btl_devtcp_devmem auto --mca btl_devtcp_verbose 1
rc=$?
check "devmem, direct (root, queues reserved): every check passes (exit $rc, $SECONDS s)" passed 2 $DMAX
passed 2 $DMAX || show
grep -a "devmem:" /tmp/mpi.out
check "... each rank bound its dma-buf to queue 7 directly" \
	test "$(grep -c "dma-buf bound to queue 7 of dt[ab] directly" /tmp/mpi.out)" = 2
devmem_checks "devmem, direct"
ip netns exec ns1 $devmem nic teardown dta > /dev/null
ip netns exec ns2 $devmem nic teardown dtb > /dev/null
finish
