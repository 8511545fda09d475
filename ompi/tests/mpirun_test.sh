#!/bin/bash
# btl/devtcp under the real mpirun on this host (loopback): ompi_info lists
# the component and its parameters; the MPI correctness program passes with
# only devtcp and self selected (so every message between ranks crossed
# devtcp), with 2 and 4 ranks and 1 and 3 data links, over IPv6 (lo's ::1),
# over two interfaces at once (lo and another; each carries messages both
# ways), and with btl/tcp as the control; so does the threaded program
# (mpi_threads, 8 threads per rank under MPI_THREAD_MULTIPLE); both under
# ASan and UBSan too (a sanitizer build of the component, the runtimes
# preloaded into each rank; Open MPI's own leaks keep the leak check off); a
# bad or twice-named btl_devtcp_if_include, family, data_links, put_limit,
# devmem_page_size, devmem_mem (also cuda with devmem_inplace, or where
# libcuda cannot be loaded) or connect_timeout ends MPI_Init with a message
# naming the parameter.
set -u
cd "$(dirname "$0")/../.." || exit 1
command -v mpirun > /dev/null || { echo "FAIL: mpirun is not installed (openmpi-bin, see selftests/vm/provision)"; exit 1; }
make -s -C ompi > /dev/null || { echo "FAIL: ompi/ does not build"; exit 1; }
make -s -C selftests/ompi > /dev/null || { echo "FAIL: selftests/ompi does not build"; exit 1; }
pkglib=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
export OMPI_MCA_mca_base_component_path=$PWD/ompi:$pkglib
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

