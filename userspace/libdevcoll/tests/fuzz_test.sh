#!/bin/bash
# Fuzzes libdevcoll's wire checks (registrations, hellos, data headers;
# fuzz/fuzz_wire.c) for DEVCOLL_FUZZ_SECONDS (default 20) from
# userspace/libdevcoll/fuzz/corpus (selftests/fuzz_run.sh); `make -C
# userspace/libdevcoll fuzz` runs it for 10 minutes.
top=$(cd "$(dirname "$0")/../../.." && pwd)
exec "$top/selftests/fuzz_run.sh" "$top/userspace/libdevcoll/fuzz" \
	"${DEVCOLL_FUZZ_SECONDS:-20}" fuzz_wire:corpus:256
