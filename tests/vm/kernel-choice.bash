# kernel-choice.bash: which Debian kernel the test VM boots, and where its files live (sourced).
#
# RDMA_VM_KERNEL unset or empty: the kernel the host's own apt offers as
# linux-image-amd64 (on Debian 12, Linux 6.1), in build/vm.  RDMA_VM_KERNEL=SUITE:
# the newest linux-image-amd64 of that Debian suite on the host's own mirror, in
# build/vm/SUITE, fetched through a throwaway apt configuration and never installed:
# trixie-backports (Linux 7.x), trixie (6.12) or bookworm-backports (6.12).
# Each kernel has its own folder and cache, so switching back and forth costs nothing.

# The VM folder for RDMA_VM_KERNEL under ROOT, or a message and status 1.
vm_kernel_dir() { # ROOT
	local suite=${RDMA_VM_KERNEL:-}
	case $suite in
	'') echo "$1/build/vm" ;;
	*[!a-z0-9-]* | -* | kernel | cache | apt)
		echo "RDMA_VM_KERNEL='$suite' is not a Debian suite: use trixie-backports (Linux 7.x), trixie or bookworm-backports (6.12), or leave it unset for the host's own kernel" >&2
		return 1 ;;
	*) echo "$1/build/vm/$suite" ;;
	esac
}

# Whether the kernel prepared in VM_DIR keeps rxe's UDP socket per network namespace
# (rxe_ns.c, Linux 7.1 on), so that nodes can be namespaces of one VM: its rdma_rxe.ko
# holds rxe_ns_init.
rxe_per_netns() { # VM_DIR
	local ko
	ko=$(find "$1/kernel/" -name 'rdma_rxe.ko*' 2>/dev/null | head -n 1)
	[ -n "$ko" ] || return 1
	# grep -c reads to the end: -q would stop early and fail xz with SIGPIPE.
	[ "$(case $ko in
		*.xz) xz -dc "$ko" ;;
		*) cat "$ko" ;;
	esac | grep -ca rxe_ns_init)" -gt 0 ]
}
