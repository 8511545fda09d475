#!/bin/bash
# devcoll-perf --compare on 3 ranks over loopback, every collective at three
# sizes: libdevcoll, Open MPI and Gloo must each run every collective they
# have (Gloo has no reduce_scatter) and get every element right (the tool
# fails on a baseline's wrong element too), and the table must say so.
# Then the 16-bit float types, -o's list and its error, --gpu's errors.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
make -s -C "$top/userspace" >/dev/null || exit 1
perf=$top/userspace/tools/devcoll-perf/devcoll-perf
for b in devcoll-perf-mpi devcoll-perf-gloo; do
	[ -x "$top/userspace/tools/devcoll-perf/$b" ] ||
		{ echo "FAIL: no $b (openmpi and libgloo-dev, see selftests/vm/provision)"; exit 1; }
done
colls="allreduce allgather reduce_scatter alltoall broadcast reduce gather scatter sendrecv"
out=$(timeout 300 "$perf" --np 3 --compare --repeat 1 -o all -b 64 -e 256K -f 64 -w 1 -n 3 2>&1)
rc=$?
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ $rc = 0 ] || fail "devcoll-perf --compare exited $rc"
for c in $colls; do
	rows=$(awk -v c="$c" '$1 == c' <<< "$out")
	n=$(grep -c . <<< "$rows")
	[ "$n" = 3 ] || { fail "$c: $n rows, want 3 (64 B, 4 KiB, 256 KiB)"; continue; }
	# columns: collective size devcoll busbw #wrong ompi busbw gloo busbw x-ompi x-gloo
	bad=$(awk -v c="$c" '$5 != 0 || $6 == "-" || ($8 == "-" && c != "reduce_scatter")' <<< "$rows")
	# the baselines' wrong elements, as devcoll-perf reports them
	wrong=$(grep "wrong elements in $c of" <<< "$out")
	if [ -n "$wrong" ]; then
		fail "$c: a baseline got elements wrong:"
		sed 's/^/  /' <<< "$wrong"
	elif [ -n "$bad" ]; then
		fail "$c: a wrong element or a missing baseline:"
		sed 's/^/  /' <<< "$bad"
	else
		echo "ok: $c: 3 sizes, no wrong element, Open MPI$([ "$c" = reduce_scatter ] || echo " and Gloo") beside it"
	fi
done
if [ $fails != 0 ]; then
	echo "devcoll-perf said:"
	sed 's/^/  /' <<< "$out" | tail -40
fi
# the 16-bit floats: every collective right in libdevcoll; Gloo sums half
# (allreduce and reduce), Open MPI has neither type and only moves them
for d in half bfloat16; do
	out=$(timeout 120 "$perf" --np 2 --compare --repeat 1 -o all -d $d -b 64 -e 64K -f 1024 -w 1 -n 3 2>&1)
	rc=$?
	rows=$(awk '$1 ~ /^[a-z_]+$/ && $2 ~ /^[0-9]+$/' <<< "$out")
	n=$(grep -c . <<< "$rows")
	bad=$(awk '$5 != 0 || $3 == "-"' <<< "$rows")
	gloo_sum=$(awk '$1 == "allreduce" && $8 != "-"' <<< "$rows" | grep -c .)
	want_gloo=$([ $d = half ] && echo 2 || echo 0)
	if [ $rc != 0 ] || [ "$n" != 18 ] || [ -n "$bad" ] || [ "$gloo_sum" != "$want_gloo" ] ||
	   grep -q "wrong elements" <<< "$out"; then
		fail "-d $d: exit $rc, $n rows (want 18), Gloo allreduce rows $gloo_sum (want $want_gloo), wrong or missing:"
		sed 's/^/  /' <<< "$out" | tail -25
	else
		echo "ok: -d $d: every collective at 64 B and 64 KiB, no wrong element, Gloo's allreduce beside it: $want_gloo rows"
	fi
done
# a list of collectives runs those; a name it does not know is an error,
# not a silent allreduce
out=$(timeout 60 "$perf" --np 2 -o gather,broadcast -b 64 -e 64 -w 1 -n 1 2>&1)
heads=$(grep -o '^# devcoll-perf: [a-z_]*' <<< "$out" | awk '{print $3}' | tr '\n' ' ')
[ "$heads" = "gather broadcast " ] && echo "ok: -o gather,broadcast runs gather, then broadcast" ||
	fail "-o gather,broadcast ran: '$heads'"
out=$(timeout 60 "$perf" --np 2 -o gather,bogus -b 64 -e 64 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "unknown collective 'bogus'" <<< "$out" &&
	echo "ok: -o gather,bogus exits $rc naming 'bogus'" ||
	fail "-o gather,bogus exited $rc: $out"
# --gpu: not with --compare (the others take host memory); without a GPU
# it fails saying why (on a GPU host selftests/bench/coll_gpu measures it)
out=$(timeout 60 "$perf" --np 2 --gpu --compare 2>&1)
rc=$?
[ $rc = 2 ] && grep -q "runs libdevcoll alone" <<< "$out" &&
	echo "ok: --gpu --compare is refused" || fail "--gpu --compare exited $rc: $out"
if ! nvidia-smi -L > /dev/null 2>&1; then
	out=$(timeout 60 "$perf" --np 2 --gpu -b 64 -e 64 2>&1)
	rc=$?
	[ $rc != 0 ] && grep -q "CUDA: libcuda.so.1 not found" <<< "$out" &&
		echo "ok: --gpu without a GPU exits $rc naming libcuda" ||
		fail "--gpu without a GPU exited $rc: $out"
fi

[ $fails = 0 ]
