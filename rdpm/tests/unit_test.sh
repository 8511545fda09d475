#!/bin/bash
# Host unit tests of rdpmd (rdpm/tests/t_*.c): its request and
# configuration parsers, its dma-buf check, and its request handling on the
# fake NIC layer of rdpm/fuzz; built with ASan and UBSan, every program
# must pass.
set -u
. "$(dirname "$0")/../../selftests/unit_lib.sh"
unit_tests rdpm/tests
