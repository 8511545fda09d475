#!/bin/bash
# The VM harness boots the Debian test kernel, loads devtcp.ko, streams the
# command's output, returns its exit status and hands back /devtcp-out.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

kver=$(selftests/vm/provision --kver)
log=$(selftests/vm/run --out "$out/run" -- sh -c '
	uname -r
	grep -c "^devtcp " /proc/modules
	echo written > /devtcp-out/file
	echo to-stderr >&2
	exit 7')
rc=$?
printf '%s\n' "$log" | sed 's/^/vm: /'
check "exit status 7 comes back" '[ $rc = 7 ]'
check "the kernel is the provisioned Debian $kver" '[ "$(sed -n 1p <<< "$log")" = "$kver" ]'
check "the kernel is a 7.x release" '[[ $kver == 7.* ]]'
check "devtcp.ko was loaded for the command" '[ "$(sed -n 2p <<< "$log")" = 1 ]'
check "stderr is streamed" 'grep -qx to-stderr <<< "$log"'
check "/devtcp-out comes back" '[ "$(cat "$out/run/file" 2>/dev/null)" = written ]'
check "the kernel log is kept" 'grep -q "devtcp-vm: end" "$out/run/kernel.log"'
[ $fails = 0 ]
