#!/bin/bash
# Fuzzes btl/devtcp's hello and frame checks and its control-connection
# reader (devtcp_ctrl_step) for OMPI_FUZZ_SECONDS (default 20) from
# ompi/fuzz/corpus (selftests/fuzz_run.sh); `make -C ompi fuzz` runs it for
# 10 minutes.
top=$(cd "$(dirname "$0")/../.." && pwd)
exec "$top/selftests/fuzz_run.sh" "$top/ompi/fuzz" "${OMPI_FUZZ_SECONDS:-20}" fuzz_wire:corpus:256
