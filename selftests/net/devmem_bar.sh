#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# devmem RX into memory like a GPU's: BAR 2 of the VM's ivshmem device,
# exported by the test exporter (selftests/harness/bar) as NVIDIA's exporter
# exports BAR1, sg entries without struct pages. The device model maps it
# write-combined when the queue starts on it; every byte received is checked
# by reading the BAR through sysfs. Also: the bind refused cleanly while the
# memory is out of the device's reach (the dma-unreachable fault), the
# mapping gone with the binding, and nothing left behind.
# DEVTCP_BAR_BYTES sets the stream size (default 1 GiB).
. "$(dirname "$0")/../lib.sh"

bytes=${DEVTCP_BAR_BYTES:-1073741824}
q=3
# Built for the kernel that runs, beside its devtcp.ko (vm/run's DEVTCP_KO).
bar_ko=$(dirname "$DEVTCP_KO")/../selftests/harness/bar/devtcp_bar.ko
pci=
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x1af4:0x1110 ] && pci=${d##*/} && break
done
[ -n "$pci" ] || fail "no ivshmem device in the VM (selftests/vm/run adds one)"
insmod "$bar_ko" || fail "cannot load $bar_ko"
check "the exporter serves /dev/devtcp-bar" test -c /dev/devtcp-bar
bar_start=$(awk 'NR == 3 { print $1 }' "/sys/bus/pci/devices/$pci/resource")
bar_end=$(awk 'NR == 3 { print $2 }' "/sys/bus/pci/devices/$pci/resource")
echo "ivshmem $pci BAR 2 at $bar_start"
check "BAR 2 is not system RAM" \
	bash -c "! grep -i \"^ *${bar_start#0x}.*System RAM\" /proc/iomem"

devtcp_pair dta ns1 dtb ns2 || fail "cannot create the pair"
devmem_steer ns2 dtb $q 5001 5002 || fail "cannot steer ports 5001, 5002 to queue $q"
ifindex=$(ip netns exec ns2 cat /sys/class/net/dtb/ifindex)
pools() { page_pools ns2 "$ifindex"; }
stat() { ethtool_stat ns2 dtb "$1"; }
pools0=$(pools)
bufs0=$(dmabufs)
# The device's mapping of the BAR, as /proc/vmallocinfo lists it.
mapped() { grep -q "phys=0x0*${bar_start#0x0*} .*ioremap" /proc/vmallocinfo; }
unmapped() { ! mapped; }
check "the BAR is not mapped before a binding" unmapped

FAULT=/devtcp/userspace/tools/devtcp-fault
ip netns exec ns2 $FAULT set dtb dma-unreachable 1
restarts=$(stat rx${q}_restarts)
out=$(timeout $((20 * scale)) ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q \
	-p 5000 -n 1 --bar 2>&1)
rc=$?
echo "$out"
check "bind-rx of BAR memory out of the device's reach is refused (exit $rc)" test $rc = 1
check "... with EOPNOTSUPP" grep -q "Operation not supported" <<< "$out"
check "... at bind time: queue $q was not restarted" test "$(stat rx${q}_restarts)" = "$restarts"
check "... nor left mapped" unmapped
ip netns exec ns2 $FAULT set dtb dma-unreachable 0

: > /tmp/rx.out
timeout 900 ip netns exec ns2 selftests/net/devmem_rx -i dtb -q $q -p 5001 -n "$bytes" -s 31 \
	--bar > /tmp/rx.out 2>&1 &
rx=$!
wait_listen /tmp/rx.out
check "bound: the device maps the BAR" mapped
# PAT's memory types of the mappings in BAR 2 (the test's and the device's).
pat=/sys/kernel/debug/x86/pat_memtype_list
pat_types() {
	local range type start
	# "PAT: [mem 0xSTART-0xEND] TYPE"; the list's heading is skipped
	while read -r _ _ range type; do
		[[ $range == 0x* ]] || continue
		start=${range%%-*}
		((start >= bar_start && start <= bar_end)) && echo "$type"
	done < $pat | sort -u
}
if [ -r $pat ]; then
	check "... write-combined, as PAT has it: $(pat_types | tr '\n' ' ')" \
		test "$(pat_types)" = write-combining
else
	echo "# $pat not readable: the memory type is not checked"
fi
timeout 900 ip netns exec ns1 selftests/net/tcp_stream send -a 10.99.0.2 -p 5001 \
	-n "$bytes" -s 31 > /dev/null
wait $rx
rc=$?
cat /tmp/rx.out
check "$bytes bytes received into BAR memory, every byte checked in the BAR (exit $rc)" \
	bash -c "[ $rc = 0 ] && grep -q ' 0 mismatched' /tmp/rx.out"
check "... all of the payload through the dma-buf" grep -q " 0 linear in 0 frags" /tmp/rx.out
check "... with no frame dropped for DMA" test "$(stat rx${q}_dma_faults)" = 0
check "... nor any landing where no window reached" test "$(stat rx${q}_window_misses)" = 0

check_buffers_back ns2 "$ifindex" "$pools0" "$bufs0"
check "unbound: the mapping went with the binding" unmapped
teardown ns1 ns2
check "the exporter unloads once its dma-bufs are gone" rmmod devtcp_bar
finish
