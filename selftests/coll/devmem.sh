#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libdevcoll over a devtcp pair, one rank per namespace: the collectives of
# coll_check over the plain receive path, then over the devmem receive path
# (every connection steered to queue 6, a udmabuf bound there, reductions
# reading the fragments in place), set up by the ranks themselves (root, no
# rdpmd: DEVCOLL_DEVMEM_RDPM=auto takes the direct path), the same into
# "GPU memory" (DEVCOLL_DEVMEM_MEM=cuda with the tests' stand-in libcuda,
# whose device memory is a udmabuf the CPU cannot touch and whose unpack
# kernels run late on a thread of their own), then through
# rdpmd (one daemon per namespace, both ranks uid 1000,
# DEVCOLL_DEVMEM_RDPM=on), and with 4 ranks, two per namespace on queues of
# their own, whose connections within a namespace (loopback) stay plain.
# Every run must be right and the devmem runs must give the same results as
# the plain one, with their payload through the dma-buf; a dup'ed
# communicator shares the binding, and each connection's receive window is
# limited to its share; nothing is left on the NICs afterwards. A dma-buf
# too small for the connections fails every rank, saying so. An unauthorised rank and a missing daemon fail every
# rank, saying why; so does a drain of rank 0's NIC by rdpmctl during a job,
# within 10 s (times DEVTCP_TIME_SCALE: make check-debug's kernel is several
# times slower, and the collectives' timeout stretches alike).
. "$(dirname "$0")/../lib.sh"

prog=/devtcp/selftests/coll/coll_check
devmem=/devtcp/userspace/tools/devmem
rdpmd=/devtcp/rdpm/rdpmd
[ -x $prog ] || fail "$prog is not built (make -C selftests/coll)"
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ip netns exec ns1 $devmem nic setup dta --reserve 2 > /dev/null || fail "nic setup dta"
ip netns exec ns2 $devmem nic setup dtb --reserve 2 > /dev/null || fail "nic setup dtb"

# Command prefixes of rank 0 and rank 1 (setpriv for the unprivileged runs).
AS0=()
AS1=()
USER1000=(setpriv --reuid 1000 --regid 1000 --clear-groups)
# the job's secret, which DEVCOLL_ADDR's rendezvous requires (every rank's)
export DEVCOLL_SECRET=$(head -c 24 /dev/urandom | base64)

# run NAME PORT RX [VAR=VALUE...]: both ranks (of $PROG, else coll_check); outputs in
# /tmp/coll.NAME.{0,1}{,.err}. Each rank's RDPM_SOCKET is its namespace's
# daemon's (none runs during the first runs).
run() {
	local name=$1 port=$2 rx=$3 pid rc=0
	shift 3
	ip netns exec ns2 "${AS1[@]}" env DEVCOLL_RANK=1 DEVCOLL_SIZE=2 DEVCOLL_ADDR=10.99.0.1:$port \
		DEVCOLL_RX=$rx DEVCOLL_DEVMEM_IFACE=dtb DEVCOLL_DEVMEM_QUEUE=6 DEVCOLL_DEBUG=1 \
		DEVCOLL_TIMEOUT_MS=60000 RDPM_SOCKET=/tmp/rdpm/ns2.sock "$@" \
		timeout 600 ${PROG:-$prog} > /tmp/coll.$name.1 2> /tmp/coll.$name.1.err &
	pid=$!
	ip netns exec ns1 "${AS0[@]}" env DEVCOLL_RANK=0 DEVCOLL_SIZE=2 DEVCOLL_ADDR=10.99.0.1:$port \
		DEVCOLL_RX=$rx DEVCOLL_DEVMEM_IFACE=dta DEVCOLL_DEVMEM_QUEUE=6 DEVCOLL_DEBUG=1 \
		DEVCOLL_TIMEOUT_MS=60000 RDPM_SOCKET=/tmp/rdpm/ns1.sock "$@" \
		timeout 600 ${PROG:-$prog} > /tmp/coll.$name.0 2> /tmp/coll.$name.0.err || rc=1
	wait $pid || rc=1
	tail -n 1 /tmp/coll.$name.0 /tmp/coll.$name.1
	cat /tmp/coll.$name.0.err /tmp/coll.$name.1.err
	return $rc
}

