#!/bin/bash
# libdevmem's man pages render with man -l without a warning, link pages
# (.so man3/PAGE) included: laid out as installed (man3/), since .so paths
# are relative to the manual's root.
set -u
src=$(cd "$(dirname "$0")/../man" && pwd) || exit 1
command -v man > /dev/null || { echo "FAIL: man is not installed (man-db, see selftests/vm/provision)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/man3"
cp "$src"/*.3 "$tmp/man3/"
cd "$tmp" || exit 1
fails=0 n=0
for page in man3/*.3; do
	n=$((n + 1))
	name=$(basename "$page" .3)
	warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$page" 2>&1 > out)
	if [ -n "$warn" ]; then
		echo "FAIL: $name: $warn"; fails=$((fails + 1))
	elif ! grep -qw "$name" out; then
		# A page (or the page it links to) must name the function.
		echo "FAIL: $name: not in its rendered page"; fails=$((fails + 1))
	fi
done
[ $n -gt 0 ] || { echo "FAIL: no man pages"; exit 1; }
# Every function libdevmem exports has its page.
for sym in $(sed -n 's/^\t\t\([a-z][a-z0-9_]*\);$/\1/p' "$src/../libdevmem.map"); do
	[ -f "man3/$sym.3" ] || { echo "FAIL: $sym has no man page"; fails=$((fails + 1)); }
done
# The devmem tool's page.
mkdir man1 && cp "$src/../../tools/man/devmem.1" man1/
n=$((n + 1))
warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l man1/devmem.1 2>&1 > out)
[ -z "$warn" ] || { echo "FAIL: devmem.1: $warn"; fails=$((fails + 1)); }
echo "$((n - fails)) of $n man pages render cleanly"
[ $fails = 0 ]
