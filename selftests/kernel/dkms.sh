#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# DKMS's devtcp.ko on the booted kernel, as on a GPU host. `make` ran
# `make dkms-install KVER=<this kernel>` in this root at native speed
# (selftests/vm/dkms-build; compiling here, on an emulated CPU, took 12
# minutes) and kept what DKMS added and changed in build/dkms-lts.tar. The
# test lays that over the root's /usr/src, /var/lib/dkms and modules, as
# writable layers (the VM's root is read-only), and checks that DKMS counts
# the module installed, modprobe loads DKMS's module, a pair streams over
# it, and `make dkms-remove` leaves no module, no DKMS state and no sources.
. "$(dirname "$0")/../lib.sh"

command -v dkms > /dev/null || fail "dkms is not installed in the VM's root (selftests/vm/provision)"
kver=$(uname -r)
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' /devtcp/dkms.conf)
mods=/usr/lib/modules/$kver
tar=/devtcp/build/dkms-lts.tar
[ -f $tar ] || fail "no $tar: run make (selftests/vm/dkms-build) first"
tar -tf $tar | grep -q "^usr/lib/modules/$kver/updates/dkms/devtcp.ko" ||
	fail "build/dkms-lts.tar holds no DKMS build for $kver (it is made for the LTS kernel)"
modprobe overlay 2> /dev/null
for d in /usr/src /var/lib/dkms "$mods"; do
	mkdir -p "/tmp/dkms-layer$d/up" "/tmp/dkms-layer$d/work"
	tar -C "/tmp/dkms-layer$d/up" --strip-components=$(($(tr -cd / <<< "$d" | wc -c))) \
		-xf $tar "${d#/}" || fail "cannot unpack $tar's ${d#/}"
	mount -t overlay overlay -o "lowerdir=$d,upperdir=/tmp/dkms-layer$d/up,workdir=/tmp/dkms-layer$d/work" "$d" ||
		fail "cannot put a writable layer over $d"
done

# make TARGET, its output shown only when it fails.
dkms_make() {
	make -s -C /devtcp "$1" > /tmp/dkms.log 2>&1 && return 0
	tail -30 /tmp/dkms.log
	return 1
}
pair_streams() { devtcp_pair dta ns1 dtb ns2 && plain_stream 5500 20000000 5; }

rmmod devtcp 2> /dev/null
check "dkms status says devtcp $ver is installed for $kver" bash -c "dkms status devtcp/$ver -k $kver | grep -q installed"
ko=$(modinfo -n devtcp 2> /dev/null)
echo "modinfo: $ko"
check "modprobe finds DKMS's module" bash -c "[[ '$ko' == */modules/$kver/updates/dkms/devtcp.ko* ]]"
check "modprobe devtcp loads it" modprobe devtcp
check "it was built for this kernel" \
	bash -c "modinfo -F vermagic devtcp | grep -q '^$kver '"
check "a pair made with it streams intact" pair_streams
# Pages of freed skbs wait on idle CPUs' defer lists for a NET_RX softirq.
softirq_each_cpu ns2
softirq_each_cpu ns1
ip netns del ns1 2> /dev/null
ip netns del ns2 2> /dev/null
check "it unloads" rmmod devtcp

check "make dkms-remove succeeds" dkms_make dkms-remove
check "no devtcp module is left under $mods" \
	test -z "$(find "$mods" -name 'devtcp.ko*')"
check "no DKMS state is left" test ! -e /var/lib/dkms/devtcp
check "no sources are left" test ! -e "/usr/src/devtcp-$ver"
check "modprobe no longer finds devtcp" bash -c '! modinfo -n devtcp 2> /dev/null'

for d in "$mods" /var/lib/dkms /usr/src; do umount "$d"; done
# The suite goes on with the tree's module.
insmod "$DEVTCP_KO" || fail "cannot load $DEVTCP_KO again"
finish
