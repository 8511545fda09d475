#!/bin/bash
# Host test of the stream checker the VM tests rely on, built with ASan and
# UBSan: a loopback stream of an odd size arrives intact, a receiver with
# another seed reports mismatches and fails, a short stream fails.
set -u
cd "$(dirname "$0")" || exit 1
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
gcc -std=gnu11 -Wall -Wextra -Werror -O1 -g -fsanitize=address,undefined \
	-fno-sanitize-recover=all -I../../userspace/include -o "$bin/tcp_stream" tcp_stream.c || exit 1
export ASAN_OPTIONS=detect_leaks=1
fails=0
port=$((20000 + RANDOM % 20000))

run() { # run RECV_SEED SEND_BYTES RECV_BYTES: prints the receiver's output, returns its status
	"$bin/tcp_stream" recv -p $port -n "$3" -s "$1" > "$bin/out" 2>&1 &
	local pid=$!
	"$bin/tcp_stream" send -a 127.0.0.1 -p $port -n "$2" -s 7 >> "$bin/all" 2>&1
	wait $pid
	local rc=$?
	port=$((port + 1))
	cat "$bin/out" >> "$bin/all"
	cat "$bin/out"
	return $rc
}
check() { if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

out=$(run 7 33554441 33554441)
check "an odd-sized stream arrives intact" test $? = 0
check "... and says 0 mismatched" grep -q "received 33554441 bytes, 0 mismatched" <<< "$out"
out=$(run 8 1000003 1000003)
check "a receiver expecting another pattern fails" test $? = 1
check "... reporting the first mismatch at offset 0" grep -q "mismatched (first at offset 0)" <<< "$out"
out=$(run 7 1000 2000)
check "a stream shorter than announced fails" test $? = 1
check "no sanitizer report in any run" bash -c "! grep -q 'Sanitizer' '$bin/all'"
[ $fails = 0 ]
