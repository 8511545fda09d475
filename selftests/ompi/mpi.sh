#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# btl/devtcp under the real mpirun in the VM: ranks in two network
# namespaces joined by a devtcp pair, each namespace a "node" (mpirun in
# ns1, its daemon in ns2 started by selftests/ompi/netns-rsh). The MPI
# correctness program (every size from 0 B up, MPI_ANY_SOURCE, reversed
# tags, collectives, bytes compared) passes over btl devtcp,self and, as the
# control, over btl tcp,self; the bytes crossed the pair (its counters).
# Then with devmem: directly (root, queues reserved by `devmem nic setup`)
# and through rdpmd (one per namespace; a dma-buf per rank, then the
# default, a share of one dma-buf per namespace): the payload landed in the
# dma-buf (the devmem queue's counters, each rank's own count), all of it
# read in place or put straight into receive buffers (btl_devtcp_devmem_inplace
# 1: fragments capped to what ob1's 16 segments hold; large messages by put,
# over IPv6 sends only; on the direct path with 16 KiB receive buffers
# at MTU 9000 where the kernel has rx-page-size; a stale rule for the data
# port, as a killed rank leaves, removed first; into GPU memory, the
# stand-in libcuda's, every payload gathered by the unpack kernels and none
# read by the CPU, directly and through rdpmd), also with 4 ranks, two
# per namespace, each on a reserved queue of its own (through rdpmd: both
# ranks of a namespace in one shared dma-buf that rdpmd binds once, with
# 16 KiB buffers where the kernel has them), with 4 threads per rank under
# MPI_THREAD_MULTIPLE, over two pairs at once (interfaces chosen by subnet,
# a dma-buf on each NIC, both carrying payload), as a user's job (mpirun
# and ranks as uid 1000, devmem through rdpmd; without rdpmd MPI_Init says
# why), and nothing stays bound or steered after the job.
. "$(dirname "$0")/../lib.sh"

VMBUILD=/devtcp/build/ompi-vm
[ -f $VMBUILD/mca_btl_devtcp.so ] || fail "$VMBUILD/mca_btl_devtcp.so is missing (make builds it in the trixie root)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path=$VMBUILD:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi40
# 16 MiB here (ompi/tests/mpirun_test.sh goes to 64 MiB on the host); more
# with DEVTCP_MPI_MAX.
MAX=${DEVTCP_MPI_MAX:-16777216}
# Waits for ranks to start and jobs to end stretch by DEVTCP_TIME_SCALE
# (lib.sh's scale).

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"

# mpi_run_app NP MAX BTL APP [MCA ARGS...]: NP ranks of APP (words), half
# in each namespace; the output goes to /tmp/mpi.out.
mpi_run_app() {
	local np=$1 max=$2 btl=$3 app=$4 per=$(($1 / 2))
	shift 4
	phase "${app##*/}, $np ranks, btl $btl $*"
	# shellcheck disable=SC2086
	ip netns exec ns1 unshare --uts sh -c 'hostname 10.99.0.1 && exec "$@"' sh \
		timeout 900 mpirun --host "10.99.0.1:$per,10.99.0.2:$per" -np "$np" \
		--prtemca plm_ssh_agent /devtcp/selftests/ompi/netns-rsh \
		-x OMPI_MCA_mca_base_component_path --mca pml ob1 --mca btl "$btl" "$@" \
		$app "$max" > /tmp/mpi.out 2>&1
}
# mpi_run NP MAX BTL [MCA ARGS...]: the same with the correctness program.
mpi_run() { local np=$1 max=$2 btl=$3; shift 3; mpi_run_app $np $max $btl $VMBUILD/mpi_check "$@"; }
rx_bytes() { ethtool -S "$1" 2> /dev/null | awk '/^ *rx[0-9]*_bytes:/ { s += $2 } END { print s + 0 }'; }
both_rx() { echo $(($(ip netns exec ns1 bash -c "$(declare -f rx_bytes); rx_bytes dta") + \
		     $(ip netns exec ns2 bash -c "$(declare -f rx_bytes); rx_bytes dtb"))); }
