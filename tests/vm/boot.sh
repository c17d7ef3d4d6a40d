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
# With RDMA_VM_INTERACTIVE=1 the console is this terminal (for 'make shell'), also
# logged to console.log (a kernel that panicked while booting is booted again), and
# there is no time limit.  With RDMA_VM_NODE=K, RDMA_VM_NODES=N (2 to 4, default 2)
# and RDMA_VM_WIRE_PORT=PORT, the VM is node K of N on one virtual Ethernet segment
# (see below).  RDMA_VM_CPUS and RDMA_VM_MEM (MiB) size the VM (default 2 and 1024).
set -uo pipefail

usage="usage: boot.sh VM_DIR RESULTS_DIR COMMAND [ARG...]"
[ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
vm_dir=$(cd "$1" && pwd) || exit 1
mkdir -p "$2"
results=$(cd "$2" && pwd)
shift 2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
timeout_s=${RDMA_VM_TIMEOUT:-1500}

# The settings that cross into the guest, each under the one name it has on both
# sides: job.env exports those that are set.  Add a setting here and nowhere else.
forwarded=(RDMA_STEPS_BIN RDMA_STEPS_GCOV SOAK_ITERS BENCH_REPS BENCH_QUICK BENCH_COUNT_PASSES BENCH_COUNT_JOBS BENCH_ONLY STEP_TIMEOUT TIME_SCALE TRAIN_RANKS TRAIN_TIMEOUT
	BENCH_NODES_SIZES ZEROCOPY_SIZE ZEROCOPY_COUNT ZEROCOPY_REPS RDMA_VM_NODE RDMA_VM_NODES RDMA_VM_NETNS RDMA_VM_PLANES RDMA_VM_NETEM RDMA_VM_PROJECT_RW RDMA_VM_INTERACTIVE RDMA_VM_CONSOLE_SIZES RDMA_VM_ASLR RDMA_VM_HOSTNAME RDMA_VM_OTHER_SHELLS TERM LINES COLUMNS)
# make shell: the guest's console gets this terminal's size.
if [ -t 0 ]; then
	read -r LINES COLUMNS < <(stty size)
fi
rm -f "$results"/{status,console.log,job.env}
{
	printf 'RDMA_STEPS_ROOT=%q\n' "$root"
	printf 'RDMA_STEPS_VM_DIR=%q\n' "$vm_dir"
	for name in "${forwarded[@]}"; do
		[ -n "${!name:-}" ] && printf 'export %s=%q\n' "$name" "${!name}"
	done
	printf 'RDMA_STEPS_JOB=('
	printf '%q ' "$@"
	printf ')\n'
} >"$results/job.env"

# Under TCG the guest finds the TSC unstable and falls back to hpet, which has no
# vDSO path: every clock_gettime would be a system call, and a latency timed with
# it would time the clock.  QEMU's TSC follows the host's clock, so tsc is safe.
# At boot the kernel checks that the timer interrupt ticks (check_timer in
# arch/x86/kernel/apic/io_apic.c): on a busy host a TCG guest can miss its few
# ticks and panic ("IO-APIC + timer doesn't work!"); no_timer_check skips the
# check (timer_irq_works returns at once).
# prepare.sh unpacks the kernel, to spare the guest its decompression; else the vmlinuz.
kernel_image=$vm_dir/vmlinux
[ -f "$kernel_image" ] || kernel_image=$vm_dir/vmlinuz
# shellcheck disable=SC2054  # the commas belong to QEMU options
qemu=(qemu-system-x86_64
	-nodefaults -no-user-config -no-reboot
	-machine q35,accel=tcg -cpu max -smp "${RDMA_VM_CPUS:-2}" -m "${RDMA_VM_MEM:-1024}"
	-kernel "$kernel_image" -initrd "$vm_dir/initramfs.cpio.gz"
	-append "console=ttyS0 quiet loglevel=3 panic=-1 tsc=reliable clocksource=tsc no_timer_check rdma_steps_init=$root/tests/vm/guest-init.sh"
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
# make shell NODES=N as network namespaces (RDMA_VM_NETNS=N, interactive): node 1's shell
# is the serial console, as one VM's is; node K's, from 2 to N, a console of its own on
# virtio-serial (the guest's hvc(K-2)), behind the Unix socket nodeK.sock in
# RDMA_VM_CONSOLE_DIR, which node K's pane connects to (tests/vm/nodes.sh).
if [ "${RDMA_VM_INTERACTIVE:-0}" = 1 ] && [ -n "${RDMA_VM_NETNS:-}" ]; then
	console_dir=${RDMA_VM_CONSOLE_DIR:?boot.sh: RDMA_VM_NETNS in a shell needs RDMA_VM_CONSOLE_DIR, the folder of the consoles of nodes 2 to N}
	qemu+=(-device virtio-serial-pci)
	for ((k = 2; k <= RDMA_VM_NETNS; k++)); do
		qemu+=(-chardev "socket,id=node$k,path=$console_dir/node$k.sock,server=on,wait=off"
			-device "virtconsole,chardev=node$k,name=node$k")
	done
fi

# Several nodes (make shell NODES=N, make test-wire, make test-nodes): node 1's NIC
# sits on a QEMU hub, and the hub has one socket netdev per other node, listening on
# 127.0.0.1 port PORT + K - 2 for node K, which connects to it: one Ethernet segment,
# every frame flooded to every other node (a socket listens for one peer only, hence
# one per node).  Node 1 must be started first.
node_note=
if [ -n "${RDMA_VM_NODE:-}" ]; then
	nodes=${RDMA_VM_NODES:-2}
	case $nodes in 2 | 3 | 4) ;; *) echo "boot.sh: RDMA_VM_NODES must be 2, 3 or 4, not '$nodes'" >&2; exit 2 ;; esac
	case $RDMA_VM_NODE in
	[1-4]) [ "$RDMA_VM_NODE" -le "$nodes" ] ;;
	*) false ;;
	esac || { echo "boot.sh: RDMA_VM_NODE must be 1 to $nodes, not '$RDMA_VM_NODE'" >&2; exit 2; }
	port=${RDMA_VM_WIRE_PORT:?boot.sh: RDMA_VM_NODE needs RDMA_VM_WIRE_PORT, the first TCP port of the wire on 127.0.0.1}
	if [ "$RDMA_VM_NODE" = 1 ]; then
		# shellcheck disable=SC2054  # the commas belong to QEMU options
		qemu+=(-netdev hubport,id=wire,hubid=0)
		for ((k = 2; k <= nodes; k++)); do
			qemu+=(-netdev "socket,id=link$k,listen=127.0.0.1:$((port + k - 2))"
				-netdev "hubport,id=hub$k,hubid=0,netdev=link$k")
		done
		ports="port $port"
		[ "$nodes" -gt 2 ] && ports="ports $port to $((port + nodes - 2))"
	else
		qemu+=(-netdev "socket,id=wire,connect=127.0.0.1:$((port + RDMA_VM_NODE - 2))")
		ports="port $((port + RDMA_VM_NODE - 2))"
	fi
	qemu+=(-device "virtio-net-pci,netdev=wire,mac=52:54:00:00:00:0$RDMA_VM_NODE")
	node_note=", node $RDMA_VM_NODE of $nodes (the wire: 127.0.0.1 $ports)"
