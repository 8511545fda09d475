#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# devtcp.ko unloads and loads again cleanly, several times in a row.
. "$(dirname "$0")/../lib.sh"

[ -d /sys/module/devtcp ] || fail "devtcp.ko is not loaded at test start"
for i in 1 2 3 4 5; do
	rmmod devtcp || fail "rmmod failed in cycle $i"
	[ ! -d /sys/module/devtcp ] || fail "module still present after rmmod in cycle $i"
	insmod "$DEVTCP_KO" || fail "insmod failed in cycle $i"
done
check "module is live after 5 reload cycles" \
	grep -q '^devtcp .* Live ' /proc/modules
finish