passed() { grep -q "^ok: .* 0 failures in all, $1 ranks, up to $2 bytes" /tmp/mpi.out; }
# show: the job's end and, before it, the first 30 lines btl/devtcp wrote
# (where a failed MPI_Init says why).
show() {
	grep -av "bad prefix\|pmix_mca_\|^or$\|^	\|^ *$" /tmp/mpi.out |
		awk '{ l[NR] = $0 } END { for (i = 1; i <= NR; i++)
			if (i > NR - 15 || (l[i] ~ /btl:devtcp/ && ++b <= 30)) print l[i] }'
}

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

# devq_rx NS DEV: bytes DEV's queues 6 and 7 received (where `devmem nic
# setup --reserve 2` and rdpmd put devmem bindings).
devq_rx() { ip netns exec "$1" ethtool -S "$2" | awk '$1 == "rx6_bytes:" || $1 == "rx7_bytes:" { s += $2 } END { print s + 0 }'; }
# counts RANKHOST: the payload bytes a rank read in place in its dma-buf,
# those it copied out first (more pieces than ob1 takes) and those its puts
# copied into receive buffers, from its verbose summary at finalize;
# landed: all, copied: the second (the copy no message should need).
counts() {
	sed -n "s/^\[$1:[0-9]*\] btl:devtcp: devmem: \([0-9]*\) payload bytes read in place in the dma-buf, \([0-9]*\) copied out of it ([^)]*), \([0-9]*\) put from it.*/\1 \2 \3/p" \
		/tmp/mpi.out | awk '{ i += $1; c += $2; p += $3 } END { print i + 0, c + 0, p + 0 }'
}
landed() { counts "$1" | awk '{ print $1 + $2 + $3 }'; }
put_bytes() { counts "$1" | awk '{ print $3 }'; }
copied() { counts "$1" | awk '{ print $2 }'; }
# gpu_bytes RANKHOST: the payload bytes a rank gathered from its GPU
# dma-buf (btl_devtcp_devmem_mem cuda).
gpu_bytes() {
	sed -n "s/^\[$1:[0-9]*\] btl:devtcp: devmem: \([0-9]*\) payload bytes gathered in GPU memory.*/\1/p" \
		/tmp/mpi.out | awk '{ s += $1 } END { print s + 0 }'
}
# devmem_checks WHAT [gpu]: after a devmem run, the payload in both
# dma-bufs, read by the CPU in place or put (with gpu: gathered on the GPU,
# none of it read by the CPU).
devmem_checks() {
	local ns dev host q1
	for ns in ns1 ns2; do
		dev=dta host=10.99.0.1
		[ $ns = ns2 ] && dev=dtb host=10.99.0.2
		q1=$(devq_rx $ns $dev)
		check "$1: $dev's devmem queues received the payload ($((q1 - ${q0[$ns]})) bytes)" \
			test $((q1 - ${q0[$ns]})) -ge "$DMAX"
		if [ "${2:-}" = gpu ]; then
			check "... the rank on $host gathered $(gpu_bytes $host) payload bytes on the GPU" \
				test "$(gpu_bytes $host)" -ge "$DMAX"
			check "... and the CPU read none in the dma-buf ($(landed $host))" \
				test "$(landed $host)" = 0 -a "$(grep -c "^\[$host:[0-9]*\] btl:devtcp: devmem: 0 payload bytes read in place" /tmp/mpi.out)" = 1
		else
			check "... the rank on $host read $(landed $host) payload bytes from its dma-buf" \
				test "$(landed $host)" -ge "$DMAX"
			check "... all of them in place: none copied out ($(copied $host))" \
				test "$(copied $host)" = 0
		fi
		check "... nothing is bound or steered on $dev after the job" nothing_left $ns $dev
	done
}
declare -A q0
DMAX=4194304
devmem=/devtcp/userspace/tools/devmem
ip netns exec ns1 $devmem nic setup dta --reserve 2 > /dev/null || fail "nic setup dta"
ip netns exec ns2 $devmem nic setup dtb --reserve 2 > /dev/null || fail "nic setup dtb"
q0[ns1]=$(devq_rx ns1 dta) q0[ns2]=$(devq_rx ns2 dtb)
# The direct path at MTU 9000 with 16 KiB receive buffers (rx-page-size, on
# kernels that have it): fragments of 14 segments read in place.
page=4096 mtu=1500 cap=20272
if kernel_has netdev_queue_config; then
	page=16384 mtu=9000 cap=125272
	ip -n ns1 link set dta mtu $mtu && ip -n ns2 link set dtb mtu $mtu || fail "cannot set MTU $mtu"
