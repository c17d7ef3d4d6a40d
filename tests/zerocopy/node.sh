#!/usr/bin/env bash
# node.sh: one node's job in make test-zerocopy: TCP with send() and MSG_ZEROCOPY (build/tools/zerocopy), then step 05's pipelined RDMA WRITE at the same size, on loopback in node 1 and from node 2 to node 1.
#
# Runs in each of two nodes (tests/zerocopy/zerocopy.sh boots them: namespaces of one VM,
# or two VMs on QEMU's hub), with RDMA_VM_NODE, RDMA_DEV, RDMA_STEPS_ADDR and
# RDMA_STEPS_PEER_ADDR set.  Node 2 sends to node 1, TCP then RDMA; then node 1, alone,
# runs both ends of each program on itself (loopback: 127.0.0.1, and its own rxe device).
# ZEROCOPY_SIZE (default 65536), ZEROCOPY_COUNT (64) and ZEROCOPY_REPS (1) set the runs: each
# repetition one run of COUNT messages a mode; step 05 moves COUNT x REPS messages.
# Writes, in RDMA_STEPS_RESULTS, CASE loopback or nodes, MODE plain or zerocopy:
# CASE.tcp.MODE.log (the sender), CASE.tcp.MODE.recv.log (the receiver), CASE.rdma.log
# (step 05's initiator), CASE.rdma.srv.log (its target); status.tsv (each program and its exit status);
# netdev.txt (the kernel; eth0's driver, for virtio-net the feature bits the guest took, and
# its offloads as ethtool reads them).
set -uo pipefail
bin=${RDMA_STEPS_BIN:-build/bin}
tool=build/tools/zerocopy
out=${RDMA_STEPS_RESULTS:?}
node=${RDMA_VM_NODE:?node.sh runs in one of two nodes (tests/zerocopy/zerocopy.sh)}
dev=${RDMA_DEV:?node.sh runs in one of two nodes (tests/zerocopy/zerocopy.sh)}
size=${ZEROCOPY_SIZE:-65536}
count=${ZEROCOPY_COUNT:-64}
reps=${ZEROCOPY_REPS:-1}
# Ports of their own: 18611 to 18616.  Node 2 connects once node 1 listens: the programs
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

# CASE's TCP runs to HOST, one mode after the other, each a process of its own on
# PORT + K: CASE.tcp.MODE.log.
tcp_send() { # CASE HOST PORT
	local k=0 mode
	for mode in plain zerocopy; do
		ran "$1.tcp.$mode" "$tool" -p $(($3 + k)) -m "$mode" "${tcp[@]}" "$2"
		k=$((k + 1))
	done
}

# Their receivers: CASE.tcp.MODE.recv.log.
tcp_receive() { # CASE PORT
	ran "$1.tcp.plain.recv" "$tool" -p "$2" "${tcp[@]}"
	ran "$1.tcp.zerocopy.recv" "$tool" -p $(($2 + 1)) "${tcp[@]}"
}

# eth0 as the kernel reports it to ethtool (the legacy SIOCETHTOOL gets: ETHTOOL_GSG,
# ETHTOOL_GTXCSUM, ETHTOOL_GGSO, ETHTOOL_GTSO in include/uapi/linux/ethtool.h).
offloads() {
	python3 -c 'import array, fcntl, socket, struct
s = socket.socket()
for name, cmd in (("scatter-gather", 0x18), ("tx-checksumming", 0x16),
                  ("generic-segmentation-offload", 0x23), ("tcp-segmentation-offload", 0x1e)):
    buf = array.array("B", struct.pack("II", cmd, 0))
    fcntl.ioctl(s.fileno(), 0x8946, struct.pack("16sP", b"eth0", buf.buffer_info()[0]))
    print("eth0 " + name, "on" if struct.unpack("II", buf.tobytes())[1] else "off")'
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
	offloads
} >"$out/netdev.txt" 2>&1
case $node in
1)
	say "nodes: serving node 2"
	tcp_receive nodes 18613
	ran nodes.rdma.srv "$bin/05_poll_destroy" -p 18615 "${rdma[@]}"
	# Then alone: node 2 has finished (and on the hub, powered off).
	say "loopback: $tool and step 05 with both ends here, over 127.0.0.1 and $dev"
	tcp_receive loopback 18611 &
	tcp_send loopback 127.0.0.1 18611
	wait
	ran loopback.rdma.srv "$bin/05_poll_destroy" -p 18616 "${rdma[@]}" &
	ran loopback.rdma "$bin/05_poll_destroy" -p 18616 "${rdma[@]}" 127.0.0.1
	wait
	;;
2)
	say "nodes: sending to node 1 at $RDMA_STEPS_PEER_ADDR"
	tcp_send nodes "$RDMA_STEPS_PEER_ADDR" 18613
	ran nodes.rdma "$bin/05_poll_destroy" -p 18615 "${rdma[@]}" "$RDMA_STEPS_PEER_ADDR"
	;;
esac
exit 0