fi

kernel=$(readlink "$vm_dir/vmlinuz" | sed 's|.*/||')

# The first lines of the kernel's oops in LOG, where it says what failed: its tail is registers.
show_oops() { # LOG
	grep -m 1 -A 14 -E '(BUG:|Oops:|general protection|Kernel panic)' "$1" | sed 's/^/vm:   /' >&2
}

# A kernel that panics before guest-init.sh says "guest up" ran nothing of ours.  Under
# TCG Debian's 7.3.4 died so in 1 of 15 boots in a row on a 2-core host ("Oops: int3" in
# sched_clock_cpu, 1.4 s in, Fatal exception in interrupt: a vCPU ran a breakpoint the
# kernel had left in a static branch it was patching, after the patch was done; QEMU
# 7.2), and CI lost a run of make test-lossy to it.
# Say so, show the oops, and boot again, 3 boots at most.  A node on the QEMU hub is
# not booted again: its peer's socket takes one connection.
panicked_at_boot() {
	[ ! -s "$results/status" ] && grep -q 'Kernel panic' "$results/console.log" &&
		! grep -q 'vm: guest up' "$results/console.log"
}
if [ "${RDMA_VM_INTERACTIVE:-0}" = 1 ]; then
	# The name by which a later 'make shell' finds this one (tests/vm/shells.bash): its hostname.
	vm_hostname=${RDMA_VM_HOSTNAME:-rdma-vm}
	if [ -n "${RDMA_VM_NETNS:-}" ]; then
		vm_hostname=node1-to-node$RDMA_VM_NETNS
		node_note=", nodes 1 to $RDMA_VM_NETNS as network namespaces"
	fi
	# shellcheck source=tests/vm/shells.bash
	. "$root/tests/vm/shells.bash"
	qemu+=(-name "$SHELL_VM_TAG:$vm_hostname")
	echo "vm: booting $kernel under QEMU (TCG, no KVM)$node_note; the shell comes up in about 15 s"
	# The guest sends CR LF itself. QEMU keeps output processing on, so turn off
	# the LF -> CR LF mapping here: a bare LF must only move down (tmux relies on it).
	# QEMU also logs what the guest prints, so that a kernel that panicked while
	# booting (its oops is on this terminal) is seen, and booted again, as in a job.
	for i in "${!qemu[@]}"; do
		[ "${qemu[i]}" != stdio,id=console,signal=off ] || qemu[i]+=",logfile=$results/console.log"
	done
	saved_tty=$(stty -g)
	stty -onlcr
	boot_once() { "${qemu[@]}"; qemu_status=$?; }
	# The oops is on this terminal already; a line ends in CR LF while -onlcr holds.
	say_panicked() { # BOOT
		printf '%s\r\n' "vm: the guest's kernel panicked while booting, before anything of ours ran (its oops is above); booting again, boot $1 of 3"
	}
