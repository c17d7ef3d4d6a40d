#!/bin/bash
# guest-init.sh: PID 1 inside the test VM; brings up soft-RoCE (rxe0) and runs the bats suite.
#
# The host's root is mounted read-only at /; the writable 9p share "results"
# carries job.env in (the settings boot.sh forwards, under the same names) and the TAP output, the exit status and a log back out.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TMPDIR=/run/tmp LANG=C.UTF-8

# One VM: rxe0 on a dummy interface.  Each of 2 to 4 nodes: rxe0 on the virtio NIC that
# the wire joins, node K at 198.18.0.K (set once job.env is read).  Nodes as network
# namespaces (RDMA_VM_NETNS=N): no rxe0 here; tests/vm/netns-nodes.sh, the job, gives
# each namespace its own.
RXE_NETDEV=rxenet0
RXE_ADDR=198.18.0.1

say() { echo "vm: $*"; }

# busybox's poweroff -f makes the reboot system call at once; sysrq is the fallback.
power_off() {
	sync
	umount /run/results 2>/dev/null
	busybox poweroff -f
	echo o >/proc/sysrq-trigger
	read -r -t 10 <>/dev/console
}

finish() {
	echo "$1" >/run/results/status
	power_off
}

fail() {
	say "$*"
	finish 1
}

mount_filesystems() {
	mount -t proc proc /proc &&
		mount -t sysfs sys /sys &&
		mount -t devtmpfs dev /dev &&
		mkdir -p /dev/pts /dev/shm &&
		mount -t devpts devpts /dev/pts &&
		mount -t tmpfs tmp /dev/shm &&
		ln -sfn /proc/self/fd /dev/fd &&
		mount -t tmpfs run /run &&
		mkdir -p /run/results "$TMPDIR" &&
		mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results /run/results
}

