#!/bin/bash
# libdevcoll's PMIx bootstrap under the real launcher: Open MPI's mpirun
# starts 4 and then 8 ranks of pmix_rank (ASan/UBSan build), which take
# rank, size and endpoints from PMIx and check a few collectives; then 4
# listening on ::1 (DEVCOLL_BIND_ADDR), whose endpoints must all be IPv6,
# and 4 with DEVCOLL_IF naming loopback by interface and by subnet, whose
# endpoints must all be 127.0.0.1.
set -u
cd "$(dirname "$0")" || exit 1
command -v mpirun >/dev/null || { echo "FAIL: mpirun is not installed (openmpi-bin, see selftests/vm/provision)"; exit 1; }
make -s -C ../../libdevmem >/dev/null || exit 1
make -s pmix_rank || exit 1
# libpmix and Open MPI's runtime keep memory until exit: no leak check.
export ASAN_OPTIONS=detect_leaks=0
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
fails=0
for run in "4" "8" "4 DEVCOLL_BIND_ADDR=::1" "4 DEVCOLL_IF=lo" "4 DEVCOLL_IF=127.0.0.0/8"; do
	read -r np setting <<< "$run"
	env=()
	[ -n "$setting" ] && env=(-x "$setting")
	# DEVCOLL_IF: every rank's endpoint on loopback (not the first other
	# address, the default under PMIx)
	[[ $setting = DEVCOLL_IF=* ]] && env+=(-x WANT_EP_ADDR=127.0.0.1)
	what="mpirun -np $np${setting:+ ($setting)}"
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
