#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libdevmem memory: udmabuf (4 KiB and, with huge pages reserved, 2 MiB
# pages) and the system dma-heap, each written through the CPU mapping and
# read back through devmem_mem_read() (and the reverse), seen in
# dma_buf/bufinfo with its size and gone after freeing; the errors and
# their messages; first CPU accesses by several processes at once; CUDA
# memory, which without a GPU must fail with -ENODEV.
. "$(dirname "$0")/../lib.sh"

t=selftests/libdevmem/mem_test
[ -x $t ] || fail "$t is not built (make)"
[ -r /sys/kernel/debug/dma_buf/bufinfo ] || fail "no dma-buf accounting in debugfs"
[ -e /dev/udmabuf ] || fail "no /dev/udmabuf in the test kernel"

# run NAME ARGS...: mem_test ARGS, its output kept in /tmp/mem.out.
run() { $t "$@" > /tmp/mem.out 2>&1; local rc=$?; cat /tmp/mem.out; return $rc; }
# says TEXT: the last run's output contains TEXT.
says() { grep -qF -- "$1" /tmp/mem.out; }
bufs0=$(dmabufs)

check "udmabuf of 8 MiB: pattern written, read back, in bufinfo, freed" run udmabuf 8388608
check "udmabuf of 5000 bytes: rounded up to 2 pages" run udmabuf 5000
check "... its size is 8192" says "size 8192,"
# udmabuf builds its CPU-access table at the first sync, unlocked: libdevmem
# builds it at creation, or first syncs at once by the processes sharing a
# buffer leak one (kmemleak, in make check-debug, fails the run on it).
check "8 processes syncing a new udmabuf at once, 20 times, all succeed" run race 8 20
check "system heap buffer of 8 MiB: the same" run heap 8388608
check "system heap buffer of 1 byte: rounded up to a page" run heap 1
check "... its size is 4096" says "size 4096,"

# Huge pages: 4 reserved, a 5 MiB request takes 3 of them.
huge0=$(cat /proc/sys/vm/nr_hugepages)
restore_huge() { echo "$huge0" > /proc/sys/vm/nr_hugepages; }
trap restore_huge EXIT
echo 0 > /proc/sys/vm/nr_hugepages
check "HUGEPAGES udmabuf without free huge pages fails" run fail huge 4194304
check "... saying so and how to reserve them" \
	says ": no free 2 MiB huge pages for it (0 free, 2 needed: echo N > /proc/sys/vm/nr_hugepages)"
check "... for the 4 MiB asked" says "udmabuf of 4 MiB: "
echo 4 > /proc/sys/vm/nr_hugepages
if [ "$(cat /proc/sys/vm/nr_hugepages)" -lt 4 ]; then
	echo "FAIL: cannot reserve 4 huge pages (got $(cat /proc/sys/vm/nr_hugepages))"
	fails=$((fails + 1))
else
	check "HUGEPAGES udmabuf of 5 MiB (3 huge pages): pattern, bufinfo, freed" \
		run huge 5242880
	check "... its size is 6 MiB" says "size 6291456,"
	check "... and its huge pages are free again" \
		test "$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)" = 4
	check "HUGEPAGES udmabuf of 16 MiB with 4 huge pages fails" run fail huge 16777216
	check "... with the count free and needed" says "(4 free, 8 needed: echo N > /proc/sys/vm/nr_hugepages)"
fi
restore_huge

# Over udmabuf's size limit: refused before any memory is touched. Debian
# sets no effective limit (a 3 GiB udmabuf would pin more than the VM has),
# so the test lowers it.
limit0=$(cat /sys/module/udmabuf/parameters/size_limit_mb)
echo "udmabuf size_limit_mb: $limit0"
echo 16 > /sys/module/udmabuf/parameters/size_limit_mb
check "udmabuf of 32 MiB beyond size_limit_mb (16 MiB) fails" run fail udmabuf 33554432
check "... with -E2BIG, naming the module parameter and its value" \
	says "error -7: udmabuf of 32 MiB: larger than udmabuf allows (udmabuf's size_limit_mb module parameter is 16 MiB"
check "udmabuf of exactly 16 MiB is still allowed" run udmabuf 16777216
echo "$limit0" > /sys/module/udmabuf/parameters/size_limit_mb
check "udmabuf of size 0 fails" run fail udmabuf 0
check "... saying so" says "error -22: udmabuf: size 0"
check "a heap name with '..' is refused" run fail heap ../system 4096
check "... as not a heap name" says "dma-heap \"../system\": not a heap name"
check "a heap that does not exist fails" run fail heap nosuchheap 4096
check "... listing the heaps there are" \
	says "/dev/dma_heap/nosuchheap: No such file or directory (heaps here: "
check "... system among them" grep -qE "heaps here: (.*, )?system" /tmp/mem.out
check "CPU access with no or unknown direction is refused" run fail cpu-dir

check "CUDA memory without a GPU: -ENODEV with the reason" run cuda
# The VM has no NVIDIA driver: the reason must be the missing libcuda.
if says "SKIP:"; then
	check "... libcuda missing in the VM is named" \
		says "CUDA memory: libcuda.so.1 not found (no NVIDIA driver on this host)"
fi

check "no dma-buf left behind (bufinfo: $bufs0 before, $(dmabufs) after)" \
	test "$(dmabufs)" = "$bufs0"
finish
