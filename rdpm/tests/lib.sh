# SPDX-License-Identifier: GPL-2.0
# Shared by rdpm's host tests (sourced): rdpmd and rdpmctl built with ASan
# and UBSan into $tmp, the check helper, and the daemon's start and clean
# stop with its checks. The sourcing script sets top and tmp first.

fails=0
export ASAN_OPTIONS=detect_leaks=1
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cflags="-O1 -g -std=gnu11 -Wall -Wextra -Werror $san -I$top/uapi -I$top/userspace/libdevmem -I$top/userspace/common"
libs="$top/userspace/libdevmem/libdevmem.a $(pkg-config --libs libmnl) -ldl -lpthread"

# rdpm_build: $tmp/rdpmd and $tmp/rdpmctl from the tree's sources.
rdpm_build() {
	make -s -C "$top/userspace/libdevmem" || return 1
	local srcs
	srcs=$(make -s --no-print-directory -C "$top/rdpm" daemon-srcs) || return 1
	(cd "$top/rdpm" && cc $cflags -o "$tmp/rdpmd" $srcs $libs) || return 1
	cc $cflags -o "$tmp/rdpmctl" "$top/rdpm/rdpmctl.c" $libs
}

# check WHAT CMD...: runs CMD, prints ok or FAIL (counted in $fails).
check() {
	local what=$1
	shift
	if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}

# until_ok SECONDS CMD...: true once CMD is, within SECONDS.
until_ok() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done
}

# rdpm_start CONF: rdpmd in the background (pid in $pid, log in $tmp/log),
# waited for until it says ready (at most 10 s).
rdpm_start() {
	"$tmp/rdpmd" -c "$1" 2> "$tmp/log" &
	pid=$!
	until_ok 10 grep -q "<6>ready" "$tmp/log"
}

# rdpm_stop: SIGTERM; rdpmd must exit 0 with no sanitizer report and
# every log line prefixed with its priority.
rdpm_stop() {
	local rc
	kill -TERM $pid
	wait $pid
	rc=$?
	pid=
	check "rdpmd exits cleanly on SIGTERM (status $rc)" test $rc = 0
	check "... no sanitizer output" eval "! grep -q 'Sanitizer\|runtime error' '$tmp/log'"
	check "... every log line has a priority prefix" eval "! grep -qv '^<[0-7]>' '$tmp/log'"
}
