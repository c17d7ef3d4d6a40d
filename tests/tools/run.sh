#!/usr/bin/env bash
# run.sh: run the test suite or the demo where RDMA works: natively on an existing device, else in the soft-RoCE VM.
#
# Usage: tests/tools/run.sh [--results DIR] test [BATS_FILE...]
#        tests/tools/run.sh [--results DIR] demo | bench | train [TRAIN_PY_ARG...] | serve [SERVE_PY_ARG...]
#        tests/tools/run.sh shell [NODES]   (an interactive shell in the VM; NODES=2 to 4: that many VMs on one wire)
# DIR, relative to the project's root, receives the results (default
# build/test-results, make test's own): a slow check's go to a folder of its own.
# RDMA_TEST_MODE=native or RDMA_TEST_MODE=vm forces a mode; the default picks
# native when /sys/class/infiniband lists a device and the VM otherwise.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
results=$root/build/test-results
if [ "${1:-}" = --results ]; then
	results=$root/${2:?tests/tools/run.sh: --results needs a folder}
	shift 2
fi
# shellcheck source=tests/vm/kernel-choice.bash
. "$root/tests/vm/kernel-choice.bash"
vm_dir=$(vm_kernel_dir "$root") || exit 1
what=${1:?usage: tests/tools/run.sh [--results DIR] test [BATS_FILE...] | demo | bench | train | serve | shell [NODES]}
shift

die() { echo "$what: $*" >&2; exit 1; }

first_device() { find /sys/class/infiniband -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort | head -n 1; }

choose_mode() {
	case ${RDMA_TEST_MODE:-auto} in
	native)
		[ -n "$(first_device)" ] || die "RDMA_TEST_MODE=native, but /sys/class/infiniband lists no RDMA device. Create one as root ('modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE') or use RDMA_TEST_MODE=vm"
		echo native ;;
	vm) echo vm ;;
	auto) if [ -n "$(first_device)" ]; then echo native; else echo vm; fi ;;
	*) die "RDMA_TEST_MODE must be native, vm or auto, not '$RDMA_TEST_MODE'" ;;
	esac
}

case $what in
test) job=(tests/tools/run-bats.sh "$@") ;; # in the VM: tests/tools/run-bats.sh --device "$@"
demo) job=(tests/tools/demo.sh) ;;
bench) job=(tests/bench/bench.sh) ;;
train) job=(steps/07_allreduce/train/train.sh "$@") ;;
serve) job=(steps/10_weight_sync/serve/serve.sh "$@") ;;
shell) job=(tests/vm/shell.sh) ;;
*) die "unknown action '$what' (test, demo, bench, train, serve or shell)" ;;
esac

start=$SECONDS
mode=$(choose_mode) || exit 1
mkdir -p "$results"
rm -f "$results/tap" "$results/outside-vm.tap"
if [ "$what" = shell ]; then
	nodes=${1:-1}
	case $nodes in 1 | 2 | 3 | 4) ;; *) die "NODES must be 1 to 4, not '$nodes'" ;; esac
	[ "$mode" = native ] && die "this machine has an RDMA device ($(first_device)): run the tutorial's commands here directly, or set RDMA_TEST_MODE=vm"
	{ [ -t 0 ] && [ -t 1 ]; } || die "needs a terminal: run 'make shell' from an interactive terminal"
	# RDMA_VM_ASLR: address randomisation stays on here, as on any host, so that each run
	# prints new buffer addresses (guest-init.sh turns it off for every other job, for speed).
	export RDMA_VM_INTERACTIVE=1 RDMA_VM_PROJECT_RW=1 RDMA_VM_ASLR=1
	# Another 'make shell' already running: say what one more means, here and in the banner.
	# shellcheck source=tests/vm/shells.bash
	. tests/vm/shells.bash
	running=$(running_shell_vms)
	if [ "$nodes" = 1 ]; then
		RDMA_VM_HOSTNAME=$(free_shell_hostname "$running")
		export RDMA_VM_HOSTNAME
		these="another VM, $RDMA_VM_HOSTNAME"
	else
		these="node1 to node$nodes, on a wire of their own"
	fi
	if [ -n "$running" ]; then
		other_shells_note "$running" "$these"
		RDMA_VM_OTHER_SHELLS=$(list_shell_vms "$running")
		export RDMA_VM_OTHER_SHELLS
	fi
fi
if [ "$mode" = native ]; then
	export RDMA_DEV=${RDMA_DEV:-$(first_device)} RDMA_STEPS_RESULTS=$results
	# RDMA_STEPS_GCOV: a coverage build's counts go under the results, as in the VM.
	[ -n "${RDMA_STEPS_GCOV:-}" ] && export GCOV_PREFIX=$results/gcov
	echo "$what: running natively on $RDMA_DEV"
	"${job[@]}"
	status=$?
else
	command -v qemu-system-x86_64 >/dev/null ||
		die "there is no RDMA device here and no QEMU to boot the soft-RoCE VM: run 'make deps' as root (it installs qemu-system-x86), or create an RDMA device and set RDMA_TEST_MODE=native"
	outside_status=0
	if [ "$what" = test ]; then
		# The tests tagged outside-vm run here, where a process costs far less than in
		# the emulated VM, and while the VM boots; their report follows the VM's.
		RDMA_DEV=none RDMA_STEPS_RESULTS=$results tests/tools/run-bats.sh --outside-vm "$@" >"$results/outside-vm.out" 2>&1 &
		outside_pid=$!
		trap 'kill "$outside_pid" 2>/dev/null' EXIT
		job=(tests/tools/run-bats.sh --device "$@")
	fi
	if [ "$what" = test ] && [ "$(bats --count --filter-tags '!outside-vm' "${@:-tests/}")" = 0 ]; then
		echo "test: none of these tests needs the VM"
		echo "1..0" >"$results/tap"
		status=0
	else
		tests/vm/prepare.sh "$vm_dir" || die "could not prepare the test VM (see the message above)"
		if [ "$what" = shell ] && [ "$nodes" != 1 ]; then
			tests/vm/nodes.sh "$nodes" "$vm_dir" "$results"
		else
			tests/vm/boot.sh "$vm_dir" "$results" "${job[@]}"
		fi
		status=$?
		# A coverage build's counts, which the guest leaves as one tar file (guest-init.sh).
		if [ -f "$results/gcov.tar" ]; then
			{ mkdir -p "$results/gcov" && tar -xf "$results/gcov.tar" -C "$results/gcov" && rm "$results/gcov.tar"; } ||
				{ echo "$what: could not unpack the VM's gcov counts, $results/gcov.tar" >&2; status=1; }
		fi
	fi
	if [ "$what" = test ]; then
		wait "$outside_pid" || outside_status=$?
		trap - EXIT
		echo "test: the tests tagged outside-vm, run here on the host while the VM booted"
		cat "$results/outside-vm.out"
		[ "$status" -ne 0 ] || status=$outside_status
	fi
fi
echo "$what: finished in $((SECONDS - start)) s ($mode)"
if [ "$what" = test ]; then
	tests/tools/slowest.sh "$results"/*tap
	tests/tools/failures.sh "$results/tap" ${outside_status+"$results/outside-vm.tap"}
	tests/tools/summarize.sh "$results/tap" ${outside_status+"$results/outside-vm.tap"} || exit 1
fi
exit "$status"