# same_and_dmabuf NAME: both ranks' results identical to the plain run's,
# the payload through the dma-buf on two communicators (the world, its dup).
same_and_dmabuf() {
	local name=$1 r bytes comms
	for r in 0 1; do
		check "$name rank $r: results identical to the plain ones ($(grep -c . /tmp/coll.plain.$r) lines)" \
			cmp /tmp/coll.plain.$r /tmp/coll.$name.$r
		bytes=$(sed -n 's/.*devmem: \([0-9]*\) bytes via the dma-buf.*/\1/p' /tmp/coll.$name.$r.err |
			awk '{ s += $1 } END { print s + 0 }')
		comms=$(grep -c "bytes via the dma-buf" /tmp/coll.$name.$r.err)
		check "$name rank $r: the payload came through the dma-buf ($bytes bytes, $comms communicators)" \
			test "$bytes" -gt 10000000 -a "$comms" = 2
	done
}


t0=$(date +%s)
check "plain receive path: every collective right on both ranks" run plain 7100 plain
echo "plain run: $(($(date +%s) - t0)) s"
t0=$(date +%s)
check "devmem receive path (direct): every collective right on both ranks" run devmem 7200 devmem
echo "devmem run: $(($(date +%s) - t0)) s"
same_and_dmabuf devmem
for r in 0 1; do
	check "devmem rank $r: no rdpmd, so DEVCOLL_DEVMEM_RDPM=auto bound queue 6 directly" \
		grep -q "bound to queue 6 of dt. directly" /tmp/coll.devmem.$r.err
	# each connection's window within its share of the 64 MiB: half of
	# it once the dup'ed communicator's 2 connections share it too
	w2=$(sed -n 's/.* 2 connections share the 67108864-byte dma-buf: window limit \([0-9]*\) .*/\1/p' \
		/tmp/coll.devmem.$r.err)
	w4=$(sed -n 's/.* 4 connections share the 67108864-byte dma-buf: window limit \([0-9]*\) .*/\1/p' \
		/tmp/coll.devmem.$r.err)
	check "devmem rank $r: windows limited to the connections' share, halved when the dup shares the dma-buf (${w2:-none}, ${w4:-none} bytes)" \
		test "${w2:-0}" -gt 0 -a "${w4:-0}" = "$(( ${w2:-0} / 2 ))"
done
# The dma-buf in GPU memory: the stand-in libcuda's (userspace/libdevmem/
# tests/fake_cuda.c). Its device memory is mapped PROT_NONE for the
# library, so a payload read other than through the unpack kernels and the
# driver's copies crashes the rank; its kernels run each launch 20 us late,
# so a token handed back before its batch ran lets the NIC overwrite the
# bytes first (and the results differ from the plain run's).
fake=/devtcp/userspace/libdevcoll/tests/fake_cuda.so
[ -f $fake ] || fail "$fake is not built (make -C userspace/libdevcoll/tests)"
t0=$(date +%s)
check "devmem into GPU memory (stand-in libcuda): every collective right on both ranks" \
	run cuda 7150 devmem DEVCOLL_DEVMEM_MEM=cuda DEVMEM_LIBCUDA=$fake FAKE_CUDA_UDMABUF=1 \
	FAKE_CUDA_KERNEL_US=20
echo "devmem into GPU memory run: $(($(date +%s) - t0)) s"
same_and_dmabuf cuda
for r in 0 1; do
	check "cuda rank $r: the dma-buf was GPU memory, read through the unpack kernels" \
		grep -q "the dma-buf is GPU memory (CUDA device 0)" /tmp/coll.cuda.$r.err
	# int32, fp16, bf16, fp32 and fp64 reduce on the GPU, the fragments
	# read where they lie; the other types on the host
	red=$(sed -n 's/.* \([0-9]*\) reduced on the GPU as they lay in the dma-buf.*/\1/p' \
		/tmp/coll.cuda.$r.err | awk '{ s += $1 } END { print s + 0 }')
	check "cuda rank $r: reductions ran on the GPU, reading the fragments in place ($red bytes)" \
		test "$red" -gt 0
done
# GPU buffers too (coll_gpu): devcoll_recv() into device memory, 1 byte to
# 16 MiB each way, goes straight there (every byte of it, and nothing
# else: the allreduces are staged); every byte checked on the host.
run_gpu() { PROG=/devtcp/selftests/coll/coll_gpu run "$@"; }
check "GPU buffers on a GPU dma-buf: point-to-point and allreduce right on both ranks" \
	run_gpu gpu 7160 devmem DEVCOLL_DEVMEM_MEM=cuda \
	DEVMEM_LIBCUDA=$fake FAKE_CUDA_UDMABUF=1 FAKE_CUDA_KERNEL_US=20
