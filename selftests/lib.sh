# SPDX-License-Identifier: GPL-2.0
# Helpers for the VM tests (sourced). Tests run as root inside the VM with
# devtcp.ko loaded and the tree at /devtcp (read-only).
# Exit codes follow kselftest: 0 pass, 1 fail, 4 skip.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4
DEVTCP_KO=/devtcp/kernel/devtcp.ko

fails=0

# check DESCRIPTION CMD...: runs CMD, records a failure if it fails.
check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what"
		fails=$((fails + 1))
	fi
}

skip() {
	echo "SKIP: $*"
	exit $KSFT_SKIP
}

fail() {
	echo "FAIL: $*"
	exit $KSFT_FAIL
}

# Ends the test: pass if no check failed.
finish() {
	[ "$fails" = 0 ] && exit $KSFT_PASS
	echo "$fails check(s) failed"
	exit $KSFT_FAIL
}
