#!/bin/bash
# Host unit tests of libdevmem (userspace/libdevmem/tests/t_*.c), built with
# ASan and UBSan against the library's sources; every program must pass.
set -u
. "$(dirname "$0")/../../../selftests/unit_lib.sh"
unit_tests userspace/libdevmem/tests
