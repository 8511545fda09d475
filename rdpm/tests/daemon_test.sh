#!/bin/bash
# rdpmd and the test client built with ASan and UBSan and run on the host,
# where the configured NIC does not exist: the daemon starts anyway (and
# logs why the NIC is not set up), answers every malformed message of the
# client's battery with an error reply, serves rdpmctl (status JSON,
# drain, reload), survives clients that vanish, and exits cleanly on
# SIGTERM without a sanitizer report or leak.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cflags="-O1 -g -std=gnu11 -Wall -Wextra -Werror $san -I$top/uapi -I$top/userspace/libdevmem"
libs="$top/userspace/libdevmem/libdevmem.a $(pkg-config --libs libmnl) -ldl"
make -s -C "$top/userspace/libdevmem" || exit 1
cc $cflags -o "$tmp/rdpmd" "$top"/rdpm/{server,clients,log,nicstate,config,proto,owner,nlquery}.c $libs || exit 1
cc $cflags -o "$tmp/rdpmctl" "$top/rdpm/rdpmctl.c" $libs || exit 1
cc $cflags -I"$top/userspace/include" -o "$tmp/rdpm_client" "$top/selftests/rdpm/rdpm_client.c" $libs ||
	exit 1
export ASAN_OPTIONS=detect_leaks=1 RDPM_SOCKET=$tmp/rdpm.sock
cat > "$tmp/rdpm.conf" <<CONF
[global]
socket = $tmp/rdpm.sock
state_dir = $tmp/state
[nic dtb]
users = *
[nic dtz]
users = *
shared_bytes = 0
CONF
fails=0
check() {
	local what=$1
	shift
	if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
"$tmp/rdpmd" -c "$tmp/rdpm.conf" 2> "$tmp/log" &
pid=$!
for _ in $(seq 50); do grep -q "<6>ready" "$tmp/log" && break; sleep 0.1; done
check "rdpmd starts without its NICs" grep -q "<6>ready: 0 of 2 NIC" "$tmp/log"
check "... saying why" grep -q "^<3>dtb: .*no such interface" "$tmp/log"
"$tmp/rdpm_client" malformed > "$tmp/out" 2>&1
check "every malformed message gets an error reply" test $? = 0
cat "$tmp/out"
if [ -w /dev/udmabuf ]; then
	out=$("$tmp/rdpm_client" register dtb 2>&1)
	check "registering on the absent NIC is refused" grep -q "dtb is absent" <<< "$out"
else
	# Not counted as a pass: the VM tests register real buffers.
	echo "SKIP: registering on the absent NIC: no /dev/udmabuf on this host"
fi
out=$("$tmp/rdpm_client" join dtb 1048576 2>&1)
check "a share on the absent NIC is refused (exit 3)" test $? = 3
check "... saying why" grep -q "dtb is absent" <<< "$out"
out=$("$tmp/rdpm_client" join dtz 1048576 2>&1)
check "a share on a NIC without shared buffers is refused" grep -q "dtz has no shared buffers (shared_bytes 0 in \[nic dtz\])" <<< "$out"
out=$("$tmp/rdpm_client" join dtb $((1 << 40)) 2>&1)
check "a share larger than the shared buffer is refused" grep -q "a share of 1099511627776 bytes is more than the 268435456-byte shared buffer" <<< "$out"
check "rdpmctl status --json" python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
assert d['nics'][0]['name'] == 'dtb' and not d['nics'][0]['present'], d
" < <("$tmp/rdpmctl" -s "$RDPM_SOCKET" status --json)
check "rdpmctl status" grep -q "nic dtb: absent" < <("$tmp/rdpmctl" -s "$RDPM_SOCKET" status)
if [ "$(id -u)" = 0 ]; then
	check "rdpmctl drain dtb" "$tmp/rdpmctl" -s "$RDPM_SOCKET" drain dtb
	check "rdpmctl reload" "$tmp/rdpmctl" -s "$RDPM_SOCKET" reload
fi
out=$("$tmp/rdpmctl" -s "$tmp/none.sock" status 2>&1)
check "rdpmctl without a daemon fails" test $? = 1
check "... naming the socket it tried" grep -q "$tmp/none.sock" <<< "$out"
# Clients that vanish mid-conversation.
for _ in $(seq 20); do
	timeout -s KILL 0.05 "$tmp/rdpm_client" malformed > /dev/null 2>&1
done
check "rdpmd survives vanishing clients" kill -0 $pid
check "a second rdpmd on the same socket refuses to start" eval \
	"! \"$tmp/rdpmd\" -c \"$tmp/rdpm.conf\" 2> /dev/null"
kill -TERM $pid
wait $pid
rc=$?
pid=
check "rdpmd exits cleanly on SIGTERM (status 0, no sanitizer report)" test $rc = 0
check "... no sanitizer output" eval "! grep -q 'Sanitizer\|runtime error' '$tmp/log'"
check "... every log line has a priority prefix" eval "! grep -qv '^<[0-7]>' '$tmp/log'"
cat "$tmp/log"
echo "$fails check(s) failed"
[ $fails = 0 ]
