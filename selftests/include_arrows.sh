#!/bin/bash
# The include arrows of Documentation/layout.rst: no product source
# (userspace/, rdpm/, ompi/, kernel/; their tests/ and fuzz/ excepted)
# includes anything of the tests, or a header of another component that is
# not public. Every offending #include is named; a planted tree checks
# first that the check can fail.
#
#   include_arrows.sh [TREE]   TREE: the top of a source tree (default: this one)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)

# The components, longest prefix first (userspace/common and
# userspace/include hold the headers several components share).
components="userspace/libdevmem userspace/libdevcoll userspace/tools userspace/common
	    userspace/include rdpm ompi kernel uapi"
# Headers any component may include.
is_public() {
	case $1 in
	userspace/libdevmem/devmem.h | userspace/libdevmem/devmem_cuda.h) return 0 ;;
	userspace/libdevmem/devmem_rdpm.h) return 0 ;;
	userspace/libdevcoll/devcoll.h) return 0 ;;
	userspace/include/* | userspace/common/*.h | uapi/*) return 0 ;;
	esac
	return 1
}

component_of() {
	local c
	for c in $components; do
		case $1 in "$c"/*) echo "$c"; return ;; esac
	done
	echo "${1%%/*}"
}

is_test_path() {
	case /$1/ in */selftests/* | */tests/* | */fuzz/*) return 0 ;; esac
	return 1
}

# Prints "FILE:LINE: why" for each bad include under tree $1; returns 1 if any.
check_tree() {
	local root=$1 bad=0 file line name kind own dir res c cands
	local -A found
	cd "$root" || return 2
	# every header of the tree, for include names that the -I paths resolve
	mapfile -t headers < <(find userspace rdpm ompi kernel uapi selftests -type f \
				    \( -name '*.h' -o -name '*.c' \) 2>/dev/null | sort)
	while IFS= read -r file; do
		own=$(component_of "$file")
		dir=$(dirname "$file")
		while IFS=: read -r line text; do
			[[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\"\<])([^\"\>]+) ]] ||
				continue
			kind=${BASH_REMATCH[1]} name=${BASH_REMATCH[2]}
			if is_test_path "$name"; then
				echo "$file:$line: includes $name, a file of the tests"
				bad=1
				continue
			fi
			res=
			if [ "$kind" = '"' ] && [ -f "$dir/$name" ]; then
				res=$(realpath -m --relative-to=. "$dir/$name")
				cands=$res
			else
				if [ -z "${found[$name]+x}" ]; then
					found[$name]=$(printf '%s\n' "${headers[@]}" | awk -v n="$name" \
						'$0 == n || substr($0, length($0) - length(n)) == "/" n')
				fi
				cands=${found[$name]}
			fi
			[ -n "$cands" ] || continue	# a system or Open MPI header
			res=
			for c in $cands; do
				if is_test_path "$c" && [ "$(component_of "$c")" != "$own" ]; then
					[ -n "$res" ] || res="test:$c"
				elif [ "$(component_of "$c")" = "$own" ] || is_public "$c"; then
					res=ok
					break
				else
					res=$c
				fi
			done
			case $res in
			ok) ;;
			test:*)
				echo "$file:$line: includes $name, a file of the tests (${res#test:})"
				bad=1 ;;
			*)
				echo "$file:$line: includes $name, private to $(component_of "$res") ($res)"
				bad=1 ;;
			esac
		done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include' "$file")
	done < <(find userspace rdpm ompi kernel -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' \) \
		      -not -path '*/tests/*' -not -path '*/fuzz/*' 2>/dev/null | sort)
	return $bad
}

# The check must be able to fail: a tree with one include of each kind.
plant=$(mktemp -d)
trap 'rm -rf "$plant"' EXIT
mkdir -p "$plant"/{userspace/libdevmem,userspace/tools,selftests/net,rdpm,kernel}
touch "$plant"/userspace/libdevmem/{devmem.h,private.h} "$plant"/selftests/net/helper.h
printf '#include "devmem.h"\n#include <stdio.h>\n' > "$plant/userspace/tools/good.c"
printf '#include "private.h"\n' > "$plant/userspace/tools/reach.c"
printf '#include "../selftests/net/helper.h"\n' > "$plant/rdpm/test.c"
printf '#include "helper.h"\n' > "$plant/kernel/bytest.c"
planted=$( (check_tree "$plant") )
for want in 'userspace/tools/reach.c:1: includes private.h, private to userspace/libdevmem' \
	    'rdpm/test.c:1: includes ../selftests/net/helper.h, a file of the tests' \
	    'kernel/bytest.c:1: includes helper.h, a file of the tests'; do
	grep -qF "$want" <<< "$planted" || { echo "FAIL: the planted tree's '$want' was not found:"; echo "$planted"; exit 1; }
done
if grep -q good.c <<< "$planted"; then
	echo "FAIL: a public header was reported:"; echo "$planted"; exit 1
fi

tree=${1:-$top}
out=$( (check_tree "$tree") )
rc=$?
if [ $rc != 0 ]; then
	echo "$out" | sed 's/^/FAIL: /'
	echo "FAIL: $(grep -c . <<< "$out") include(s) against Documentation/layout.rst's arrows"
	exit 1
fi
echo "PASS: product sources include only their own, public and shared headers"
