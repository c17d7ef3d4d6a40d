#!/usr/bin/env bash
# boot-nodes.sh: N test nodes on one Ethernet segment, each running the same job, and wait for all of them: network namespaces in one VM where the kernel's rxe works per namespace, else one VM per node (2 to 4) on QEMU's hub.
#
# Usage: tests/vm/boot-nodes.sh N OUT_DIR COMMAND [ARG...]
# Node K's results go to OUT_DIR/nodeK/ (status, console.log, and what COMMAND
# writes to RDMA_STEPS_RESULTS).  COMMAND runs in every node with RDMA_VM_NODE=K,
# RDMA_STEPS_NODES=N and RDMA_DEV naming the node's own rxe device.  Exits 0 if
# every node's COMMAND did; else names the nodes that failed.
# Namespaces (tests/vm/netns-nodes.sh; 2 to 16 nodes): when the VM's rdma_rxe.ko
# holds rxe_ns_init (its UDP socket per namespace: Linux 7.1 on, RDMA_VM_KERNEL=
# trixie-backports), unless RDMA_VM_HUB=1.  One VM of RDMA_VM_NETNS_MEM MiB (default
# 4096) and 2 vCPUs; its own output in OUT_DIR/vm.boot.log, the nodes' rxe1 to rxeN.
# Hub (Linux 6.1, whose rxe has one socket for the whole kernel): node K's QEMU
# output in OUT_DIR/nodeK.boot.log, each node's device rxe0; node 1 starts first and
# each other node once node 1 listens on its port.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
usage="usage: boot-nodes.sh N OUT_DIR COMMAND [ARG...]"
n=${1:?$usage}
out=${2:?$usage}
shift 2
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
# shellcheck source=tests/vm/kernel-choice.bash
. tests/vm/kernel-choice.bash
vm_dir=$(vm_kernel_dir "$root") || exit 1

die() { echo "nodes: $*" >&2; exit 1; }
# After a failure, the end of a node's log, where it says why: what CI keeps of a run is its
# end.  A guest that never reported has its kernel's oops after boot.sh's line saying so.
show_end() { # LOG
	echo "nodes: the end of $1:" >&2
	{ grep -m 1 -A 16 'vm: the guest never reported a result' "$1" || tail -n 8 "$1"; } | sed 's/^/  /' >&2
}

# shellcheck source=tests/vm/wire-port.bash
. tests/vm/wire-port.bash

boot_node() { # K PORT COMMAND...
	local k=$1 port=$2
	shift 2
	RDMA_VM_NODE=$k RDMA_VM_NODES=$n RDMA_VM_WIRE_PORT=$port RDMA_VM_CPUS=$(node_cpus "$n") \
		RDMA_VM_TIMEOUT=${RDMA_VM_TIMEOUT:-600} tests/vm/boot.sh "$vm_dir" "$out/node$k" "$@" >"$out/node$k.boot.log" 2>&1
}

mkdir -p "$out" || die "cannot create $out"
tests/vm/prepare.sh "$vm_dir" || die "could not prepare the test VM"
if [ "${RDMA_VM_HUB:-0}" != 1 ] && rxe_per_netns "$vm_dir"; then
	case $n in [2-9] | 1[0-6]) ;; *) die "N must be 2 to 16, not '$n'" ;; esac
	start=$SECONDS
	echo "nodes: $n nodes as network namespaces in one VM ($(cat "$vm_dir/kernel.version")); its log in $out/vm.boot.log"
	RDMA_VM_NETNS=$n RDMA_VM_CPUS=${RDMA_VM_CPUS:-2} RDMA_VM_MEM=${RDMA_VM_NETNS_MEM:-4096} \
		RDMA_VM_TIMEOUT=${RDMA_VM_TIMEOUT:-1500} tests/vm/boot.sh "$vm_dir" "$out" tests/vm/netns-nodes.sh "$n" "$@" \
		>"$out/vm.boot.log" 2>&1
	status=$?
	failed=()
	for ((k = 1; k <= n; k++)); do
		[ "$(cat "$out/node$k/status" 2>/dev/null)" = 0 ] || failed+=("$k")
	done
	echo "nodes: all $n done in $((SECONDS - start)) s${failed[*]:+; failed: node ${failed[*]}}"
	{ [ "$status" = 0 ] && [ ${#failed[@]} -eq 0 ]; } || {
		show_end "$out/vm.boot.log"
		die "see $out/vm.boot.log$(for k in "${failed[@]}"; do printf ' %s' "$out/node$k/console.log"; done)"
	}
	exit 0
fi
case $n in 2 | 3 | 4) ;; *) die "N must be 2, 3 or 4 on QEMU's hub (namespaces take up to 16 on a kernel whose rxe works per namespace), not '$n'" ;; esac
# A second plane is a second veth and rxe device in each namespace (netns-nodes.sh); the hub's
# VMs have one NIC each, and a check that needs a plane needs no 6.1 guest: say so, not fail later.
[ "${RDMA_VM_PLANES:-1}" = 1 ] ||
	die "RDMA_VM_PLANES=${RDMA_VM_PLANES} (a second plane) runs only with nodes as network namespaces, which need rxe per namespace (Linux 7.1 or later: RDMA_VM_KERNEL=trixie-backports, and RDMA_VM_HUB unset); QEMU's hub gives each VM one NIC"
port=$(wire_free_port $((n - 1))) || die "no $((n - 1)) free TCP ports in a row in 20000-29999 on 127.0.0.1 for the wire"
start=$SECONDS
echo "nodes: $n nodes on 127.0.0.1 from port $port, $(node_cpus "$n") vCPU each; logs in $out/nodeK.boot.log"
boot_node 1 "$port" "$@" &
pids=($!)
for ((k = 2; k <= n; k++)); do
	wait_listening "$((port + k - 2))" 20 "${pids[0]}" ||
		die "node 1's QEMU never listened on port $((port + k - 2)): $(tail -n 5 "$out/node1.boot.log")"
	boot_node "$k" "$port" "$@" &
	pids+=($!)
done
failed=()
for ((k = 1; k <= n; k++)); do
	wait "${pids[k - 1]}" || failed+=("$k")
done
echo "nodes: all $n done in $((SECONDS - start)) s${failed[*]:+; failed: node ${failed[*]}}"
[ ${#failed[@]} -eq 0 ] || {
	for k in "${failed[@]}"; do show_end "$out/node$k.boot.log"; done
	die "see $(for k in "${failed[@]}"; do printf '%s ' "$out/node$k.boot.log"; done)"
}
