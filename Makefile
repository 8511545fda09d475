# SPDX-License-Identifier: GPL-2.0
# devtcp top-level build.
#
#   make            the product, on this host, as any user, without the test VM:
#                   libdevmem, libdevcoll, the tools, rdpmd and rdpmctl,
#                   btl/devtcp, and devtcp.ko for the running kernel when its
#                   headers are installed (else it says so and goes on)
#   make check      host tests + VM selftests; ends with "N passed, N failed"
#   make check-build what make check, demo and bench build: the test VM's cache
#                   (selftests/vm/provision, once; root), the modules for its
#                   kernels, the product, the selftests, btl/devtcp for the VM
#   make check-fresh `make demo` and `make check` in a clean Debian root (CI)
#   make check-debug the VM suite on a KASAN/lockdep/kmemleak kernel (not in CI)
#   make demo       bring up a devtcp NIC pair in the VM and move data over it
#   make bench      benchmarks in the VM: devtcp pair vs veth, devmem vs plain receive
#   make bench-coll libdevcoll vs Open MPI and Gloo on the host (loopback, veth)
#   make checkpatch checkpatch.pl --strict over the kernel sources
#   make fuzz       every user-space fuzzer for 10 minutes (make check: seconds)
#
# The host packages each part needs are listed once, in selftests/host-deps:
# `make` checks those of the build and names what is missing; the targets of
# the tests install them all (as root).
#
# devtcp.ko for another kernel than the running one:
#   make -C kernel KDIR=/lib/modules/VERSION/build
# or with DKMS, rebuilt for every kernel the host installs (needs dkms):
#   make dkms-install   sources to /usr/src/devtcp-VERSION, dkms add + install
#                       (KVER=VERSION: for that kernel, not the running one)
#   make dkms-remove    dkms remove --all, and the sources go

# selftests/timed records each step's time for make check's table (build/).
T := selftests/timed

all: product module

# The product build's host packages: missing ones are named with the command
# that installs them.
build-deps:
	@selftests/host-deps check build

# liburing >= 2.10 for libdevmem (userspace/libdevmem/uring.mk): the system's,
# $(LIBURING) when given, else Debian forky's, unpacked into build/liburing
# (downloaded once; no root).
liburing: build-deps
	@if [ -z "$(LIBURING)" ] && ! pkg-config --atleast-version=2.10 liburing 2> /dev/null; then \
		selftests/host-deps liburing build/liburing; \
	fi

product: liburing
	@$(T) "build userspace" $(MAKE) -s -C userspace
	@$(T) "build rdpm" $(MAKE) -s -C rdpm
	@$(T) "build ompi" $(MAKE) -s -C ompi

# devtcp.ko for the running kernel, when its headers are there.
KDIR ?= /lib/modules/$(shell uname -r)/build
module:
	@if [ -d "$(KDIR)" ]; then \
		$(T) "build kernel (running kernel)" $(MAKE) -s -C kernel KDIR="$(KDIR)"; \
	else \
		echo "*** devtcp.ko NOT built: no kernel headers at $(KDIR)" >&2; \
		echo "*** for the running kernel: apt-get install linux-headers-$$(uname -r), then make" >&2; \
		echo "*** for another kernel: make -C kernel KDIR=/lib/modules/VERSION/build" >&2; \
	fi

# What make check, demo and bench use. Provisioning comes first: it installs
# every host package the rest builds with.
check-build: provision
	@$(MAKE) -s --no-print-directory vm-modules product tests-build

provision:
	@$(T) provision selftests/vm/provision

# Modules built in the VM's root for its kernels, and the DKMS build for the
# LTS one (after provision: check-build).
MODULE_DIRS := kernel selftests/harness/warn selftests/harness/bar
# Tests that run on the LTS kernel too need their modules built for it.
LTS_MODULE_DIRS := kernel selftests/harness/bar
vm-modules:
	@for d in $(MODULE_DIRS); do \
		$(T) "build $$d (test kernel)" selftests/vm/kbuild $$d -s || exit 1; \
	done
	@for d in $(LTS_MODULE_DIRS); do \
		$(T) "build $$d (LTS kernel)" selftests/vm/kbuild --lts $$d -s || exit 1; \
	done
	@$(MAKE) -s build/dkms-lts.tar

