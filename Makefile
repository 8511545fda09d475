# SPDX-License-Identifier: GPL-2.0
# devtcp top-level build.
#
#   make            provision the test kernel (once), build devtcp.ko and user space
#   make check      host tests + VM selftests; ends with "N passed, N failed"
#   make check-fresh `make demo` and `make check` in a clean Debian root (CI)
#   make check-debug the VM suite on a KASAN/lockdep/kmemleak kernel (not in CI)
#   make demo       bring up a devtcp NIC pair in the VM and move data over it
#   make bench      benchmarks in the VM: devtcp pair vs veth, devmem vs plain receive
#   make bench-coll libdevcoll vs Open MPI and Gloo on the host (loopback, veth)
#   make checkpatch checkpatch.pl --strict over the kernel sources
#
# Building for a real host's running kernel instead of the test kernel:
#   make -C kernel KDIR=/lib/modules/$(uname -r)/build

MODULE_DIRS := kernel selftests/harness/warn

all: modules userspace

provision:
	@selftests/vm/provision

modules: provision
	@for d in $(MODULE_DIRS); do \
		selftests/vm/kbuild $$d -s || exit 1; \
	done

userspace: provision
	@$(MAKE) -s -C userspace
	@$(MAKE) -s -C rdpm
	@$(MAKE) -s -C selftests/net
	@$(MAKE) -s -C selftests/libdevmem
	@$(MAKE) -s -C selftests/rdpm
	@$(MAKE) -s -C selftests/coll

check: all
	@selftests/check

check-fresh:
	@selftests/fresh/run

check-debug:
	@selftests/check-debug

demo: all
	@selftests/vm/run -- selftests/demo.sh

bench: all
	@selftests/bench/run

bench-coll: userspace
	@selftests/bench/coll

checkpatch: provision
	@selftests/checkpatch.sh

clean:
	@if [ -d build/vm ]; then \
		for d in $(MODULE_DIRS); do selftests/vm/kbuild $$d clean -s; done; \
	fi
	@$(MAKE) -s -C userspace clean
	@$(MAKE) -s -C rdpm clean
	@$(MAKE) -s -C selftests/rdpm clean
	@$(MAKE) -s -C selftests/net clean
	@$(MAKE) -s -C selftests/libdevmem clean
	@$(MAKE) -s -C selftests/coll clean

.PHONY: all provision modules userspace check check-fresh check-debug demo bench bench-coll checkpatch clean
