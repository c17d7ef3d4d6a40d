#!/usr/bin/env bash
# nodes.sh: start N nodes on one Ethernet segment (tests/vm/boot-nodes.sh: namespaces in one VM on Linux 7.x, else VMs on QEMU's hub), run a cases file across them (node.sh), and decode node 1's captures (make test-nodes, make test-nodes8).
#
# Usage: tests/nodes/nodes.sh OUT_DIR [N CASES]   (default: 4 tests/nodes/cases.tsv)
# OUT_DIR receives node1/ to nodeN/ (each node's CASE.log and status.tsv; node 1's
# CASE.pcap for each ring and moe case) and CASE.tsv beside them: one line per captured packet,
# the fields tests/slow/nodes.bats reads.  Each VM of the hub gets 2 GiB: torch needs more than 1.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
out=${1:?usage: tests/nodes/nodes.sh OUT_DIR [N CASES]}
n=${2:-4}
cases=${3:-tests/nodes/cases.tsv}

die() { echo "nodes: $*" >&2; exit 1; }

# shellcheck source=tests/lib/capture.bash
. tests/lib/capture.bash

command -v tshark >/dev/null || die "no tshark: run 'make deps DEPS_SET=nodes' as root"
{ rm -rf "$out" && mkdir -p "$out"; } || die "cannot create $out"
[ -f "$cases" ] || die "no cases file '$cases'"
RDMA_VM_MEM=${RDMA_VM_MEM:-2048} tests/vm/boot-nodes.sh "$n" "$out" tests/nodes/node.sh "$cases" || die "a node failed (see above)"
# One line per packet: source, destination, the UDP length (the RoCE headers and
# payload), the frame's length, the BTH's opcode, destination QP and PSN; then the
# RETH's (or the AtomicETH's: tshark names them alike) virtual address, rkey and DMA
# length, the AtomicETH's add (swap) operand, and the AETH's syndrome.
decode_captures nodes "$out" frame.number ip.src ip.dst udp.length frame.len \
	infiniband.bth.opcode infiniband.bth.destqp infiniband.bth.psn \
	infiniband.reth.va infiniband.reth.r_key infiniband.reth.dmalen \
	infiniband.atomiceth.swapdt infiniband.aeth.syndrome || exit 1