p2p_bytes=$((1 + 1000 + 4096 + 65537 + 1048576 + 16777216))
for r in 0 1; do
	direct=$(sed -n 's/.*devmem: \([0-9]*\) bytes received straight into GPU buffers.*/\1/p' \
		/tmp/coll.gpu.$r.err | awk '{ s += $1 } END { print s + 0 }')
	check "gpu rank $r: the $p2p_bytes bytes it received went straight into GPU memory ($direct)" \
		test "$direct" = "$p2p_bytes"
done

# A dma-buf too small for the connections: every rank fails, saying so.
run small 7250 devmem DEVCOLL_DEVMEM_SIZE=16384
rc=$?
check "devmem with a 16 KiB dma-buf: the run fails" test $rc != 0
for r in 0 1; do
	check "... on rank $r, saying it is too small for the connections" \
		grep -q "16384-byte dma-buf is too small for 2 connections" /tmp/coll.small.$r.err
done
# the rules and bindings are gone with the communicator
check "no flow rule or binding is left on dta" within_1s nothing_left ns1 dta
check "no flow rule or binding is left on dtb" within_1s nothing_left ns2 dtb

# run4 NAME PORT RX: 4 ranks, 0-1 in ns1 and 2-3 in ns2, each on a queue of
# its own (6, 7); outputs in /tmp/coll.NAME.{0..3}{,.err}.
run4() {
	local name=$1 port=$2 rx=$3 r ns dev pids=() rc=0
	for r in 3 2 1 0; do
		ns=ns$((r / 2 + 1)) dev=dt$([ $r -lt 2 ] && echo a || echo b)
		ip netns exec $ns env DEVCOLL_RANK=$r DEVCOLL_SIZE=4 DEVCOLL_ADDR=10.99.0.1:$port \
			DEVCOLL_RX=$rx DEVCOLL_DEVMEM_IFACE=$dev DEVCOLL_DEVMEM_QUEUE=$((6 + r % 2)) \
			DEVCOLL_DEVMEM_SIZE=32M DEVCOLL_DEBUG=1 DEVCOLL_TIMEOUT_MS=60000 \
			timeout 900 $prog > /tmp/coll.$name.$r 2> /tmp/coll.$name.$r.err &
		pids+=($!)
	done
	for r in "${pids[@]}"; do
		wait "$r" || rc=1
	done
	tail -n 1 /tmp/coll.$name.[0-3]
	cat /tmp/coll.$name.[0-3].err
	return $rc
}
t0=$(date +%s)
check "4 ranks, 2 per namespace, plain: every collective right" run4 plain4 7700 plain
echo "plain4 run: $(($(date +%s) - t0)) s"
t0=$(date +%s)
check "4 ranks, 2 per namespace, devmem on queues 6 and 7 of each NIC: every collective right" \
	run4 devmem4 7800 devmem
echo "devmem4 run: $(($(date +%s) - t0)) s"
for r in 0 1 2 3; do
	check "devmem4 rank $r: results identical to the plain ones" cmp /tmp/coll.plain4.$r /tmp/coll.devmem4.$r
	bytes=$(sed -n 's/.*devmem: \([0-9]*\) bytes via the dma-buf.*/\1/p' /tmp/coll.devmem4.$r.err |
		awk '{ s += $1 } END { print s + 0 }')
	# ranks 1 and 3 take most of it over loopback: their ring
	# predecessor (0, 2) shares their namespace
	check "devmem4 rank $r: the payload from the other namespace came through the dma-buf ($bytes bytes)" \
		test "$bytes" -gt 4000000
	check "devmem4 rank $r: 4 connections steered to queue $((6 + r % 2)), the 2 from the rank in its own namespace plain" \
		grep -q "4 connections steered, 2 to ranks on this host (plain)" /tmp/coll.devmem4.$r.err
	check "devmem4 rank $r: bound queue $((6 + r % 2))" \
		grep -q "bound to queue $((6 + r % 2)) of dt. directly" /tmp/coll.devmem4.$r.err
