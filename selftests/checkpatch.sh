#!/bin/bash
# The kernel sources pass the kernel's checkpatch.pl --strict (from Debian's
# linux-source of the test kernel, fetched by selftests/vm/provision).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${DEVTCP_CACHE:-/var/cache/devtcp}
cp=$cache/checkpatch/scripts/checkpatch.pl
[ -f "$cp" ] || { echo "FAIL: $cp missing: run 'make provision'"; exit 1; }
cd "$top" || exit 1
mapfile -t files < <(git ls-files -co --exclude-standard -- \
	'kernel/*.[ch]' 'uapi/linux/*.h' 'selftests/harness/warn/*.c' 'selftests/harness/bar/*.[ch]' | sort -u)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no kernel sources found"; exit 1; }
# Out of tree: no kernel tree to check against, no git history for the
# commit checks.
perl "$cp" --strict --no-tree --terse --show-types --color=never \
	--ignore FILE_PATH_CHANGES \
	-f "${files[@]}"
