#!/usr/bin/env bash
# node.sh: one node's job in make test-zerocopy: TCP with send() and MSG_ZEROCOPY (build/tools/zerocopy), then step 05's pipelined RDMA WRITE at the same size, on loopback in node 1 and from node 2 to node 1.
#
# Runs in each of two nodes (tests/zerocopy/zerocopy.sh boots them: namespaces of one VM,
# or two VMs on QEMU's hub), with RDMA_VM_NODE, RDMA_DEV, RDMA_STEPS_ADDR and
# RDMA_STEPS_PEER_ADDR set.  Node 2 sends to node 1, TCP then RDMA; then node 1, alone,
# runs both ends of each program on itself (loopback: 127.0.0.1, and its own rxe device).
# ZEROCOPY_SIZE (default 65536), ZEROCOPY_COUNT (64) and ZEROCOPY_REPS (1) set the runs: each
# repetition one run of COUNT messages a mode; step 05 moves COUNT x REPS messages.
# Writes, in RDMA_STEPS_RESULTS: CASE.tcp.log (the sender), CASE.tcp.recv.log (the receiver),
# CASE.rdma.log (step 05's initiator), CASE.rdma.srv.log (its target), CASE loopback or
# nodes; status.tsv (each program and its exit status); netdev.txt (the kernel, eth0's
# driver and, for virtio-net, the feature bits the guest took).
set -uo pipefail
bin=${RDMA_STEPS_BIN:-build/bin}
tool=build/tools/zerocopy
out=${RDMA_STEPS_RESULTS:?}
node=${RDMA_VM_NODE:?node.sh runs in one of two nodes (tests/zerocopy/zerocopy.sh)}
dev=${RDMA_DEV:?node.sh runs in one of two nodes (tests/zerocopy/zerocopy.sh)}
size=${ZEROCOPY_SIZE:-65536}
count=${ZEROCOPY_COUNT:-64}
reps=${ZEROCOPY_REPS:-1}
# Ports of their own: 18611 to 18614.  Node 2 connects once node 1 listens: the programs
# retry their connection for the whole -t.
tcp=(-s "$size" -n "$count" -r "$reps" -t 120)
rdma=(-d "$dev" -o write -s "$size" -n "$((count * reps))" -D 64 -t 120)

say() { echo "node $node: $*"; }

# Runs NAME's COMMAND..., its output to NAME.log, and notes its exit status.
ran() { # NAME COMMAND...
	local name=$1 status
	shift
	timeout -k 5 300 "$@" >"$out/$name.log" 2>&1
	status=$?
	printf '%s\t%s\n' "$name" "$status" >>"$out/status.tsv"
	say "$name: exit status $status"
}

# Both ends of CASE's two programs, server then client: the TCP pair, then step 05's.
both_ends() { # CASE HOST TCP_PORT RDMA_PORT
	ran "$1.tcp.recv" "$tool" -p "$3" "${tcp[@]}" &
	ran "$1.tcp" "$tool" -p "$3" "${tcp[@]}" "$2"
	wait
	ran "$1.rdma.srv" "$bin/05_poll_destroy" -p "$4" "${rdma[@]}" &
	ran "$1.rdma" "$bin/05_poll_destroy" -p "$4" "${rdma[@]}" "$2"
	wait
}

: >"$out/status.tsv"
{
	echo "kernel $(uname -r)"
	case $(ip -d -o link show dev eth0) in
	*veth*) echo "eth0 veth: one end of a pair into the VM's bridge, one kernel" ;;
	*)
		echo "eth0 driver $(basename "$(readlink /sys/class/net/eth0/device/driver)")"
		# The virtio device's feature bits as the guest took them, bit 0 first
		# (include/uapi/linux/virtio_net.h): bit 0, VIRTIO_NET_F_CSUM, is what
		# virtio_net asks before it offers scatter-gather (NETIF_F_SG).
		echo "eth0 virtio features $(cat /sys/class/net/eth0/device/features)"
		;;
	esac
} >"$out/netdev.txt"
case $node in
1)
	say "nodes: serving node 2"
	ran nodes.tcp.recv "$tool" -p 18613 "${tcp[@]}"
	ran nodes.rdma.srv "$bin/05_poll_destroy" -p 18614 "${rdma[@]}"
	# Then alone: node 2 has finished (and on the hub, powered off).
	say "loopback: $tool and step 05 with both ends here, over 127.0.0.1 and $dev"
	both_ends loopback 127.0.0.1 18611 18612
	;;
2)
	say "nodes: sending to node 1 at $RDMA_STEPS_PEER_ADDR"
	ran nodes.tcp "$tool" -p 18613 "${tcp[@]}" "$RDMA_STEPS_PEER_ADDR"
	ran nodes.rdma "$bin/05_poll_destroy" -p 18614 "${rdma[@]}" "$RDMA_STEPS_PEER_ADDR"
	;;
esac
exit 0