done
check "no flow rule or binding is left on dta after 4 ranks" within_1s nothing_left ns1 dta
check "no flow rule or binding is left on dtb after 4 ranks" within_1s nothing_left ns2 dtb
ip netns exec ns1 $devmem nic teardown dta > /dev/null
ip netns exec ns2 $devmem nic teardown dtb > /dev/null

# rdpmd in each namespace, on its own socket, state directory and log; it
# reserves queues 6-7 of its NIC itself (the devmem tool's set-up is gone).
start_rdpmd() { ns_rdpmd_start "$1" "$2" /tmp/rdpm/$1.sock 1000; }
stop_rdpmd() { ns_rdpmd_stop "$1"; }
UDMABUF_MODE=$(stat -c %a /dev/udmabuf)
chmod 666 /dev/udmabuf	# the unprivileged ranks make their own udmabufs
check "rdpmd starts in ns1 (dta)" start_rdpmd ns1 dta
check "rdpmd starts in ns2 (dtb)" start_rdpmd ns2 dtb

AS0=("${USER1000[@]}")
AS1=("${USER1000[@]}")
t0=$(date +%s)
check "devmem receive path through rdpmd, both ranks uid 1000: every collective right" \
	run rdpm 7300 devmem DEVCOLL_DEVMEM_RDPM=on
echo "rdpm run: $(($(date +%s) - t0)) s"
same_and_dmabuf rdpm
rmem=$(cat /proc/sys/net/core/rmem_max)
for r in 0 1; do
	# the window is the share's, as on the direct path: rdpmd sets the
	# buffer past rmem_max, which a uid 1000 rank could not
	buf=$(sed -n 's/.* 2 connections share .* receive buffer \([0-9]*\) bytes (set by rdpmd)$/\1/p' \
		/tmp/coll.rdpm.$r.err)
	check "rdpm rank $r (uid 1000): rdpmd set its receive buffer past rmem_max (${buf:-none} > 2 x $rmem)" \
		test "${buf:-0}" -gt $((2 * rmem))
done
for r in 0 1; do
	check "rdpm rank $r: rdpmd bound its dma-buf (to queues 6-7)" \
		grep -q "rdpmd bound the dma-buf to 2 queue(s) of dt. from 6" /tmp/coll.rdpm.$r.err
done
for ns in ns1 ns2; do
	check "$ns: rdpmd's log shows the uid 1000 clients: connected, bound, disconnected" \
		bash -c "grep -q 'uid 1000 gid 1000 connected' /tmp/rdpm/$ns.log &&
			grep -q 'pid [0-9]* uid 1000 bound [0-9]* bytes' /tmp/rdpm/$ns.log &&
			grep -q 'uid 1000 disconnected' /tmp/rdpm/$ns.log"
	check "$ns: one binding for the world and its dup (shared)" \
		test "$(grep -c 'uid 1000 bound' /tmp/rdpm/$ns.log)" = 1
done
check "no flow rule or binding is left on dta within 1 s" within_1s nothing_left ns1 dta
check "no flow rule or binding is left on dtb within 1 s" within_1s nothing_left ns2 dtb

# rank 1 as uid 1001, which ns2's rdpmd refuses: both ranks fail with its reason
AS1=(setpriv --reuid 1001 --regid 1001 --clear-groups)
run refused 7400 devmem DEVCOLL_DEVMEM_RDPM=on
rc=$?
check "rdpmd refuses rank 1 (uid 1001): the run fails" test $rc != 0
for r in 0 1; do
	check "... rank $r says so, with rdpmd's message" \
		grep -q "rank 1: devmem: rdpmd: uid 1001 may use no NIC of rdpmd" /tmp/coll.refused.$r.err
done
check "... and nothing is left on dta" within_1s nothing_left ns1 dta
check "... nor on dtb" within_1s nothing_left ns2 dtb
AS1=("${USER1000[@]}")

