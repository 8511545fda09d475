#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Inside the VM (selftests/bench/ompi runs it): two ranks, one in each
# namespace of a devtcp pair at MTU $DEVTCP_BENCH_MPI_MTU, under the real
# mpirun. Point-to-point bandwidth and latency (selftests/ompi/mpi_bw) over
# btl/tcp, btl/devtcp without devmem, btl/devtcp with devmem (queues
# reserved with `devmem nic setup`), and the same read in place
# (btl_devtcp_devmem_inplace with 16 KiB receive buffers), in turn, in the
# same boot; then NetPIPE (NPopenmpi, Debian's netpipe-openmpi) over btl/tcp
# and btl/devtcp with devmem. Writes /devtcp-out/{tcp,devtcp,devmem,inplace}.bw
# and netpipe-{tcp,devmem}.np, and the devmem ranks' summaries (bytes read
# in place, copied) to devmem.summary. With DEVTCP_BENCH_MPI_ROUNDS=N the
# four mpi_bw runs go round N times in turn (NAME.bw.R each round), and
# NAME.bw holds each size's median; each round starts one run later than the
# last. /devtcp-out/losses: per run, the TCP segments retransmitted, the
# retransmission timeouts and the packets the NICs dropped.
# DEVTCP_BENCH_NETPIPE=0 leaves NetPIPE out.
. "$(dirname "$0")/../lib.sh"
set -u
VMBUILD=/devtcp/build/ompi-vm
MAX=${DEVTCP_BENCH_MPI_MAX:-16777216}
SECS=${DEVTCP_BENCH_MPI_SECS:-1}
MTU=${DEVTCP_BENCH_MPI_MTU:-9000}
ROUNDS=${DEVTCP_BENCH_MPI_ROUNDS:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path=$VMBUILD:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi40
[ -x $VMBUILD/mpi_bw ] || fail "$VMBUILD/mpi_bw is not built; run 'make' first"
devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
ip -n ns1 link set dta mtu "$MTU" && ip -n ns2 link set dtb mtu "$MTU" || fail "cannot set MTU $MTU"
devmem=/devtcp/userspace/tools/devmem
ip netns exec ns1 $devmem nic setup dta --reserve 2 > /dev/null || fail "nic setup dta"
ip netns exec ns2 $devmem nic setup dtb --reserve 2 > /dev/null || fail "nic setup dtb"

# job BTL DEVMEM APP...: 2 ranks, one per namespace.
job() {
	local btl=$1 dm=$2
	shift 2
	ip netns exec ns1 unshare --uts sh -c 'hostname 10.99.0.1 && exec "$@"' sh \
		timeout 1800 mpirun --host 10.99.0.1:1,10.99.0.2:1 -np 2 \
		--prtemca plm_ssh_agent /devtcp/selftests/ompi/netns-rsh \
		-x OMPI_MCA_mca_base_component_path --mca pml ob1 --mca btl "$btl",self \
		--mca btl_devtcp_devmem "$dm" --mca btl_devtcp_verbose 1 "$@"
}
# losses: TCP segments retransmitted, retransmission timeouts and packets
# the NICs dropped, both namespaces together, since the pair was made.
losses() {
	local ns dev
	for ns in ns1:dta ns2:dtb; do
		dev=${ns#*:} ns=${ns%:*}
		ip netns exec "$ns" nstat -asz TcpRetransSegs TcpExtTCPTimeouts
		ip netns exec "$ns" cat /sys/class/net/"$dev"/statistics/{rx,tx}_dropped | sed 's/^/drops /'
	done | awk '{ v[$1] += $2 } END { print v["TcpRetransSegs"] + 0, v["TcpExtTCPTimeouts"] + 0, v["drops"] + 0 }'
}
inplace="--mca btl_devtcp_devmem_inplace 1 --mca btl_devtcp_devmem_page_size 16384"
specs=("tcp tcp off" "devtcp devtcp off" "devmem devtcp auto" "inplace devtcp auto $inplace")
: > /devtcp-out/losses
for r in $(seq "$ROUNDS"); do
	# Each round starts one run later, so that no run is always first
	# (or last) in the boot's sequence of jobs.
	for i in "${!specs[@]}"; do
		read -r name btl dm mca <<< "${specs[$(((i + r - 1) % ${#specs[@]}))]}"
		echo "== mpi_bw over $name, round $r of $ROUNDS"
		before=$(losses)
		# shellcheck disable=SC2086
		job "$btl" "$dm" ${mca:-} $VMBUILD/mpi_bw "$MAX" "$SECS" > /tmp/$name.out 2>&1
		paste -d' ' <(echo "$before") <(losses) |
			awk -v n="$name" -v r="$r" '{ print n, r, $4 - $1, $5 - $2, $6 - $3 }' \
			>> /devtcp-out/losses
		grep -a '^[0-9]' /tmp/$name.out > /devtcp-out/$name.bw.$r
		grep -a 'devmem: .* payload bytes\|devmem: fragments of' /tmp/$name.out |
			sed "s/^/$name, round $r: /" >> /devtcp-out/devmem.summary
		cat /devtcp-out/$name.bw.$r
	done
done
# median NAME COLUMN: each size's median of COLUMN over the rounds.
median() {
	cat /devtcp-out/$1.bw.* | sort -k1,1n -k"$2,$2"g | awk -v c="$2" '
		{ v[$1] = v[$1] " " $c }
		END { for (s in v) { n = split(v[s], a, " "); print s, a[int((n + 1) / 2)] } }' | sort -k1,1
}
for spec in "${specs[@]}"; do
	name=${spec%% *}
	join <(median "$name" 2) <(median "$name" 3) | sort -n > /devtcp-out/$name.bw
done
netpipe=("tcp tcp off" "devmem devtcp auto")
[ "${DEVTCP_BENCH_NETPIPE:-1}" = 0 ] && netpipe=()
for run in "${netpipe[@]}"; do
	read -r name btl dm <<< "$run"
	echo "== NetPIPE over $name"
	# -p 0: no perturbed sizes beside each power of two, a third of the
	# points (the whole curve took over half an hour under TCG)
	(cd /tmp && job "$btl" "$dm" /usr/bin/NPopenmpi -p 0 -u "$MAX" -o /tmp/np.$name > /tmp/np.$name.log 2>&1)
	cp /tmp/np.$name /devtcp-out/netpipe-$name.np 2> /dev/null || tail -5 /tmp/np.$name.log
done
ip netns exec ns1 $devmem nic teardown dta > /dev/null
ip netns exec ns2 $devmem nic teardown dtb > /dev/null
ip netns del ns1
ip netns del ns2
