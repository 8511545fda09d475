#!/bin/bash
# Fuzzes libdevmem's receive path for DEVMEM_FUZZ_SECONDS (default 20) each
# (selftests/fuzz_run.sh): fuzz_cmsg, the cmsg parser
# (devmem_rx_parse_next), from fuzz/corpus, and fuzz_rx, the token handling
# (every dma-buf token returned exactly once), from fuzz/corpus_rx. `make
# -C userspace/libdevmem fuzz` runs them for 10 minutes each.
top=$(cd "$(dirname "$0")/../../.." && pwd)
exec "$top/selftests/fuzz_run.sh" "$top/userspace/libdevmem/fuzz" \
	"${DEVMEM_FUZZ_SECONDS:-20}" fuzz_cmsg:corpus:512 fuzz_rx:corpus_rx:512