fi
# A rule for the data port that a killed rank left behind (here to the
# other reserved queue, where it would shadow the rank's own rule).
ip netns exec ns1 ethtool -N dta flow-type tcp4 dst-ip 10.99.0.1 dst-port 7000 action 6 ||
	fail "cannot add the stale rule on dta"
ip netns exec ns2 ethtool -N dtb flow-type tcp4 dst-ip 10.99.0.2 dst-port 7000 action 6 ||
	fail "cannot add the stale rule on dtb"
SECONDS=0
mpi_run 2 $DMAX devtcp,self --mca btl_devtcp_devmem auto --mca btl_devtcp_verbose 1 \
	--mca btl_devtcp_devmem_inplace 1 --mca btl_devtcp_devmem_page_size $page \
	--mca btl_devtcp_data_port 7000
rc=$?
check "devmem, direct (root, queues reserved, $page-byte buffers): every check passes (exit $rc, $SECONDS s)" \
	passed 2 $DMAX
passed 2 $DMAX || show
grep -a "devmem:" /tmp/mpi.out
check "... each rank bound its dma-buf to queue 7 directly, $page-byte buffers" \
	test "$(grep -c "dma-buf bound to queue 7 of dt[ab] directly, $page-byte buffers" /tmp/mpi.out)" = 2
