#!/bin/bash
# Host test of the devmem tool's argument handling (no devtcp needed): usage
# errors exit 2 and say what is wrong, failures exit 1 with the library's
# message, nothing is changed on the host.
set -u
devmem=$(cd "$(dirname "$0")/.." && pwd)/devmem
[ -x "$devmem" ] || { echo "FAIL: $devmem not built (make)"; exit 1; }
fails=0
# expect STATUS REGEX ARGS...: devmem ARGS exits STATUS, its stderr matches REGEX.
expect() {
	local want=$1 re=$2 out rc
	shift 2
	out=$("$devmem" "$@" 2>&1 < /dev/null)
	rc=$?
	if [ $rc = "$want" ] && grep -Eq -e "$re" <<< "$out"; then
		echo "ok: devmem $* -> $rc"
	else
		echo "FAIL: devmem $* -> $rc (want $want matching '$re'): $out"
		fails=$((fails + 1))
	fi
}
expect 2 "usage: devmem nic setup"
expect 2 "unknown command 'frobnicate'" frobnicate
expect 2 "usage:" nic
expect 2 "usage:" nic explode lo
expect 2 "--queue is required" rx --iface lo --port 5000
expect 2 "--addr is required" tx --iface lo --port 5000
expect 2 "usage:" rx --iface lo --queue 1
expect 2 "'12x' is not a size" rx --iface lo --queue 1 --port 1 --size 12x
expect 2 "'-5' is not a size" rx --iface lo --queue 1 --port 1 --bytes -5
expect 2 "'16Q' is not a size" rx --iface lo --queue 1 --port 1 --page-size 16Q
expect 2 "'70000' is not a number from 0 to 65535" rx --iface lo --queue 1 --port 70000
expect 2 "'gpu' is not udmabuf, heap, cuda\[:GPU\] or user" rx --iface lo --queue 1 --port 1 --mem gpu
expect 2 "--chunk must be between 1 and --size" tx --iface lo --addr 127.0.0.1 --port 1 --size 1M --chunk 2M
expect 1 "nosuch0: no such interface" nic show nosuch0
expect 1 "nosuch0: no such interface" rx --iface nosuch0 --queue 1 --port 1
expect 1 "--mem user is for --zcrx" rx --iface lo --queue 1 --port 1 --mem user
expect 1 "--mem user and --zcrx are for rx" tx --iface lo --addr 127.0.0.1 --port 1 --mem user --pattern 1
expect 1 "nothing to send|not set up|no such" nic teardown nosuch0
[ $fails = 0 ] && echo "all argument checks passed"
[ $fails = 0 ]
