#!/bin/bash
# libFuzzer on rdpmd's whole read path with fds (rdpm/fuzz/fuzz_daemon.c),
# for RDPM_FUZZ_SECONDS (default 30): see fuzz_test.sh.
exec "$(dirname "$0")/fuzz_test.sh" daemon
