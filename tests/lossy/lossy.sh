#!/usr/bin/env bash
# lossy.sh: start two nodes on one wire (tests/vm/boot-nodes.sh: namespaces of one VM on Linux 7.x), run step 11 over UC and RC, step 05 and ib_write_bw under netem's loss on both (node.sh, cases.tsv), and decode node 1's captures (make test-lossy).
#
# Usage: tests/lossy/lossy.sh OUT_DIR
# OUT_DIR receives node1/ and node2/ (each node's CASE.log, CASE.counters and
# status.tsv; node 1's CASE.pcap) and CASE.tsv beside them: one line per packet node 1's
# eth0 saw, the fields tests/slow/lossy.bats reads.  LOSSY_SIZE (-s, default 1M) and
# LOSSY_CASES (a regular expression on the case names) cross into the nodes.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
out=${1:?usage: tests/lossy/lossy.sh OUT_DIR}

die() { echo "lossy: $*" >&2; exit 1; }

# shellcheck source=tests/lib/capture.bash
. tests/lib/capture.bash

command -v tshark >/dev/null || die "no tshark: run 'make deps DEPS_SET=wire' as root"
{ rm -rf "$out" && mkdir -p "$out"; } || die "cannot create $out"
# The harness's own netem (RDMA_VM_NETEM) on every node from the start: node.sh finds it
# there before its first case, and then puts each case's own.
RDMA_VM_NETEM="loss 0%" RDMA_VM_PLANES=2 tests/vm/boot-nodes.sh 2 "$out" env LOSSY_SIZE="${LOSSY_SIZE:-1M}" LOSSY_CASES="${LOSSY_CASES:-.}" \
	tests/lossy/node.sh || die "a node failed (see above)"
# One line per packet: its time, source, destination, UDP source port (rxe's, from both
# QPs' numbers), the BTH's opcode, destination QP and PSN, the AETH's syndrome and the immediate.
decode_captures lossy "$out" frame.number frame.time_relative ip.src ip.dst udp.srcport \
	infiniband.bth.opcode infiniband.bth.destqp infiniband.bth.psn \
	infiniband.aeth.syndrome infiniband.immdt || exit 1
