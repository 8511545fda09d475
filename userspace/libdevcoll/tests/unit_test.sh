#!/bin/bash
# Host tests of libdevcoll (userspace/libdevcoll/tests/t_*.c), built with ASan
# and UBSan against the library's sources: the collective matrix over
# loopback (world sizes 1..8, sampled; DEVCOLL_FULL=1 for all of it), the
# 64 MiB allreduce, non-blocking overlap, killed peers, mismatches, timeouts,
# the vector fp16/bf16 reductions against the portable loops.
set -u
. "$(dirname "$0")/../../../selftests/unit_lib.sh"
make -s -C "$(dirname "$0")/../../libdevmem" > /dev/null || exit 1
unit_tests userspace/libdevcoll/tests
