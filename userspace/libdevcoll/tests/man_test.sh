#!/bin/bash
# libdevcoll's man pages (and devcoll-perf(1)) render with man -l without a
# warning, link pages included (laid out as installed, man3/); every
# function libdevcoll exports has its page.
set -u
src=$(cd "$(dirname "$0")/../man" && pwd) || exit 1
command -v man > /dev/null || { echo "FAIL: man is not installed (man-db, see selftests/vm/provision)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/man3" "$tmp/man1"
cp "$src"/*.3 "$tmp/man3/"
cp "$src/../../tools/devcoll-perf/devcoll-perf.1" "$tmp/man1/"
cd "$tmp" || exit 1
fails=0 n=0
for page in man3/*.3 man1/*.1; do
	n=$((n + 1))
	name=$(basename "$page" | sed 's/\.[13]$//')
	warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$page" 2>&1 > out)
	if [ -n "$warn" ]; then
		echo "FAIL: $name: $warn"; fails=$((fails + 1))
	elif ! grep -qw -- "$name" out; then
		echo "FAIL: $name: not in its rendered page"; fails=$((fails + 1))
	fi
done
for sym in $(sed -n 's/^\t\t\(devcoll_[a-z0-9_]*\);$/\1/p' "$src/../libdevcoll.map"); do
	[ -f "man3/$sym.3" ] || { echo "FAIL: $sym has no man page"; fails=$((fails + 1)); }
done
echo "$((n - fails)) of $n man pages render cleanly"
[ $fails = 0 ]
