#!/usr/bin/env bash
# netns-nodes.sh: N nodes as network namespaces in one VM, each with its own rxe device on a veth into one bridge, each running the same job (the guest's side of tests/vm/boot-nodes.sh on a kernel whose rxe works per namespace).
#
# Usage (in the VM, as its job, with RDMA_VM_NETNS=N): tests/vm/netns-nodes.sh N COMMAND [ARG...]
# Node K is the namespace nodeK: eth0 at 198.18.0.K/24, the other end of its veth
# (vethK) on the bridge nodes0 in the VM's own namespace, and the rxe device rxeK
# on eth0.  The bridge forgets every address at once (ageing_time 0), so it floods
# every frame to every port, as QEMU's hub does between VMs: node 1's tcpdump sees
# every node's packets.  Each node's COMMAND runs in its namespace and its own UTS
# namespace (hostname nodeK), with what a VM node has: RDMA_VM_NODE=K,
# RDMA_STEPS_NODES=N, RDMA_DEV=rxeK, RDMA_STEPS_NETDEV=eth0, RDMA_STEPS_ADDR,
# RDMA_STEPS_PEER_ADDR, RDMA_STEPS_RESULTS=RESULTS/nodeK (RESULTS: the VM's), a
# TMPDIR of its own.  Node K's output goes to RESULTS/nodeK/console.log and its exit
# status to RESULTS/nodeK/status, as boot.sh leaves them for a VM node.
# From Linux 7.1 (13f2a53c2a71, rxe_ns.c) rxe keeps its UDP socket per namespace; the devices are not per
# namespace ('rdma system show': netns shared): every node sees every rxeK, so a
# node names its own with -d and reads only its own in 'rdma resource show'.
# All nodes share one PID space: nothing here or in a node's job may kill by name.
# RDMA_VM_PLANES=2: a second plane, a network of its own beside the first, as AI
# fabrics give each node a NIC on each plane: node K's second veth (vethKb) on a second
# bridge, nodes1, eth1 at 198.18.1.K/24, and the rxe device rxeKb on it; the node's job
# is told it as RDMA_DEV2, RDMA_STEPS_NETDEV2, RDMA_STEPS_ADDR2 and RDMA_STEPS_PEER_ADDR2
# (RDMA_STEPS_PLANES=2).  Nothing crosses between the planes but through a node.
# RDMA_VM_NETEM (tests/vm/netem.sh's arguments after DEV, such as "loss 1%"): netem on
# every node's eth0, on RoCE v2 packets only, before any job starts; a node's job may
# change its own with tests/vm/netem.sh eth0 ... (it runs in the node's namespace).
set -uo pipefail
usage="usage: netns-nodes.sh N COMMAND [ARG...]"
n=${1:?$usage}
shift
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
results=${RDMA_STEPS_RESULTS:?netns-nodes.sh runs as the job of the VM that tests/vm/boot-nodes.sh boots}

say() { echo "netns: $*"; }
die() { echo "netns: $*" >&2; exit 1; }

case $n in [2-9] | 1[0-6]) ;; *) die "N must be 2 to 16, not '$n'" ;; esac
planes=${RDMA_VM_PLANES:-1}
case $planes in 1 | 2) ;; *) die "RDMA_VM_PLANES must be 1 or 2, not '$planes'" ;; esac

# 198.18.P.K as an IPv4-mapped GID, as sysfs prints it.
mapped_gid() { # K [P]
	printf '0000:0000:0000:0000:0000:ffff:c612:%02x%02x' "${2:-0}" "$1"
}

