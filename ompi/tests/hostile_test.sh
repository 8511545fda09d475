#!/bin/bash
# btl/devtcp against a stranger, under the real mpirun on this host
# (loopback): while a 2-rank job waits inside MPI, hostile_peer.py talks to
# rank 0's ports: hellos claiming rank 1 (old format, forged MAC, a rank
# not in the job) followed by a frame of an unregistered tag, a message
# shorter than any header and a put to a raw address, and 70 idle
# connections. Rank 0 must close each (the idle ones by
# btl_devtcp_connect_timeout, 2 s here), keep TCP keepalive on what it
# accepts, say why at verbosity 1 and count the refusals at finalize; then
# the job completes with every byte right. Then rank 1 itself goes bad
# (rogue_rank.c, preloaded): authenticated, it sends a message of tag
# 0xee, one with no control part, a put to a raw address, messages on data
# links whose hellos it never sent, and connects from an address it did
# not publish; rank 0 must refuse each with its reason, without a crash
# or a wait beyond btl_devtcp_connect_timeout. A flood of 200 idle
# connections, each reopened as it is closed, must not keep rank 1 from
# connecting (hostile_peer.py flood). Last, the network dies
# under a job: it must end within btl_devtcp_peer_timeout. About 30 s.
# DEVTCP_SAN=1 runs it all with the component under ASan and UBSan.
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v mpirun > /dev/null || { echo "FAIL: mpirun is not installed (openmpi-bin, see selftests/vm/provision)"; exit 1; }
command -v ss > /dev/null || { echo "FAIL: ss is not installed (iproute2)"; exit 1; }
make -s -C ompi > /dev/null || { echo "FAIL: ompi/ does not build"; exit 1; }
make -s -C selftests/ompi > /dev/null || { echo "FAIL: selftests/ompi does not build"; exit 1; }
pkglib=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
dir=${DEVTCP_OMPI_DIR:-$PWD/ompi}
# DEVTCP_SAN=1: the component built with ASan and UBSan, their runtimes
# preloaded into the ranks
preload=
san=()
if [ "${DEVTCP_SAN:-0}" = 1 ]; then
	dir=$PWD/build/ompi-san
	make -s -C ompi O="$dir" SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" > /dev/null ||
		{ echo "FAIL: the sanitizer build of ompi/ fails"; exit 1; }
	preload=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)
	san=(-x ASAN_OPTIONS=detect_leaks=0 -x UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
fi
export OMPI_MCA_mca_base_component_path=$dir:$pkglib
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
tmp=$(mktemp -d)
mpirun_pid=
flood_pid=
cleanup() {
	[ -n "$mpirun_pid" ] && kill "$mpirun_pid" 2> /dev/null
	[ -n "$flood_pid" ] && kill "$flood_pid" 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# start_job: a 2-rank job in the background (mpirun_pid, output in
# $tmp/out) whose ranks wait inside MPI for $tmp/go; sets ports (rank 0's
# control and data ports) and jobid, or fails the test.
start_job() {
	timeout 120 mpirun "${root[@]}" --oversubscribe --tag-output -np 2 --mca pml ob1 \
		--mca btl devtcp,self --mca btl_devtcp_if_include lo --mca btl_devtcp_verbose 5 \
		--mca btl_devtcp_connect_timeout 2 ${preload:+-x LD_PRELOAD="$preload"} "${san[@]}" \
		selftests/ompi/mpi_hostile "$tmp/go" > "$tmp/out" 2>&1 &
	mpirun_pid=$!
	for _ in $(seq 300); do
		grep -q "^\[1,0\]<stdout>:ready:" "$tmp/out" && break
		kill -0 $mpirun_pid 2> /dev/null || break
		sleep 0.1
	done
	ports=$(sed -n 's/^\[1,0\]<stderr>:.*btl:devtcp: lo 127.0.0.1\/[0-9]*: control port \([0-9]*\), data port \([0-9]*\),.*/\1 \2/p' "$tmp/out")
	jobid=$(sed -n 's/^\[1,0\]<stdout>:ready: pid [0-9]* jobid \([0-9]*\)$/\1/p' "$tmp/out")
	if [ -z "$ports" ] || [ -z "$jobid" ]; then
		echo "FAIL: rank 0 did not say its ports and jobid:"; sed 's/^/  /' "$tmp/out" | tail -20
		exit 1
	fi
}

start_job
python3 ompi/tests/hostile_peer.py 127.0.0.1 $ports "$jobid" 2 || bad "the hostile peer's findings above"
touch "$tmp/go"
wait $mpirun_pid
rc=$?
mpirun_pid=
out=$(cat "$tmp/out")
if [ $rc = 0 ] && grep -q "^\[1,0\]<stdout>:ok: 12 checks, 0 failures" <<< "$out"; then
	ok "the job completed after the attacks: $(sed -n 's/^\[1,0\]<stdout>://p' <<< "$out" | grep '^ok')"
else
	bad "the job (exit $rc):"; sed 's/^/  /' <<< "$out" | grep -v "btl:devtcp: lo: refused a connection" | tail -20
fi
grep -qiE "segmentation|signal [0-9]|core dumped|Sanitizer|runtime error" <<< "$out" && bad "a rank crashed"
for why in "another btl/devtcp wire version" "authentication failed (wrong job secret)" \
	"no hello within btl_devtcp_connect_timeout"; do
	n=$(grep -c "^\[1,0\]<stderr>:.*btl:devtcp: lo: refused a connection from 127.0.0.1 port [0-9]*: $why" <<< "$out")
	[ "$n" -gt 0 ] && ok "rank 0 said why $n time(s): $why" || bad "rank 0 never said: $why"
done
refused=$(sed -n 's/^\[1,0\]<stderr>:.*btl:devtcp: lo: refused \([0-9]*\) connection(s) that did not authenticate.*/\1/p' <<< "$out")
# 7 attacks (2 to the data port) and 70 idle connections
if [ "${refused:-0}" -ge 77 ]; then
	ok "rank 0 counted $refused refused connections at finalize"
else
	bad "rank 0 counted '${refused}' refused connections at finalize, not at least 77"
fi

# A flood: 200 idle connections to rank 0's ports, each reopened as the
# rank closes it, half from 127.0.0.1 (the ranks' address) and half from
# 127.0.0.2 (no rank's), while rank 1 first connects to rank 0. The job
# must complete within 60 s of the go, every byte right (it takes a few
# seconds alone; 60 leaves room for a loaded machine, and a connect()
# stuck in SYN retries, as before the fix, takes 127 s): rank 0 never
# stops accepting, refuses 127.0.0.2 at once and keeps at most 16
# connections without a hello from 127.0.0.1, the oldest closed first,
# while the connector's connect() is bounded anyway.
rm -f "$tmp/go" "$tmp/stop"
start_job
python3 ompi/tests/hostile_peer.py flood 127.0.0.1 $ports "$tmp/stop" > "$tmp/flood" 2>&1 &
flood_pid=$!
for _ in $(seq 50); do grep -q "holding" "$tmp/flood" && break; sleep 0.1; done
sleep 3	# rank 0's pending connections and backlog as full as they get
touch "$tmp/go"
start=$SECONDS
while kill -0 $mpirun_pid 2> /dev/null && [ $((SECONDS - start)) -lt 60 ]; do sleep 0.1; done
took=$((SECONDS - start))
kill $mpirun_pid 2> /dev/null
wait $mpirun_pid
rc=$?
mpirun_pid=
touch "$tmp/stop"
wait $flood_pid || bad "flood: the flooder could not hold its connections: $(cat "$tmp/flood")"
out=$(cat "$tmp/out")
if [ $rc = 0 ] && grep -q "^\[1,0\]<stdout>:ok: 12 checks, 0 failures" <<< "$out"; then
	ok "flood: the job completed ${took} s after rank 1 started, under $(tail -1 "$tmp/flood")"
else
	bad "flood: the job did not complete within 60 s of the go (exit $rc; $(tail -1 "$tmp/flood")):"
	sed 's/^/  /' <<< "$out" | tail -8
fi
grep -qiE "segmentation|signal [0-9]|core dumped|Sanitizer|runtime error" <<< "$out" && bad "flood: a rank crashed"
line=$(grep -o "refused [0-9]* connection(s) that did not authenticate.*" <<< "$out" | head -1)
evicted=$(sed -n 's/.* \([0-9]*\) closed for newer ones.*/\1/p' <<< "$line")
strangers=$(sed -n 's/.* \([0-9]*\) from no address of the job.*/\1/p' <<< "$line")
if [ "${evicted:-0}" -gt 0 ] && [ "${strangers:-0}" -gt 0 ]; then
	ok "flood: rank 0 $line"
else
	bad "flood: rank 0 neither closed old connections for new ones nor refused strangers at once: '$line'"
fi

gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -Iompi -Iuserspace/common -o "$tmp/rogue.so" \
	ompi/tests/rogue_rank.c -ldl ||
	{ echo "FAIL: rogue_rank.c does not build"; exit 1; }
touch "$tmp/go"
# rogue MODE MESSAGE: rank 0 says MESSAGE about rank 1, nothing crashes
# and the job fails: the PML ends it with an error status, rank 0 never
# finishing its checks. A rank whose connections are refused before they
# join (srcaddr) is not told so: that job waits, is ended by the timeout
# (status 124), and rank 0 must have refused every connection rank 1 made
# (a control connection and a data link, at least) with none joining.
rogue() {
	local mode=$1 msg=$2 out rc limit=20 n
	[ "$mode" = srcaddr ] && limit=8
	out=$(timeout $limit mpirun "${root[@]}" --oversubscribe --tag-output -np 2 --mca pml ob1 \
		--mca btl devtcp,self --mca btl_devtcp_if_include lo --mca btl_devtcp_verbose 1 \
		--mca btl_devtcp_connect_timeout 2 -x LD_PRELOAD="${preload:+$preload:}$tmp/rogue.so" \
		"${san[@]}" -x ROGUE_MODE="$mode" \
		selftests/ompi/mpi_hostile "$tmp/go" 2>&1)
	rc=$?
	n=$(grep -c "^\[1,0\]<stderr>:.*btl:devtcp: .*$msg" <<< "$out")
	# (mpirun, ended by the timeout, says "Forwarding signal 18 to job")
	if grep -v "Forwarding signal" <<< "$out" |
	   grep -qiE "segmentation|signal [0-9]|core dumped|Sanitizer|runtime error"; then
		bad "rogue rank 1 ($mode): a rank crashed:"; sed 's/^/  /' <<< "$out" | tail -10
	elif grep -q "^\[1,0\]<stdout>:ok:" <<< "$out"; then
		bad "rogue rank 1 ($mode): rank 0 finished its checks with the rogue peer:"
		sed 's/^/  /' <<< "$out" | tail -10
	elif [ "$mode" != srcaddr ] && { [ $rc = 0 ] || [ $rc = 124 ]; }; then
		bad "rogue rank 1 ($mode): the job did not fail (exit $rc):"
		sed 's/^/  /' <<< "$out" | tail -10
	elif [ "$mode" = srcaddr ] && { [ $rc != 124 ] || [ "$n" -lt 2 ]; }; then
		bad "rogue rank 1 ($mode): exit $rc, $n connection(s) refused, not 124 and at least 2:"
		sed 's/^/  /' <<< "$out" | tail -10
	elif [ "$n" -gt 0 ]; then
		ok "rogue rank 1 ($mode): exit $rc, rank 0 ($n time(s)): $(grep -o "btl:devtcp: .*$msg.*" <<< "$out" | head -1)"
	else
		bad "rogue rank 1 ($mode): rank 0 did not say '$msg' (exit $rc):"
		sed 's/^/  /' <<< "$out" | tail -10
	fi
}
rogue tag "peer [0-9]*\.1 (.*): refused a message: message tag nobody receives (tag 0xee"
rogue short "peer [0-9]*\.1 (.*): refused a message: control length out of range"
rogue put "peer [0-9]*\.1 (.*): refused a message: put beyond its registered region"
rogue nolink "peer [0-9]*\.1 (.*): its message's data link 0 did not connect within 4 s"
rogue srcaddr "refused a connection from 127.0.0.2 port [0-9]*: not from an address of the job's processes"

# The network dies under a running job (lo goes down in a network
# namespace of the job's own): with btl_devtcp_peer_timeout 3, rank 0's
# idle connection from rank 1 times out (keepalive, TCP_USER_TIMEOUT) and
# rank 0 fails the peer with the reason instead of waiting for ever. (The
# job cannot end by itself here: the runtime's own connections to mpirun
# go over the same dead lo.)
if unshare -n true 2> /dev/null; then
	export tmp
	out=$(timeout 60 unshare -n bash -c '
		ip link set lo up
		: > "$tmp/stall"
		timeout 50 mpirun "$@" > "$tmp/stall" 2>&1 &
		pid=$!
		for _ in $(seq 200); do
			grep -q "^\[1,1\]<stdout>:stalled" "$tmp/stall" && break
			sleep 0.1
		done
		ip link set lo down
		start=$SECONDS
		while [ $((SECONDS - start)) -lt 20 ] &&
		      ! grep -q "btl:devtcp: peer .*: receive failed" "$tmp/stall"; do
			sleep 0.2
		done
		echo "after $((SECONDS - start)) s"
		kill $pid
		# ranks the runtime can no longer reach
		kill -9 $(sed -n "s/^\[1,0\]<stdout>:ready: pid \([0-9]*\).*/\1/p; s/^\[1,1\]<stdout>:stalled: pid \([0-9]*\)/\1/p" "$tmp/stall") 2> /dev/null
		wait $pid
		cat "$tmp/stall"' sh "${root[@]}" --oversubscribe --tag-output -np 2 --mca pml ob1 \
		--mca btl devtcp,self --mca btl_devtcp_if_include lo --mca btl_devtcp_peer_timeout 3 \
		${preload:+-x LD_PRELOAD="$preload"} "${san[@]}" selftests/ompi/mpi_hostile "$tmp/go" stall 2>&1)
	secs=$(sed -n 's/^after \([0-9]*\) s$/\1/p' <<< "$out" | head -1)
	if grep -q "^\[1,0\]<stderr>:.*btl:devtcp: peer [0-9]*\.1 .*: receive failed: Connection timed out" <<< "$out" &&
	   [ "${secs:-99}" -le 10 ]; then
		ok "the network died under the job: rank 0 failed its peer after ${secs} s: $(grep -o 'receive failed: .*' <<< "$out" | head -1)"
	else
		bad "the network died under the job: rank 0 did not fail its peer within 10 s:"
		sed 's/^/  /' <<< "$out" | grep -v udmabuf | tail -10
	fi
else
	echo "SKIP: the dead-network run: no network namespaces here (unshare -n)"
fi
[ $fails = 0 ]