# A writable /tmp for tools that ignore TMPDIR, unless the project itself lives under /tmp.
mount_tmp() {
	# shellcheck disable=SC2153  # set by job.env
	case $RDMA_STEPS_ROOT/ in
	/tmp/*) say "the project is under /tmp: /tmp stays the host's, read-only" ;;
	*) mount -t tmpfs tmp /tmp ;;
	esac
}

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# 198.18.0.1 as an IPv4-mapped GID, as sysfs prints it.
mapped_gid() {
	local IFS=.
	# shellcheck disable=SC2086  # split on the dots, on purpose
	set -- $RXE_ADDR
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4"
}

# rxe fills its GID table asynchronously: wait for the IPv4-mapped entry.
wait_for_gid() {
	local want gid
	want=$(mapped_gid)
	for _ in $(seq 1 100); do
		for gid in /sys/class/infiniband/rxe0/ports/1/gids/*; do
			[ "$(cat "$gid" 2>/dev/null)" = "$want" ] && return 0
		done
		sleep 0.1
	done
	return 1
}

# The interface rxe0 runs on: a dummy one, or a node's NIC on the wire.
start_netdev() {
	if [ -z "${RDMA_VM_NODE:-}" ]; then
		modprobe -d "$RDMA_STEPS_VM_DIR/kernel" dummy && ip link add "$RXE_NETDEV" type dummy
	else
		modprobe -d "$RDMA_STEPS_VM_DIR/kernel" virtio_net && ip link show "$RXE_NETDEV" >/dev/null
	fi
}

# rdma_ucm is the rdma_cm's door for user space (/dev/infiniband/rdma_cm), which --cm and rping use.
start_rxe() {
	echo "$RDMA_STEPS_VM_DIR/modprobe" >/proc/sys/kernel/modprobe
	modprobe -d "$RDMA_STEPS_VM_DIR/kernel" crypto-crc32 &&
		modprobe -d "$RDMA_STEPS_VM_DIR/kernel" rdma_rxe &&
		modprobe -d "$RDMA_STEPS_VM_DIR/kernel" rdma_ucm || return 1
	ip link set lo up || return 1
	[ -z "${RDMA_VM_NETNS:-}" ] || return 0
	start_netdev &&
		ip addr add "$RXE_ADDR/24" dev "$RXE_NETDEV" &&
		ip link set "$RXE_NETDEV" up &&
		rdma link add rxe0 type rxe netdev "$RXE_NETDEV" || return 1
	wait_for_gid
}

mount_filesystems || { say "mounting /proc, /sys, /dev, /tmp, /run or the results share failed"; power_off; }
# shellcheck source=/dev/null
. /run/results/job.env || fail "cannot read job.env from the results share"
if [ -n "${RDMA_VM_NODE:-}" ]; then
	RXE_NETDEV=eth0 RXE_ADDR=198.18.0.$RDMA_VM_NODE
	# The peer: node 1, the server and rank 0; node 1's own is node 2.
	peer=1
	[ "$RDMA_VM_NODE" = 1 ] && peer=2
	export RDMA_STEPS_NODES=${RDMA_VM_NODES:-2} RDMA_STEPS_PEER_ADDR=198.18.0.$peer
	hostname "node$RDMA_VM_NODE"
else
	# rdma-vm, or rdma-vm2 and on beside other 'make shell's (tests/vm/shells.bash).
	hostname "${RDMA_VM_HOSTNAME:-rdma-vm}"
fi
export RDMA_STEPS_NETDEV=$RXE_NETDEV RDMA_STEPS_ADDR=$RXE_ADDR
mount_tmp
# Address-space randomisation off, for every job but make shell's.  QEMU's emulator (TCG)
# keeps the code it has translated keyed by virtual address, so a library mapped at a new
# address in every process is translated again in every process.  Measured in this VM:
# /bin/true 56 ms with it, 19.5 ms without; bash -c : 145 ms and 55 ms.  Every test starts
# dozens of processes, and none compares addresses across runs.  make shell (RDMA_VM_ASLR=1,
# from run.sh and nodes.sh) keeps it on, as on any host: there a learner checks that the
# client's 'remote buffer' is the server's 'local buffer', and with it off both sides of
# every run print one address, so that check would prove nothing.
if [ "${RDMA_VM_ASLR:-0}" != 1 ]; then
	echo 0 >/proc/sys/kernel/randomize_va_space || say "could not turn address-space randomisation off: every process starts slower"
fi
say "guest up at $(uptime_s) s (kernel $(uname -r))"
if [ -n "${RDMA_VM_NETNS:-}" ]; then
	start_rxe || fail "soft-RoCE set-up failed: the rdma_rxe module did not load"
	say "rdma_rxe loaded at $(uptime_s) s; the job brings up $RDMA_VM_NETNS namespaces"
else
	start_rxe || fail "soft-RoCE set-up failed: rxe0 on $RXE_NETDEV ($RXE_ADDR) did not come up"
	say "rxe0 ready on $RXE_NETDEV ($RXE_ADDR) at $(uptime_s) s"
	# A node's netem (make shell NODES=2 RDMA_VM_NETEM="loss 1%"): on RoCE v2 only, as
	# tests/vm/netns-nodes.sh puts it on each namespace's eth0.
	if [ -n "${RDMA_VM_NODE:-}" ] && [ -n "${RDMA_VM_NETEM:-}" ]; then
		read -ra netem_args <<<"$RDMA_VM_NETEM"
		"$RDMA_STEPS_ROOT/tests/vm/netem.sh" eth0 "${netem_args[@]}" || fail "RDMA_VM_NETEM: tests/vm/netem.sh eth0 $RDMA_VM_NETEM failed"
	fi
fi
# make shell: the project's own share, writable and uncached (see boot.sh).
if [ "${RDMA_VM_PROJECT_RW:-0}" = 1 ]; then
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap project "$RDMA_STEPS_ROOT" ||
		fail "cannot mount the project's share (mount_tag project) at $RDMA_STEPS_ROOT"
fi
cd "$RDMA_STEPS_ROOT" || fail "no project at $RDMA_STEPS_ROOT"
# A coverage build writes its gcov counts beside its objects, which are read-only
# here: GCOV_PREFIX sends them to the VM's own memory (/run is a tmpfs), and they leave
# once, when the job ends, as one tar file on the results share (gcov.tar), which
# tests/tools/run.sh unpacks into gcov/ on the host (make test-faults).  Each process
# merges its counts into its .gcda files as it exits, and over the 9p share, file by
# file, that made each run with a fault point a third slower.  Measured with 37 fault
# points of steps 04 and 05 (both sides, 696 .gcda files): the whole VM run took 45 s
# with the counts written to the share, 45 s again with them kept in memory and copied
# to the share file by file at the end, 33 s with this one tar, and 34 s with no coverage.
gcov_dir=
if [ -n "${RDMA_STEPS_GCOV:-}" ]; then
	gcov_dir=/run/gcov
	mkdir -p "$gcov_dir" && export GCOV_PREFIX=$gcov_dir
fi
RDMA_DEV=rxe0 RDMA_STEPS_RESULTS=/run/results "${RDMA_STEPS_JOB[@]}"
status=$?
if [ -n "$gcov_dir" ] && ! tar -C "$gcov_dir" -cf /run/results/gcov.tar .; then
	say "could not write the gcov counts of $gcov_dir to the results share (gcov.tar)"
	status=1
fi
finish "$status"
