#!/bin/bash
# btl/devtcp's hello and frame checks and its SHA-256/HMAC (wire_test.c),
# built without Open MPI under ASan and UBSan.
set -u
cd "$(dirname "$0")" || exit 1
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
gcc -std=gnu11 -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined \
	-fno-sanitize-recover=all -I.. -I../../userspace/common wire_test.c ../btl_devtcp_wire.c \
	../../userspace/common/sha256.c \
	-o "$bin/wire_test" || { echo "FAIL: wire_test does not build"; exit 1; }
"$bin/wire_test"
