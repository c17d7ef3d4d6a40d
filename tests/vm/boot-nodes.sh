#!/usr/bin/env bash
# boot-nodes.sh: boot N test VMs (2 to 4) on one virtual segment, each running the same job, and wait for all of them.
#
# Usage: tests/vm/boot-nodes.sh N OUT_DIR COMMAND [ARG...]
# Node K's results go to OUT_DIR/nodeK/ (boot.sh's status and console.log, and
# what COMMAND writes to RDMA_STEPS_RESULTS), its QEMU's output to OUT_DIR/nodeK.boot.log.
# COMMAND runs in every node with RDMA_VM_NODE=K and RDMA_STEPS_NODES=N.  Node 1
# starts first and each other node once node 1 listens on its port.  Exits 0 if
# every node's COMMAND did; else names the nodes that failed.
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

# shellcheck source=tests/vm/wire-port.bash
. tests/vm/wire-port.bash

boot_node() { # K PORT COMMAND...
	local k=$1 port=$2
	shift 2
	RDMA_VM_NODE=$k RDMA_VM_NODES=$n RDMA_VM_WIRE_PORT=$port RDMA_VM_CPUS=$(node_cpus "$n") \
		RDMA_VM_TIMEOUT=${RDMA_VM_TIMEOUT:-600} tests/vm/boot.sh "$vm_dir" "$out/node$k" "$@" >"$out/node$k.boot.log" 2>&1
}

case $n in 2 | 3 | 4) ;; *) die "N must be 2, 3 or 4, not '$n'" ;; esac
mkdir -p "$out" || die "cannot create $out"
tests/vm/prepare.sh "$vm_dir" || die "could not prepare the test VM"
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
[ ${#failed[@]} -eq 0 ] || die "see $(for k in "${failed[@]}"; do printf '%s ' "$out/node$k.boot.log"; done)"
