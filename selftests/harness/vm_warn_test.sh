#!/bin/bash
# Self-test of the harness: a kernel WARNING during a run fails the run, even
# when the command itself succeeds, and the log excerpt is printed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
ko=selftests/harness/warn/devtcp_harness_warn.ko
[ -f "$ko" ] || { echo "FAIL: $ko not built"; exit 1; }

log=$(selftests/vm/run -- sh -c "insmod $ko; echo insmod-returned-\$?; exit 0" 2>&1)
rc=$?
printf '%s\n' "$log" | sed 's/^/vm: /'
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
check "the command ran and succeeded" 'grep -q "^insmod-returned-1" <<< "$log"'
check "the run failed with exit 125" '[ $rc = 125 ]'
check "the WARNING excerpt is printed" 'grep -q "kernel problem: .*WARNING: .*harness_warn_init" <<< "$log"'
check "the taint change is reported" 'grep -q "kernel taint gained" <<< "$log"'

# Inside one VM run, the per-test check blames the test that made the kernel
# warn, even though that test exited 0.
log=$(selftests/vm/run -- selftests/ktap-runner --kernel-check vm \
	selftests/harness/warn_in_guest.sh 2>&1)
printf '%s\n' "$log" | grep -v '^#  ' | sed 's/^/vm: /'
check "the guest runner fails the test that warned" \
	'grep -q "^not ok 1 vm: harness/warn_in_guest.sh # kernel problem" <<< "$log"'
[ $fails = 0 ]