info=$(ompi_info --param btl devtcp --level 9 2>&1)
if grep -q "MCA btl: devtcp" <<< "$info" &&
   [ "$(grep -c 'parameter "btl_devtcp_' <<< "$info")" -ge 6 ]; then
	ok "ompi_info lists btl/devtcp and its parameters"
else
	bad "ompi_info does not list btl/devtcp:"; sed 's/^/  /' <<< "$info" | head
fi
for p in if_include data_links data_min ctrl_port data_port verbose devmem devmem_size \
	devmem_queue devmem_inplace devmem_page_size devmem_mem devmem_cuda_device rdpm_socket \
	connect_timeout peer_timeout; do
	grep -A1 "\"btl_devtcp_$p\"" <<< "$info" | tail -1 | grep -q '[a-z]' ||
		bad "btl_devtcp_$p has no help text"
done

# run NAME NP BTL [MCA ARGS...]: $prog (mpi_check unless set) must say ok on
# rank 0. The output stays in $last.
prog=(selftests/ompi/mpi_check)
run() {
	local what=$1 np=$2 btl=$3 out rc
	shift 3
	out=$(timeout 300 mpirun "${root[@]}" --oversubscribe -np "$np" --mca pml ob1 \
		--mca btl "$btl" "$@" "${prog[@]}" 2>&1)
	rc=$?
	last=$out
	if [ $rc = 0 ] && grep -q "^ok: .* 0 failures in all, $np ranks" <<< "$out"; then
		ok "$what: $(grep '^ok:' <<< "$out")"
	else
		bad "$what (exit $rc):"; sed 's/^/  /' <<< "$out" | tail -15
	fi
}
run "2 ranks, btl devtcp,self" 2 devtcp,self
run "4 ranks, btl devtcp,self, 3 data links" 4 devtcp,self --mca btl_devtcp_data_links 3
run "4 ranks, btl devtcp,self, every payload on the control connection" 4 devtcp,self \
	--mca btl_devtcp_data_min 1000000000
run "4 ranks, btl tcp,self (the control)" 4 tcp,self
# puts: how many a run's ranks received, from their verbose-5 summaries.
puts() { sed -n 's/.*btl:devtcp: [^:]*: \([0-9]*\) puts .*/\1/p' <<< "$last" | awk '{ s += $1 } END { print s + 0 }'; }
run "2 ranks, btl devtcp,self, large messages by put (the default)" 2 devtcp,self \
	--mca btl_devtcp_verbose 5
[ "$(puts)" -gt 0 ] && ok "... whose ranks received $(puts) puts" ||
	bad "... whose ranks received no put"
run "2 ranks, btl devtcp,self, sends only (btl_devtcp_flags send,inplace)" 2 devtcp,self \
	--mca btl_devtcp_flags send,inplace --mca btl_devtcp_verbose 5
[ "$(puts)" = 0 ] && grep -q "puts (0 bytes) received" <<< "$last" &&
	ok "... whose ranks received no put" || bad "... whose ranks received $(puts) puts"
if ip -6 addr show dev lo 2> /dev/null | grep -q "inet6 ::1/"; then
	run "2 ranks, btl devtcp,self over IPv6 (lo's ::1, btl_devtcp_family 6)" 2 devtcp,self \
		--mca btl_devtcp_if_include lo --mca btl_devtcp_family 6 --mca btl_devtcp_verbose 5
	if grep -q "btl:devtcp: lo ::1/128: control port" <<< "$last"; then
		ok "... each rank listening on ::1"
	else
		bad "... whose ranks did not say they listen on ::1"
	fi
else
	echo "SKIP: IPv6 run: this host's loopback has no ::1"
fi

# Two interfaces (lo and the first other one up with an IPv4 address): one
# module each, ob1 spreading messages over both; per interface, what one
# rank sent the other received.
second=$(ip -4 -o addr show up 2> /dev/null | awk '$2 != "lo" { print $2; exit }')
if [ -n "$second" ]; then
	# lo by name, the other by its subnet
	net=$(ip -4 -o addr show dev "$second" | awk '{ print $4; exit }')
	run "2 ranks over two interfaces (btl_devtcp_if_include lo,$net: lo and $second)" 2 \
		devtcp,self --mca btl_devtcp_if_include "lo,$net" --mca btl_devtcp_verbose 5
	for dev in lo "$second"; do
		tx=$(sed -n "s/.*btl:devtcp: $dev: [0-9]* messages (\([0-9]*\) bytes) sent.*/\1/p" <<< "$last")
		rx=$(sed -n "s/.*btl:devtcp: $dev: .* sent, [0-9]* (\([0-9]*\) bytes) received/\1/p" <<< "$last")
		# 2 ranks: rank A's sent is rank B's received, so the sorted lists match
		if [ "$(wc -w <<< "$tx")" = 2 ] && [ "$(echo $tx | tr ' ' '\n' | sort)" = "$(echo $rx | tr ' ' '\n' | sort)" ] &&
		   [ "$(echo $tx | tr ' ' '\n' | sort -n | head -1)" -ge 1000000 ]; then
			ok "... $dev carried messages both ways, each byte sent received: $(echo $tx) bytes"
		else
			bad "... $dev: sent '$(echo $tx)', received '$(echo $rx)' bytes"
		fi
	done
else
	echo "SKIP: two-interface run: no interface but lo is up with an IPv4 address"
fi

# MPI_THREAD_MULTIPLE: 8 threads per rank send, receive (also with
# MPI_ANY_SOURCE on a shared communicator) and reduce at once.
prog=(selftests/ompi/mpi_threads 8 2)
run "2 ranks x 8 threads, MPI_THREAD_MULTIPLE, btl devtcp,self" 2 devtcp,self \
	--mca btl_devtcp_verbose 5
grep -q "interface(s); threads: MPI_THREAD_MULTIPLE" <<< "$last" &&
	ok "... each rank's btl/devtcp serving MPI_THREAD_MULTIPLE" ||
	bad "... whose ranks did not say btl/devtcp serves MPI_THREAD_MULTIPLE"
run "4 ranks x 8 threads, btl devtcp,self, 3 data links" 4 devtcp,self \
	--mca btl_devtcp_data_links 3
run "4 ranks x 8 threads, btl tcp,self (the control)" 4 tcp,self
prog=(selftests/ompi/mpi_check)

san=$PWD/build/ompi-san
make -s -C ompi O="$san" SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" > /dev/null ||
	{ echo "FAIL: the sanitizer build of ompi/ fails"; exit 1; }
preload=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)
OMPI_MCA_mca_base_component_path=$san:$pkglib \
	run "4 ranks, btl devtcp,self, 3 data links, under ASan and UBSan" 4 devtcp,self \
	--mca btl_devtcp_data_links 3 -x LD_PRELOAD="$preload" -x ASAN_OPTIONS=detect_leaks=0 \
	-x UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