# rxe fills its GID table asynchronously: wait for the IPv4-mapped entry of DEV, node K's device on plane P.
wait_for_gid() { # K [DEV P]
	local want gid
	want=$(mapped_gid "$1" "${3:-0}")
	for _ in $(seq 1 100); do
		for gid in /sys/class/infiniband/"${2:-rxe$1}"/ports/1/gids/*; do
			[ "$(cat "$gid" 2>/dev/null)" = "$want" ] && return 0
		done
		sleep 0.1
	done
	return 1
}

start_node() { # K
	local k=$1
	ip netns add "node$k" &&
		ip link add "veth$k" type veth peer name eth0 netns "node$k" &&
		ip link set "veth$k" master nodes0 up &&
		ip -n "node$k" link set lo up &&
		ip -n "node$k" link set eth0 address "52:54:00:00:00:$(printf '%02x' "$k")" &&
		ip -n "node$k" addr add "198.18.0.$k/24" dev eth0 &&
		ip -n "node$k" link set eth0 up &&
		ip netns exec "node$k" rdma link add "rxe$k" type rxe netdev eth0 &&
		wait_for_gid "$k"
}

# Node K's second plane: eth1 on the bridge nodes1, 198.18.1.K, the rxe device rxeKb.
start_plane2() { # K
	local k=$1
	ip link add "veth${k}b" type veth peer name eth1 netns "node$k" &&
		ip link set "veth${k}b" master nodes1 up &&
		ip -n "node$k" link set eth1 address "52:54:00:00:01:$(printf '%02x' "$k")" &&
		ip -n "node$k" addr add "198.18.1.$k/24" dev eth1 &&
		ip -n "node$k" link set eth1 up &&
		ip netns exec "node$k" rdma link add "rxe${k}b" type rxe netdev eth1 &&
		wait_for_gid "$k" "rxe${k}b" 1
}

# RDMA_VM_NETEM on node K's eth0, from inside its namespace.
start_netem() { # K
	local args
	read -ra args <<<"$RDMA_VM_NETEM"
	nsenter --net="/run/netns/node$1" tests/vm/netem.sh eth0 "${args[@]}" | sed "s/^/node $1: /"
}

# make shell NODES=N (RDMA_VM_INTERACTIVE=1, the job tests/vm/shell.sh): node K's terminal,
# as the settings of its job: node 1's is the serial console, node K's from 2 on the
# virtio console hvc(K-2), which tests/vm/boot.sh adds for it; its size, the Kth of
# RDMA_VM_CONSOLE_SIZES (ROWSxCOLUMNS, one a node: the size of the node's tmux pane).
node_console() { # K
	local tty=/dev/ttyS0 sizes size
	[ "$1" = 1 ] || tty=/dev/hvc$(($1 - 2))
	for _ in $(seq 1 50); do
		[ -c "$tty" ] && break
		sleep 0.1
	done
	read -ra sizes <<<"${RDMA_VM_CONSOLE_SIZES:-}"
	size=${sizes[$1 - 1]:-}
	echo "RDMA_VM_TTY=$tty"
	[[ $size =~ ^[0-9]+x[0-9]+$ ]] && printf 'LINES=%s\nCOLUMNS=%s\n' "${size%x*}" "${size#*x}"
	return 0
}

# Node K's job: in its network namespace, with a hostname of its own.  nsenter, not
# 'ip netns exec': that one mounts a sysfs of the namespace, where each rxe device is a
# compat device without hw_counters (the RNR NAK counters step 09 reads); rxe's
# sysfs is the same for every namespace, and no node reads /sys/class/net.
run_node() { # K COMMAND...
	local k=$1 peer=1 plane2=() console=()
	shift
	[ "$k" = 1 ] && peer=2
	mkdir -p "$results/node$k" "$TMPDIR/node$k" || return 1
	[ "$planes" = 2 ] && plane2=(RDMA_STEPS_PLANES=2 RDMA_DEV2="rxe${k}b" RDMA_STEPS_NETDEV2=eth1
		RDMA_STEPS_ADDR2="198.18.1.$k" RDMA_STEPS_PEER_ADDR2="198.18.1.$peer")
	[ "${RDMA_VM_INTERACTIVE:-0}" = 1 ] && mapfile -t console < <(node_console "$k")
	# shellcheck disable=SC2016  # $RDMA_VM_NODE and $@ are the inner shell's
	nsenter --net="/run/netns/node$k" unshare --uts env "${plane2[@]}" "${console[@]}" RDMA_VM_NODE="$k" RDMA_STEPS_NODES="$n" \
		RDMA_DEV="rxe$k" RDMA_STEPS_NETDEV=eth0 RDMA_STEPS_ADDR="198.18.0.$k" \
		RDMA_STEPS_PEER_ADDR="198.18.0.$peer" RDMA_STEPS_RESULTS="$results/node$k" TMPDIR="$TMPDIR/node$k" \
		sh -c 'hostname "node$RDMA_VM_NODE" && exec "$@"' sh "$@" >"$results/node$k/console.log" 2>&1
}

{ ip link add nodes0 type bridge ageing_time 0 && ip link set nodes0 up; } || die "cannot make the bridge nodes0"
if [ "$planes" = 2 ]; then
	{ ip link add nodes1 type bridge ageing_time 0 && ip link set nodes1 up; } || die "cannot make the bridge nodes1"
fi
for ((k = 1; k <= n; k++)); do
	start_node "$k" || die "node $k: rxe$k on eth0 (198.18.0.$k) in namespace node$k did not come up"
	[ "$planes" = 1 ] || start_plane2 "$k" ||
		die "node $k: plane 2's rxe${k}b on eth1 (198.18.1.$k) in namespace node$k did not come up"
	[ -z "${RDMA_VM_NETEM:-}" ] || start_netem "$k" || die "node $k: RDMA_VM_NETEM: tests/vm/netem.sh eth0 $RDMA_VM_NETEM failed"
done
say "$n nodes up: namespaces node1 to node$n, rxe1 to rxe$n, 198.18.0.1 to 198.18.0.$n on the bridge nodes0 (kernel $(uname -r))"
[ "$planes" = 1 ] || say "plane 2 up: rxe1b to rxe${n}b, 198.18.1.1 to 198.18.1.$n on the bridge nodes1"
pids=()
for ((k = 1; k <= n; k++)); do
	{
		run_node "$k" "$@"
		echo $? >"$results/node$k/status"
	} &
	pids+=($!)
done
failed=()
for ((k = 1; k <= n; k++)); do
	wait "${pids[k - 1]}"
	[ "$(cat "$results/node$k/status" 2>/dev/null)" = 0 ] || failed+=("$k")
done
say "all $n nodes done${failed[*]:+; failed: node ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]