# the sources dkms-install copies, and the root's DKMS build depends on
DKMS_KERNEL_FILES = kernel/Kbuild kernel/Makefile $(filter-out %.mod.c,$(wildcard kernel/*.[ch]))
DKMS_UAPI_FILES = $(wildcard uapi/linux/*.h)

# DKMS's build for the LTS kernel, done in the VM's root (selftests/kernel/dkms.sh
# loads and removes it in the VM). vm-modules asks for it by name; other
# goals (make: the product) leave the cache alone.
DEVTCP_CACHE ?= /var/cache/devtcp
KVER_LTS := $(if $(filter build/dkms-lts.tar,$(MAKECMDGOALS)),$(wildcard $(DEVTCP_CACHE)/kver-lts))
build/dkms-lts.tar: dkms.conf Makefile $(DKMS_KERNEL_FILES) $(DKMS_UAPI_FILES) \
		selftests/vm/dkms-build $(KVER_LTS)
	@$(T) "DKMS build for the LTS kernel" selftests/vm/dkms-build

# The tests' programs on the host, and btl/devtcp built in the VM's root
# against its Open MPI.
tests-build: product
	@$(T) "build selftests/net" $(MAKE) -s -C selftests/net
	@$(T) "build selftests/libdevmem" $(MAKE) -s -C selftests/libdevmem
	@$(T) "build selftests/rdpm" $(MAKE) -s -C selftests/rdpm
	@$(T) "build selftests/coll" $(MAKE) -s -C selftests/coll
	@$(T) "build userspace/libdevcoll/tests" $(MAKE) -s -C userspace/libdevcoll/tests fake_cuda.so
	@$(T) "build selftests/ompi" $(MAKE) -s -C selftests/ompi
	@$(T) "build ompi for the VM" selftests/vm/in-root make -s -C /devtcp/ompi O=/devtcp/build/ompi-vm OMPI_SRC=/usr/src/ompi-src
	@$(T) "build selftests/ompi for the VM" selftests/vm/in-root make -s -C /devtcp/selftests/ompi O=/devtcp/build/ompi-vm

# The host packages of the tests and benchmarks too (root).
test-deps:
	@selftests/host-deps install all

check: check-build
	@selftests/check

fuzz: test-deps
	@$(MAKE) -s --no-print-directory product
	$(MAKE) -C rdpm/fuzz fuzz
	$(MAKE) -C ompi fuzz
	$(MAKE) -C userspace/libdevcoll fuzz
	$(MAKE) -C userspace/libdevmem fuzz

check-fresh:
	@selftests/fresh/run

check-debug:
	@selftests/check-debug

demo: check-build
	@$(T) "make demo's VM run" selftests/vm/run -- selftests/demo.sh

bench: check-build
	@selftests/bench/run

bench-coll: test-deps
	@$(MAKE) -s --no-print-directory product
	@selftests/bench/coll

checkpatch: provision
	@selftests/checkpatch.sh

DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' dkms.conf)
DKMS_SRC := /usr/src/devtcp-$(DKMS_VERSION)

dkms-install:
	@command -v dkms > /dev/null || { echo "dkms-install: install dkms first (apt-get install dkms)" >&2; exit 1; }
	@if dkms status devtcp/$(DKMS_VERSION) | grep -q .; then dkms remove -q devtcp/$(DKMS_VERSION) --all; fi
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)/kernel $(DKMS_SRC)/uapi/linux
	cp dkms.conf $(DKMS_SRC)/
	cp $(DKMS_KERNEL_FILES) $(DKMS_SRC)/kernel/
	cp $(DKMS_UAPI_FILES) $(DKMS_SRC)/uapi/linux/
	dkms add devtcp/$(DKMS_VERSION)
	dkms install devtcp/$(DKMS_VERSION) $(if $(KVER),-k $(KVER))

dkms-remove:
	@command -v dkms > /dev/null || { echo "dkms-remove: dkms is not installed" >&2; exit 1; }
	@if dkms status devtcp/$(DKMS_VERSION) | grep -q .; then dkms remove devtcp/$(DKMS_VERSION) --all; fi
	rm -rf $(DKMS_SRC)

clean:
	@if [ -d build/vm ]; then \
		for d in $(MODULE_DIRS); do selftests/vm/kbuild $$d clean -s; done; \
	elif [ -d "$(KDIR)" ]; then \
		$(MAKE) -s -C kernel KDIR="$(KDIR)" clean; \
	fi
	@$(MAKE) -s -C userspace clean
	@$(MAKE) -s -C rdpm clean
	@$(MAKE) -s -C selftests/rdpm clean
	@$(MAKE) -s -C selftests/net clean
	@$(MAKE) -s -C selftests/libdevmem clean
	@$(MAKE) -s -C selftests/coll clean
	@$(MAKE) -s -C ompi clean
	@$(MAKE) -s -C selftests/ompi clean

.PHONY: all build-deps liburing product module check-build provision vm-modules tests-build test-deps \
	check check-fresh check-debug fuzz demo bench bench-coll checkpatch dkms-install dkms-remove clean
