# SPDX-License-Identifier: GPL-2.0
# Shared by the host unit-test scripts (sourced): the t_*.c programs of a
# tests directory, built with ASan and UBSan by its Makefile, each run once.

# unit_tests DIR: in DIR (from the top of the tree) `make -s all`, then every
# t_*.c program with ASan's leak check, 10 minutes at most each. A program
# skips with exit 4 (CHECK_SKIP of userspace/include/devtcp/check.h) after a
# "SKIP:" line; fails if one fails or there is none.
unit_tests() {
	local t fails=0 n=0 skips=0
	cd "$(dirname "${BASH_SOURCE[0]}")/../$1" || return 1
	export ASAN_OPTIONS=detect_leaks=1
	make -s all || return 1
	for t in t_*.c; do
		n=$((n + 1))
		timeout 600 ./"${t%.c}"
		case $? in
		0) echo "ok: ${t%.c}" ;;
		4) echo "SKIP: ${t%.c} (it says why above)"; skips=$((skips + 1)) ;;
		*) echo "FAIL: ${t%.c}"; fails=$((fails + 1)) ;;
		esac
	done
	[ $n -gt 0 ] || { echo "FAIL: no unit tests found"; return 1; }
	echo "$((n - fails - skips)) of $n unit test programs passed, $skips skipped"
	[ $fails = 0 ]
}
