#!/usr/bin/env bash
# boot.sh: boot the soft-RoCE test VM under QEMU (software emulation) and collect its results.
#
# Usage: tests/vm/boot.sh VM_DIR RESULTS_DIR COMMAND [ARG...]
#
# COMMAND runs in the guest, from the project's root, once rxe0 is up, with
# RDMA_DEV=rxe0 and RDMA_STEPS_RESULTS naming RESULTS_DIR as the guest sees it.
# RESULTS_DIR receives status (COMMAND's exit status), console.log (everything
# the guest printed) and whatever COMMAND writes there.  A guest that has not powered
# off after RDMA_VM_TIMEOUT seconds (default 1500) is killed and counts as a failure.
# With RDMA_VM_INTERACTIVE=1 the console is this terminal (for 'make shell'):
# no log and no time limit.
set -uo pipefail

usage="usage: boot.sh VM_DIR RESULTS_DIR COMMAND [ARG...]"
[ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
vm_dir=$(cd "$1" && pwd) || exit 1
mkdir -p "$2"
results=$(cd "$2" && pwd)
shift 2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
timeout_s=${RDMA_VM_TIMEOUT:-1500}

rm -f "$results"/{status,console.log,job.env}
{
	printf 'RDMA_STEPS_ROOT=%q\n' "$root"
	printf 'RDMA_STEPS_VM_DIR=%q\n' "$vm_dir"
	printf 'RDMA_STEPS_BIN=%q\n' "${RDMA_STEPS_BIN:-}"
	printf 'RDMA_STEPS_GCOV=%q\n' "${RDMA_STEPS_GCOV:-}"
	printf 'SOAK_ITERS=%q\n' "${SOAK_ITERS:-}"
	printf 'BENCH_REPS=%q\n' "${BENCH_REPS:-}"
	printf 'RDMA_STEPS_PROJECT_RW=%q\n' "${RDMA_VM_PROJECT_RW:-0}"
	printf 'BENCH_QUICK=%q\n' "${BENCH_QUICK:-}"
	printf 'RDMA_STEPS_TERM=%q\n' "${TERM:-vt100}"
	if [ -t 0 ]; then
		stty size | awk '{ printf "RDMA_STEPS_ROWS=%d\nRDMA_STEPS_COLS=%d\n", $1, $2 }'
	fi
	printf 'RDMA_STEPS_JOB=('
	printf '%q ' "$@"
	printf ')\n'
} >"$results/job.env"

# Under TCG the guest finds the TSC unstable and falls back to hpet, which has no
# vDSO path: every clock_gettime would be a system call, and a latency timed with
# it would time the clock.  QEMU's TSC follows the host's clock, so tsc is safe.
# shellcheck disable=SC2054  # the commas belong to QEMU options
qemu=(qemu-system-x86_64
	-nodefaults -no-user-config -no-reboot
	-machine q35,accel=tcg -cpu max -smp 2 -m 1024
	-kernel "$vm_dir/vmlinuz" -initrd "$vm_dir/initramfs.cpio.gz"
	-append "console=ttyS0 quiet loglevel=3 panic=-1 tsc=reliable clocksource=tsc rdma_steps_init=$root/tests/vm/guest-init.sh"
	-display none -nic none
	-chardev stdio,id=console,signal=off -serial chardev:console
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap
	-virtfs "local,path=$results,mount_tag=results,security_model=none")
# The lab loop (make shell): the project, writable and uncached, over the read-only
# root's copy of it, so that 'make' works in the VM and a rebuild on the host is
# seen at once (the root's cache=loose keeps serving a relinked file's old inode).
if [ "${RDMA_VM_PROJECT_RW:-0}" = 1 ]; then
	qemu+=(-virtfs "local,path=$root,mount_tag=project,security_model=none,multidevs=remap")
fi

kernel=$(readlink "$vm_dir/vmlinuz" | sed 's|.*/||')
if [ "${RDMA_VM_INTERACTIVE:-0}" = 1 ]; then
	echo "vm: booting $kernel under QEMU (TCG, no KVM); the shell comes up in about 15 s"
	# The guest sends CR LF itself. QEMU keeps output processing on, so turn off
	# the LF -> CR LF mapping here: a bare LF must only move down (tmux relies on it).
	saved_tty=$(stty -g)
	stty -onlcr
	"${qemu[@]}"
	stty "$saved_tty"
	[ -s "$results/status" ] || exit 1
	exit "$(cat "$results/status")"
fi

echo "vm: booting $kernel under QEMU (TCG, no KVM), timeout ${timeout_s}s"
timeout -k 5 "$timeout_s" "${qemu[@]}" </dev/null 2>&1 | sed -u 's/\r$//' | tee "$results/console.log"
qemu_status=${PIPESTATUS[0]}

if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
	echo "vm: the guest did not finish within ${timeout_s}s and was killed; console log kept in $results/console.log" >&2
	exit 1
fi
if [ ! -s "$results/status" ]; then
	echo "vm: the guest never reported a result (QEMU exit status $qemu_status); console log kept in $results/console.log" >&2
	exit 1
fi
exit "$(cat "$results/status")"
