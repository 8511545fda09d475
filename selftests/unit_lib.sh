# SPDX-License-Identifier: GPL-2.0
# Shared by the host unit-test scripts (sourced): the t_*.c programs of a
# tests directory, built with ASan and UBSan by its Makefile, each run once.

# unit_tests DIR: in DIR (from the top of the tree) `make -s all`, then every
# t_*.c program with ASan's leak check; fails if one fails or there is none.
unit_tests() {
	local t fails=0 n=0
	cd "$(dirname "${BASH_SOURCE[0]}")/../$1" || return 1
	export ASAN_OPTIONS=detect_leaks=1
	make -s all || return 1
	for t in t_*.c; do
		n=$((n + 1))
		if ./"${t%.c}"; then echo "ok: ${t%.c}"; else echo "FAIL: ${t%.c}"; fails=$((fails + 1)); fi
	done
	[ $n -gt 0 ] || { echo "FAIL: no unit tests found"; return 1; }
	echo "$((n - fails)) of $n unit test programs passed"
	[ $fails = 0 ]
}