check "... and capped its fragments so that payloads are read in place (MTU $mtu: $cap bytes)" \
	test "$(grep -c "fragments of at most $cap bytes (MTU $mtu, $page-byte buffers" /tmp/mpi.out)" = 2
check "... each removed the stale rule for its data port 7000 first" \
	test "$(grep -c "steered data port 7000 already, left by a process that no longer holds" /tmp/mpi.out)" = 2
for host in 10.99.0.1 10.99.0.2; do
	check "... large messages came by put, copied from the dma-buf into receive buffers on $host ($(put_bytes $host) bytes)" \
		test "$(put_bytes $host)" -gt 0
done
devmem_checks "devmem, direct"
# The dma-buf in GPU memory (btl_devtcp_devmem_mem cuda), the stand-in
# libcuda's (userspace/libdevmem/tests/fake_cuda.c): its device memory is
# mapped PROT_NONE for the rank, so a payload read other than through the
# unpack kernels and the driver's copies crashes it; its kernels run each
# launch 20 us late, so a token handed back before its batch ran would let
# the NIC overwrite the bytes first (mpi_check compares every byte).
fake=/devtcp/userspace/libdevcoll/tests/fake_cuda.so
q0[ns1]=$(devq_rx ns1 dta) q0[ns2]=$(devq_rx ns2 dtb)
SECONDS=0
mpi_run 2 "$MAX" devtcp,self --mca btl_devtcp_devmem on --mca btl_devtcp_verbose 1 \
	--mca btl_devtcp_devmem_mem cuda -x DEVMEM_LIBCUDA=$fake -x FAKE_CUDA_UDMABUF=1 \
	-x FAKE_CUDA_KERNEL_US=20
rc=$?
check "devmem into GPU memory (stand-in libcuda), direct: every check passes (exit $rc, $SECONDS s)" \
	passed 2 "$MAX"
passed 2 "$MAX" || show
check "... each rank's dma-buf was GPU memory, read by the unpack kernels" \
	test "$(grep -c "the dma-buf is GPU memory (CUDA device 0)" /tmp/mpi.out)" = 2
devmem_checks "devmem into GPU memory" gpu
# The same over IPv6 (fd99::1 and fd99::2): tcp6 rules steer the data ports.
# Sends only (no put): large messages in fragments of the in-place cap,
# each read in place by ob1.
q0[ns1]=$(devq_rx ns1 dta) q0[ns2]=$(devq_rx ns2 dtb)
SECONDS=0
mpi_run 2 $DMAX devtcp,self --mca btl_devtcp_family 6 --mca btl_devtcp_devmem on \
	--mca btl_devtcp_verbose 5 --mca btl_devtcp_devmem_inplace 1 \
	--mca btl_devtcp_devmem_page_size $page --mca btl_devtcp_flags send,inplace
rc=$?
check "devmem over IPv6 (btl_devtcp_family 6), sends only: every check passes (exit $rc, $SECONDS s)" \
	passed 2 $DMAX
passed 2 $DMAX || show
check "... each rank listened on its fd99:: address" \
	test "$(grep -c 'btl:devtcp: dt[ab] fd99::[12]/64: control port' /tmp/mpi.out)" = 2
for host in 10.99.0.1 10.99.0.2; do
	check "... no put: every payload read in place by ob1 on $host ($(put_bytes $host) bytes put)" \
		test "$(put_bytes $host)" = 0
done
devmem_checks "devmem over IPv6"
ip -n ns1 link set dta mtu 1500 && ip -n ns2 link set dtb mtu 1500 || fail "cannot set MTU 1500"
# four_ranks HOW PAGE APP: 4 ranks, two per namespace, each with a reserved
# queue of its own (7 and 6) and the payload in its dma-buf; with PAGE
# (bytes) over 4096 at MTU 9000 and read in place.
four_ranks() {
	local how=$1 page=$2 app=$3 host q inplace=()
	if [ "$page" != 4096 ]; then
		inplace=(--mca btl_devtcp_devmem_inplace 1 --mca btl_devtcp_devmem_page_size "$page")
		ip -n ns1 link set dta mtu 9000 && ip -n ns2 link set dtb mtu 9000 || fail "MTU 9000"
	fi
	SECONDS=0
	mpi_run_app 4 1048576 devtcp,self "$app" --mca btl_devtcp_devmem on --mca btl_devtcp_verbose 1 \
		"${inplace[@]}"
	rc=$?
	ip -n ns1 link set dta mtu 1500 && ip -n ns2 link set dtb mtu 1500 || fail "MTU 1500"
	check "devmem $how, 4 ranks, two per namespace, $page-byte buffers: every check passes (exit $rc, $SECONDS s)" \
		passed 4 1048576
	passed 4 1048576 || show
	for q in 7 6; do
		check "... a rank in each namespace received on queue $q, bound $how, $page-byte buffers" \
			test "$(grep -c "bound to queue $q of dt[ab] $how, $page-byte buffers" /tmp/mpi.out)" = 2
	done
	for host in 10.99.0.1 10.99.0.2; do
		check "... the ranks on $host read $(landed $host) payload bytes from their dma-bufs" \
			test "$(landed $host)" -ge 1048576
		[ "$page" = 4096 ] ||
			check "... all of them in place: none copied out ($(copied $host))" \
				test "$(copied $host)" = 0
	done
}
four_ranks directly 4096 $VMBUILD/mpi_check
# MPI_THREAD_MULTIPLE: 4 threads per rank at once, with devmem directly.
q0[ns1]=$(devq_rx ns1 dta) q0[ns2]=$(devq_rx ns2 dtb)
SECONDS=0
mpi_run_app 2 $DMAX devtcp,self "$VMBUILD/mpi_threads 4 1" --mca btl_devtcp_devmem on \
	--mca btl_devtcp_verbose 5 --mca btl_devtcp_devmem_inplace 1
rc=$?
check "devmem, direct, MPI_THREAD_MULTIPLE (2 ranks x 4 threads): every check passes (exit $rc, $SECONDS s)" \
	passed 2 $DMAX
passed 2 $DMAX || show
check "... each rank's btl/devtcp served MPI_THREAD_MULTIPLE" \
	test "$(grep -c "interface(s); threads: MPI_THREAD_MULTIPLE" /tmp/mpi.out)" = 2
devmem_checks "devmem, direct, MPI_THREAD_MULTIPLE"
# Two interfaces: a second pair, dtc (ns1) and dtd (ns2) on 10.98.0.0/24.
# The interfaces are chosen by subnet, as on hosts whose names differ; each
# rank has a module per pair, each with a dma-buf of its own bound to a
# reserved queue of that NIC, and ob1 spreads the messages over both.
$DEVTCP_PAIR add dtc dtd -n ns1 -N ns2 > /dev/null || fail "cannot create the second pair"
ip -n ns1 addr add 10.98.0.1/24 dev dtc && ip -n ns2 addr add 10.98.0.2/24 dev dtd &&
	ip -n ns1 link set dtc up && ip -n ns2 link set dtd up || fail "cannot set up dtc and dtd"
ip netns exec ns1 $devmem nic setup dtc --reserve 2 > /dev/null || fail "nic setup dtc"
ip netns exec ns2 $devmem nic setup dtd --reserve 2 > /dev/null || fail "nic setup dtd"
declare -A devq0
for nd in ns1:dta ns2:dtb ns1:dtc ns2:dtd; do devq0[$nd]=$(devq_rx ${nd%:*} ${nd#*:}); done
SECONDS=0
mpi_run 2 $DMAX devtcp,self --mca btl_devtcp_if_include 10.99.0.0/24,10.98.0.0/24 \
	--mca btl_devtcp_devmem on --mca btl_devtcp_verbose 5 --mca btl_devtcp_devmem_inplace 1
rc=$?
check "devmem, direct, two interfaces (btl_devtcp_if_include 10.99.0.0/24,10.98.0.0/24): every check passes (exit $rc, $SECONDS s)" \
	passed 2 $DMAX
passed 2 $DMAX || show
check "... each rank bound a dma-buf on each of its two NICs" \
	test "$(grep -c "dma-buf bound to queue 7 of dt[abcd] directly" /tmp/mpi.out)" = 4
for nd in ns1:dta ns2:dtb ns1:dtc ns2:dtd; do
	ns=${nd%:*} dev=${nd#*:}
	got=$(($(devq_rx $ns $dev) - ${devq0[$nd]}))
	# a quarter of what one rank receives: ob1 splits by bandwidth, both equal
	check "... $dev's devmem queues received payload ($got bytes)" test $got -ge $((DMAX / 4))
	got=$(sed -n "s/.*btl:devtcp: $dev: .* sent, [0-9]* (\([0-9]*\) bytes) received/\1/p" /tmp/mpi.out)
	check "... the rank's $dev module received ${got:-no} bytes" test "${got:-0}" -ge $((DMAX / 4))
done
for host in 10.99.0.1 10.99.0.2; do
	check "... the rank on $host read $(landed $host) payload bytes from its two dma-bufs" \
		test "$(landed $host)" -ge "$DMAX"
	check "... all of them in place: none copied out ($(copied $host))" test "$(copied $host)" = 0
done
for nd in ns1:dta ns2:dtb ns1:dtc ns2:dtd; do
	check "... nothing is bound or steered on ${nd#*:} after the job" nothing_left ${nd%:*} ${nd#*:}
done
ip netns exec ns1 $devmem nic teardown dtc > /dev/null
ip netns exec ns2 $devmem nic teardown dtd > /dev/null
ip netns exec ns1 $devmem nic teardown dta > /dev/null
ip netns exec ns2 $devmem nic teardown dtb > /dev/null

# rdpmd in each namespace (its own socket, state and log) reserves queues
# 6-7 of its NIC; each rank finds its namespace's daemon in RDPM_SOCKET
# (selftests/ompi/rdpm-env).
check "rdpmd starts in ns1 (dta)" ns_rdpmd_start ns1 dta /tmp/rdpm/10.99.0.1.sock "root, 1000"
check "rdpmd starts in ns2 (dtb)" ns_rdpmd_start ns2 dtb /tmp/rdpm/10.99.0.2.sock "root, 1000"
q0[ns1]=$(devq_rx ns1 dta) q0[ns2]=$(devq_rx ns2 dtb)
SECONDS=0
# First each rank with a dma-buf of its own (btl_devtcp_rdpm_shared 0).
mpi_run_app 2 $DMAX devtcp,self "/devtcp/selftests/ompi/rdpm-env $VMBUILD/mpi_check" \
	--mca btl_devtcp_devmem on --mca btl_devtcp_verbose 1 --mca btl_devtcp_devmem_inplace 1 \
	--mca btl_devtcp_rdpm_shared 0
rc=$?
check "devmem through rdpmd, a dma-buf per rank: every check passes (exit $rc, $SECONDS s)" \
	passed 2 $DMAX
passed 2 $DMAX || show
grep -a "devmem:" /tmp/mpi.out
check "... rdpmd bound each rank's dma-buf" \
	test "$(grep -c "dma-buf bound to queue [67] of dt[ab] by rdpmd" /tmp/mpi.out)" = 2
for ns in ns1 ns2; do
	check "... $ns's rdpmd logged the rank's binding and its release" \
		bash -c "grep -q 'uid 0 bound [0-9]* bytes as dmabuf' /tmp/rdpm/$ns.log &&
			grep -q 'disconnected; 1 binding(s) released' /tmp/rdpm/$ns.log"
done
devmem_checks "devmem through rdpmd, a dma-buf per rank"
# A GPU dma-buf through rdpmd: with the default btl_devtcp_rdpm_shared each
# rank still registers one of its own (rdpmd's shared buffers are host
# memory), which rdpmd binds.
q0[ns1]=$(devq_rx ns1 dta) q0[ns2]=$(devq_rx ns2 dtb)
SECONDS=0
mpi_run_app 2 $DMAX devtcp,self "/devtcp/selftests/ompi/rdpm-env $VMBUILD/mpi_check" \
	--mca btl_devtcp_devmem on --mca btl_devtcp_verbose 1 --mca btl_devtcp_devmem_mem cuda \
	-x DEVMEM_LIBCUDA=$fake -x FAKE_CUDA_UDMABUF=1 -x FAKE_CUDA_KERNEL_US=20
rc=$?
check "devmem into GPU memory through rdpmd: every check passes (exit $rc, $SECONDS s)" \
	passed 2 $DMAX
passed 2 $DMAX || show
check "... each rank registered a GPU dma-buf of its own, which rdpmd bound" \
	test "$(grep -c "a GPU dma-buf of this rank's own" /tmp/mpi.out)" = 2 -a \
	"$(grep -c "dma-buf bound to queue [67] of dt[ab] by rdpmd" /tmp/mpi.out)" = 2
devmem_checks "devmem into GPU memory through rdpmd" gpu
# Then the default: the ranks of a host share one dma-buf per NIC, which
# rdpmd allocates and binds once (rdpm_join_shared).
for ns in ns1 ns2; do cp /tmp/rdpm/$ns.log /tmp/rdpm/$ns.log.mark; done
new_log() { diff /tmp/rdpm/$1.log.mark /tmp/rdpm/$1.log | sed -n 's/^> //p'; }
four_ranks "by rdpmd" "$page" "/devtcp/selftests/ompi/rdpm-env $VMBUILD/mpi_check"
check "... each rank received into a share of its host's shared dma-buf" \
	test "$(grep -c "share of the host's shared [0-9]*-byte dma-buf" /tmp/mpi.out)" = 4
for ns in ns1 ns2; do
	check "... $ns's rdpmd bound one dma-buf for both of its ranks, once" \
		test "$(new_log $ns | grep -c 'shared buffer of uid 0: [0-9]* bytes bound as dmabuf')" = 1
	check "... both ranks joined it" \
		test "$(new_log $ns | grep -c 'uid 0 joined the shared buffer')" = 2
	check "... and it was unbound when the last of them left" \
		grep -q "the shared buffer of uid 0 unbound: its last member left" <<< "$(new_log $ns)"
done

# A user's job: mpirun and both ranks as uid 1000, without CAP_NET_ADMIN,
# so devmem only through rdpmd. mpirun starts in ns1 as the user; the
# launch agent enters ns2 with a setuid copy of nsenter and drops back to
# the user (as ssh would on another node). Each namespace keeps a UTS
# namespace of its own, its host name its address.
NSENTER=/tmp/rdpm/nsenter-suid
cp /usr/bin/nsenter $NSENTER && chmod 4755 $NSENTER || fail "cannot make $NSENTER"
mkdir -p /run/uts /tmp/u1000 && chown 1000:1000 /tmp/u1000
for ns in ns1 ns2; do
	touch /run/uts/$ns
	unshare --uts=/run/uts/$ns hostname 10.99.0.${ns#ns} || fail "cannot keep a UTS namespace for $ns"
done
UDMABUF_MODE=$(stat -c %a /dev/udmabuf)
chmod 666 /dev/udmabuf	# as a site's udev rule would let users make udmabufs
# user_job [MCA ARGS...]: 2 ranks of mpi_check as uid 1000, one per namespace.
user_job() {
	phase "mpi_check as uid 1000 $*"
	$NSENTER --net=/run/netns/ns1 --uts=/run/uts/ns1 -S 1000 -G 1000 \
		env -i PATH=/usr/bin:/bin HOME=/tmp/u1000 DEVTCP_NSENTER=$NSENTER \
		OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path" \
		timeout 600 mpirun --host 10.99.0.1:1,10.99.0.2:1 -np 2 \
		--prtemca plm_ssh_agent /devtcp/selftests/ompi/netns-rsh \
		-x OMPI_MCA_mca_base_component_path --mca pml ob1 --mca btl devtcp,self \
		--mca btl_devtcp_devmem on --mca btl_devtcp_verbose 1 "$@" \
		/devtcp/selftests/ompi/rdpm-env $VMBUILD/mpi_check $DMAX > /tmp/mpi.out 2>&1
}
q0[ns1]=$(devq_rx ns1 dta) q0[ns2]=$(devq_rx ns2 dtb)
for ns in ns1 ns2; do : > /tmp/rdpm/$ns.log.mark; cp /tmp/rdpm/$ns.log /tmp/rdpm/$ns.log.mark; done
SECONDS=0
user_job --mca btl_devtcp_devmem_inplace 1
rc=$?
check "devmem through rdpmd, mpirun and ranks as uid 1000: every check passes (exit $rc, $SECONDS s)" \
	passed 2 $DMAX
passed 2 $DMAX || show
check "... each rank received into a share of its host's shared dma-buf, bound by rdpmd" \
	test "$(grep -c "share of the host's shared [0-9]*-byte dma-buf [0-9]*, bound to queue [67] of dt[ab] by rdpmd" /tmp/mpi.out)" = 2
for ns in ns1 ns2; do
	check "... $ns's rdpmd bound it for uid 1000" \
		bash -c "diff /tmp/rdpm/$ns.log.mark /tmp/rdpm/$ns.log | grep -q 'shared buffer of uid 1000: [0-9]* bytes bound as dmabuf'"
done
devmem_checks "devmem through rdpmd as uid 1000"
# Without rdpmd, the user's ranks cannot bind: MPI_Init fails, saying why.
SECONDS=0
user_job --mca btl_devtcp_rdpm_socket /tmp/rdpm/none.sock
rc=$?
check "... devmem on without rdpmd as uid 1000: MPI_Init fails (exit $rc, $SECONDS s)" test $rc != 0
grep -a "btl:devtcp" /tmp/mpi.out | head -4
check "... saying that without CAP_NET_ADMIN it needs rdpmd, naming the parameter" \
	grep -q "without CAP_NET_ADMIN the devmem path needs rdpmd, and none listens at /tmp/rdpm/none.sock (MCA parameter btl_devtcp_rdpm_socket)" /tmp/mpi.out
chmod "$UDMABUF_MODE" /dev/udmabuf
for ns in ns1 ns2; do umount /run/uts/$ns && rm -f /run/uts/$ns; done
rm -f $NSENTER
# A job ended from outside: a rank SIGKILLed, then dtb drained by rdpmctl.
# mpirun must exit with an error within a minute (no hang), and rdpmd must
# have released what the job's ranks had bound and steered.
# rank_on NS: the pid of the rank running in NS.
rank_on() { for p in $(ip netns pids "$1"); do [ "$(cat /proc/$p/comm 2> /dev/null)" = mpi_check ] && echo $p; done | head -n1; }
# job_bg: a long job through rdpmd in the background (JOB_PID).
job_bg() {
	mpi_run_app 2 67108864 devtcp,self "/devtcp/selftests/ompi/rdpm-env $VMBUILD/mpi_check" \
		--mca btl_devtcp_devmem on --mca btl_devtcp_verbose 1 &
	JOB_PID=$!
	for _ in $(seq $((600 * scale))); do
		[ "$(grep -c 'by rdpmd, [0-9]*-byte buffers; data port' /tmp/mpi.out 2> /dev/null)" = 2 ] && break
		sleep 0.2
	done
	sleep $((5 * scale))	# into the sizes that take the data links
}
# job_ends: mpirun exits within 60 s (times the scale); its status in JOB_RC.
job_ends() {
	for _ in $(seq $((300 * scale))); do
		kill -0 $JOB_PID 2> /dev/null || break
		sleep 0.2
	done
	kill -0 $JOB_PID 2> /dev/null && { kill -KILL $JOB_PID; wait $JOB_PID; JOB_RC=timeout; return 1; }
	wait $JOB_PID
	JOB_RC=$?
}
rdpm_idle() { for ns in ns1 ns2; do nothing_left $ns $([ $ns = ns1 ] && echo dta || echo dtb) || return 1; done; }

job_bg
victim=$(rank_on ns2)
check "kill: the rank in ns2 runs (pid ${victim:-none})" test -n "$victim"
phase "rank in ns2 killed"
kill -KILL $victim 2> /dev/null
check "kill: the job ends with an error within $((60 * scale)) s" job_ends
check "... mpirun's status says so ($JOB_RC)" test "$JOB_RC" != 0
show
check "... rdpmd released every binding and rule" within_1s rdpm_idle

job_bg
phase "dtb drained by rdpmctl"
check "drain: rdpmctl drains dtb mid-job" /devtcp/rdpm/rdpmctl -s /tmp/rdpm/10.99.0.2.sock drain dtb
check "drain: the job ends with an error within $((60 * scale)) s" job_ends
check "... mpirun's status says so ($JOB_RC)" test "$JOB_RC" != 0
check "... the rank on dtb said why" grep -q "rdpmd took the dma-buf's binding on dtb away (event 3: drained by an administrator)" /tmp/mpi.out
show
check "... rdpmd released every binding and rule" within_1s rdpm_idle

check "rdpmd exits cleanly in ns1" ns_rdpmd_stop ns1
check "rdpmd exits cleanly in ns2" ns_rdpmd_stop ns2
teardown ns1 ns2
finish
