#!/bin/bash
# Host unit tests of rdpmd's request and configuration parsers
# (rdpm/tests/t_*.c), built with ASan and UBSan; every program must pass.
set -u
. "$(dirname "$0")/../../selftests/unit_lib.sh"
unit_tests rdpm/tests
