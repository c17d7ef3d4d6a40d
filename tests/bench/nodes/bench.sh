#!/usr/bin/env bash
# bench.sh: the collectives across 2, 3 and 4 VMs, step 07's ring, step 09's all-to-all and step 10's weight sync: boots each set of nodes, runs job.sh on every node, then report.sh (make bench, after step 05's bench; make bench-nodes alone).
#
# Usage: tests/bench/nodes/bench.sh OUT_DIR
# OUT_DIR/N/nodeK/ receives node K's logs of N nodes (job.sh's parts); report.sh turns
# them into OUT_DIR/nodes.txt (the tables), nodes.tsv, links.tsv, mesh.tsv, moe.tsv and nodes.svg.
# BENCH_NODES (default "2 3 4") picks the node counts; BENCH_NODES_SIZES and
# BENCH_NODES_MOE_SIZES, job.sh's sizes for step 07 and step 09.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root" || exit 1
out=${1:?usage: tests/bench/nodes/bench.sh OUT_DIR}

die() { echo "bench-nodes: $*" >&2; exit 1; }

mkdir -p "$out" || die "cannot create $out"
for n in ${BENCH_NODES:-2 3 4}; do
	rm -rf "${out:?}/$n"
	echo "bench-nodes: $n nodes: ib_write_bw one pair alone, then on every ring link at once; step 07 over RDMA and TCP; Gloo; Open MPI on node 1; ib_atomic_lat; ib_write_bw on every pair at once; step 09 over RDMA and TCP; step 10's three ways"
	# torch needs more than the 1 GiB a VM has by default.  One vCPU per node for every N,
	# so that the nodes are alike as N grows (make shell gives two nodes 2 each).  Always
	# one VM a node on QEMU's hub (RDMA_VM_HUB=1), never namespaces of one VM: the figures
	# are of nodes with a kernel and a vCPU each, and job.sh reads rxe0's counters.
	RDMA_VM_HUB=1 RDMA_VM_MEM=${RDMA_VM_MEM:-2048} RDMA_VM_CPUS=${RDMA_VM_CPUS:-1} RDMA_VM_TIMEOUT=${RDMA_VM_TIMEOUT:-1800} \
		tests/vm/boot-nodes.sh "$n" "$out/$n" tests/bench/nodes/job.sh || die "$n nodes: a node failed (see above)"
done
tests/bench/nodes/report.sh "$out"
