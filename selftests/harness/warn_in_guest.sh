#!/bin/bash
# Used by vm_warn_test.sh only: a "test" that passes but makes the kernel warn.
insmod /devtcp/selftests/harness/warn/devtcp_harness_warn.ko
exit 0