# A drain during a job: both ranks (uid 1000, through rdpmd) loop on
# allreduces on the world and, on a second thread, on a dup sharing the
# binding; rdpmctl drains dta. Rank 0 hears of it from rdpmd: both its
# communicators fail naming the drain, and shut their connections down, so
# rank 1 fails too: every rank within 10 s, where the timeout is 60 s (both
# times the scale).
loop=/devtcp/selftests/coll/coll_loop
declare -A DRAIN_PID
for r in 1 0; do
	ns=ns$((r + 1)) dev=dt$([ $r = 0 ] && echo a || echo b)
	ip netns exec $ns "${USER1000[@]}" env DEVCOLL_RANK=$r DEVCOLL_SIZE=2 \
		DEVCOLL_ADDR=10.99.0.1:7900 DEVCOLL_RX=devmem DEVCOLL_DEVMEM_IFACE=$dev \
		DEVCOLL_DEVMEM_RDPM=on RDPM_SOCKET=/tmp/rdpm/$ns.sock DEVCOLL_TIMEOUT_MS=$((60000 * scale)) \
		DEVCOLL_LOOP_S=$((300 * scale)) timeout $((400 * scale)) $loop > /tmp/coll.drain.$r 2> /tmp/coll.drain.$r.err &
	DRAIN_PID[$r]=$!
done
looping() { grep -q looping /tmp/coll.drain.0 && grep -q looping /tmp/coll.drain.1; }
exited() { ! kill -0 "${DRAIN_PID[0]}" 2> /dev/null && ! kill -0 "${DRAIN_PID[1]}" 2> /dev/null; }
for _ in $(seq 600); do
	looping || exited && break
	sleep 0.2
done
check "drain: both ranks loop on allreduces through rdpmd's bindings" looping
t0=$(date +%s%N)
check "drain: rdpmctl drains dta" /devtcp/rdpm/rdpmctl -s /tmp/rdpm/ns1.sock drain dta
while ! exited && [ $(($(date +%s%N) - t0)) -lt $((10000000000 * scale)) ]; do
	sleep 0.05
done
ms=$((($(date +%s%N) - t0) / 1000000))
check "drain: every rank exits within $((10 * scale)) s of it (took $ms ms)" exited
kill "${DRAIN_PID[0]}" "${DRAIN_PID[1]}" 2> /dev/null
wait "${DRAIN_PID[0]}"
rc0=$?
wait "${DRAIN_PID[1]}"
rc1=$?
cat /tmp/coll.drain.0.err /tmp/coll.drain.1.err
check "drain: rank 0 exits with an error ($rc0)" test $rc0 = 1
check "drain: rank 1 exits with an error ($rc1)" test $rc1 = 1
check "drain: rank 0's world and dup fail with -ENETDOWN, naming the drain" \
	test "$(grep -c 'failed (-100): rank 0: rdpmd: dta was drained by an administrator; devmem receive stopped$' \
		/tmp/coll.drain.0.err)" = 2
check "drain: rank 1's world and dup fail with -ENETDOWN, rank 0 having told it why" \
	test "$(grep -c 'failed (-100): rank 1: rank 0 failed: rdpmd: dta was drained by an administrator; devmem receive stopped$' \
		/tmp/coll.drain.1.err)" = 2
check "drain: ns1's rdpmd logs it" \
	grep -q 'dta: drained by pid [0-9]* uid 0: 1 binding(s) removed' /tmp/rdpm/ns1.log
check "... and nothing is left on dta" within_1s nothing_left ns1 dta
check "... nor on dtb" within_1s nothing_left ns2 dtb

check "rdpmd in ns1 exits cleanly" stop_rdpmd ns1
check "rdpmd in ns2 exits cleanly" stop_rdpmd ns2
echo "--- rdpmd logs"
cat /tmp/rdpm/ns1.log /tmp/rdpm/ns2.log

# DEVCOLL_DEVMEM_RDPM=on with no daemon: every rank fails, saying so
run nodaemon 7500 devmem DEVCOLL_DEVMEM_RDPM=on
rc=$?
check "DEVCOLL_DEVMEM_RDPM=on without rdpmd: the run fails" test $rc != 0
for r in 0 1; do
	check "... rank $r says no rdpmd listens" \
		grep -q "rank $r: DEVCOLL_DEVMEM_RDPM=on, but no rdpmd listens at /tmp/rdpm/ns$((r + 1)).sock" \
		/tmp/coll.nodaemon.$r.err
done
# uid 1000 with the default (auto) and no daemon: the direct path, refused
run unprivileged 7600 devmem
rc=$?
check "uid 1000, DEVCOLL_DEVMEM_RDPM=auto, no rdpmd: the run fails" test $rc != 0
for r in 0 1; do
	check "... rank $r says rdpmd is needed" grep -q "without CAP_NET_ADMIN the devmem path needs rdpmd" \
		/tmp/coll.unprivileged.$r.err
done
chmod "$UDMABUF_MODE" /dev/udmabuf
teardown ns1 ns2
finish