prog=(selftests/ompi/mpi_threads 8 2)
OMPI_MCA_mca_base_component_path=$san:$pkglib \
	run "4 ranks x 8 threads, btl devtcp,self, 3 data links, under ASan and UBSan" 4 \
	devtcp,self --mca btl_devtcp_data_links 3 -x LD_PRELOAD="$preload" \
	-x ASAN_OPTIONS=detect_leaks=0 -x UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
prog=(selftests/ompi/mpi_check)

# refused WHAT MESSAGE MCA ARGS...: MPI_Init fails, saying MESSAGE.
refused() {
	local what=$1 msg=$2 out rc
	shift 2
	out=$(timeout 120 mpirun "${root[@]}" -np 2 --mca pml ob1 --mca btl devtcp,self "$@" \
		selftests/ompi/mpi_check 2>&1)
	rc=$?
	if [ $rc != 0 ] && grep -qF "$msg" <<< "$out"; then
		ok "$what fails the job (exit $rc) naming the parameter"
	else
		bad "$what (exit $rc):"; sed 's/^/  /' <<< "$out" | tail -8
	fi
}
refused "a bad btl_devtcp_if_include" \
	"no interface named nosuchif0 is up with an address (MCA parameters btl_devtcp_if_include" \
	--mca btl_devtcp_if_include nosuchif0
refused "btl_devtcp_if_include lo,127.0.0.0/8" \
	"btl_devtcp_if_include: 127.0.0.0/8 is interface lo again" \
	--mca btl_devtcp_if_include lo,127.0.0.0/8
refused "btl_devtcp_if_include 10.0.0.0/33" \
	"btl_devtcp_if_include: '10.0.0.0/33' is neither an interface name nor a subnet" \
	--mca btl_devtcp_if_include 10.0.0.0/33
refused "btl_devtcp_family 5" "btl_devtcp_family is 5: want 0" --mca btl_devtcp_family 5
refused "btl_devtcp_connect_timeout 0" "btl_devtcp_connect_timeout is 0 and btl_devtcp_peer_timeout" \
	--mca btl_devtcp_connect_timeout 0
refused "btl_devtcp_data_links 9" "btl_devtcp_data_links is 9; it must be 1-8" \
	--mca btl_devtcp_data_links 9
refused "btl_devtcp_put_limit 2 GiB" \
	"btl_devtcp_put_limit (2147483648) and btl_devtcp_rdma_pipeline_frag_size (1073741824) must be at most" \
	--mca btl_devtcp_put_limit 2147483648
refused "btl_devtcp_devmem_page_size 12288" \
	"btl_devtcp_devmem_page_size is 12288: want 0 or a power of two" \
	--mca btl_devtcp_devmem_page_size 12288
refused "btl_devtcp_devmem_mem gpu" "btl_devtcp_devmem_mem is 'gpu': want udmabuf or cuda" \
	--mca btl_devtcp_devmem_mem gpu
refused "btl_devtcp_devmem_mem cuda with btl_devtcp_devmem_inplace 1" \
	"btl_devtcp_devmem_inplace is 1 and btl_devtcp_devmem_mem is cuda" \
	--mca btl_devtcp_devmem_mem cuda --mca btl_devtcp_devmem_inplace 1
refused "btl_devtcp_devmem_mem cuda where there is no libcuda" \
	"btl_devtcp_devmem is on; btl_devtcp_devmem_mem is cuda, btl_devtcp_devmem_cuda_device 0)" \
	--mca btl_devtcp_devmem on --mca btl_devtcp_devmem_mem cuda -x DEVMEM_LIBCUDA=/nonexistent/libcuda.so.1
[ $fails = 0 ]
