#!/bin/bash
# Host test of devtcp-pair's and devtcp-fault's rtnetlink requests (through
# libdevmem's netlink layer), in a network namespace of their own: the
# kernel's refusals come back as "TOOL: WHAT: strerror[: extack]" and exit
# 1, a getlink reply reaches the callback. No devtcp module needed.
set -u
tools=$(cd "$(dirname "$0")/.." && pwd)
for t in devtcp-pair devtcp-fault; do
	[ -x "$tools/$t" ] || { echo "FAIL: $tools/$t not built (make)"; exit 1; }
done
unshare -n true 2> /dev/null || { echo "SKIP: no network namespace (unshare -n needs root)"; exit 4; }
fails=0
# expect STATUS REGEX TOOL ARGS...: TOOL ARGS exits STATUS in a new netns,
# its stderr matches REGEX.
expect() {
	local want=$1 re=$2 out rc
	shift 2
	out=$(unshare -n "$tools/$1" "${@:2}" 2>&1 < /dev/null)
	rc=$?
	if [ $rc = "$want" ] && grep -Eq -e "$re" <<< "$out"; then
		echo "ok: $* -> $rc"
	else
		echo "FAIL: $* -> $rc (want $want matching '$re'): $out"
		fails=$((fails + 1))
	fi
}
expect 1 "^devtcp-pair: cannot delete the pair: No such device$" devtcp-pair del nosuch0
expect 1 "^devtcp-fault: lo is not a devtcp device$" devtcp-fault show lo
expect 1 "^devtcp-fault: nosuch0: No such device$" devtcp-fault show nosuch0
expect 1 "^devtcp-fault: cannot set the faults: Operation not supported" devtcp-fault set lo drop 1%
expect 1 "^devtcp-fault: cannot set the faults: Operation not supported" devtcp-fault off lo
expect 2 "usage: devtcp-pair" devtcp-pair add a-name-longer-than-ifnamsiz b
[ $fails = 0 ] && echo "all rtnetlink checks passed"
[ $fails = 0 ]
