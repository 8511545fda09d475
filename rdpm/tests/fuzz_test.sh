#!/bin/bash
# Fuzzes rdpmd (selftests/fuzz_run.sh) for RDPM_FUZZ_SECONDS each: by
# default the request parser (fuzz/corpus) and STEER's flow arithmetic
# (fuzz/corpus_owner), 15 s each; with the argument "daemon", the whole
# read path with fds on a fake NIC layer (fuzz_daemon_test.sh,
# fuzz/corpus_daemon, 30 s). A leaked fd or a broken invariant aborts the
# target, so it fails like a crash. `make -C rdpm/fuzz fuzz` runs each for
# 10 minutes.
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = daemon ]; then
	exec "$top/selftests/fuzz_run.sh" "$top/rdpm/fuzz" "${RDPM_FUZZ_SECONDS:-30}" \
		fuzz_daemon:corpus_daemon:4096
fi
exec "$top/selftests/fuzz_run.sh" "$top/rdpm/fuzz" "${RDPM_FUZZ_SECONDS:-15}" \
	fuzz_proto:corpus:1200 fuzz_owner:corpus_owner:256
