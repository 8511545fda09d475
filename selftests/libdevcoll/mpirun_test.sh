#!/bin/bash
# libdevcoll's PMIx bootstrap under the real launcher: Open MPI's mpirun
# starts 4 and then 8 ranks of pmix_rank (ASan/UBSan build), which take
# rank, size and endpoints from PMIx and check a few collectives; then 4
# listening on ::1 (DEVCOLL_BIND_ADDR), whose endpoints must all be IPv6.
set -u
cd "$(dirname "$0")/../../userspace/libdevcoll/tests" || exit 1
command -v mpirun >/dev/null || { echo "FAIL: mpirun is not installed (openmpi-bin, see selftests/vm/provision)"; exit 1; }
make -s -C ../../libdevmem >/dev/null || exit 1
make -s pmix_rank || exit 1
# libpmix and Open MPI's runtime keep memory until exit: no leak check.
export ASAN_OPTIONS=detect_leaks=0
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
fails=0
for run in "4" "8" "4 ::1"; do
	read -r np bind <<< "$run"
	env=()
	[ -n "$bind" ] && env=(-x "DEVCOLL_BIND_ADDR=$bind")
	what="mpirun -np $np${bind:+ (DEVCOLL_BIND_ADDR=$bind)}"
	out=$(timeout 120 mpirun "${root[@]}" --oversubscribe "${env[@]}" -np $np ./pmix_rank 2>&1)
	rc=$?
	oks=$(grep -c "^ok rank [0-9]* of $np\$" <<< "$out")
	if [ $rc = 0 ] && [ "$oks" = $np ]; then
		echo "ok: $what: every rank bootstrapped from PMIx"
	else
		echo "FAIL: $what (exit $rc, $oks of $np ranks ok):"
		sed 's/^/  /' <<< "$out" | tail -20
		fails=$((fails + 1))
	fi
done
[ $fails = 0 ]