else
	boot_once() {
		echo "vm: booting $kernel under QEMU (TCG, no KVM)$node_note, timeout ${timeout_s}s"
		timeout -k 5 "$timeout_s" "${qemu[@]}" </dev/null 2>&1 | sed -u 's/\r$//' | tee "$results/console.log"
		qemu_status=${PIPESTATUS[0]}
	}
	say_panicked() { # BOOT
		echo "vm: the guest's kernel panicked while booting, before anything of ours ran (QEMU exit status $qemu_status); its oops:" >&2
		show_oops "$results/console.log"
		echo "vm: booting again, boot $1 of 3 (that console log kept in $results/console.panic$(($1 - 1)).log)" >&2
	}
fi

boot_once
for try in 2 3; do
	{ [ -z "${RDMA_VM_NODE:-}" ] && panicked_at_boot; } || break
	cp "$results/console.log" "$results/console.panic$((try - 1)).log"
	say_panicked "$try"
	boot_once
done

if [ "${RDMA_VM_INTERACTIVE:-0}" = 1 ]; then
	stty "$saved_tty"
	[ -s "$results/status" ] || exit 1
	exit "$(cat "$results/status")"
fi

if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
	echo "vm: the guest did not finish within ${timeout_s}s and was killed; console log kept in $results/console.log" >&2
	exit 1
fi
if [ ! -s "$results/status" ]; then
	echo "vm: the guest never reported a result (QEMU exit status $qemu_status); console log kept in $results/console.log" >&2
	grep -q 'Kernel panic' "$results/console.log" && show_oops "$results/console.log"
	exit 1
fi
exit "$(cat "$results/status")"
