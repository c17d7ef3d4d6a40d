#!/usr/bin/env bash
# wire.sh: start two nodes on one wire (tests/vm/boot-nodes.sh: namespaces of one VM on Linux 7.x, else two VMs), run step 04 across it with node 1 capturing, and decode the capture (make test-wire).
#
# Usage: tests/wire/wire.sh OUT_DIR
# OUT_DIR receives node1/ and node2/ (each node's results: console.log, CASE.log,
# status.tsv; node1/wire.pcap), packets.tsv (one line per packet, the fields that
# tests/slow/wire.bats and the book's chapter on the wire read) and decoded.txt (tshark's full decode).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
out=${1:?usage: tests/wire/wire.sh OUT_DIR}

die() { echo "wire: $*" >&2; exit 1; }

# tshark 4.0 (Debian 12) prints a one-bit field such as the BTH's AckReq as 1 or 0;
# 4.4 (Debian 13) prints True or False.  packets.tsv keeps 1 and 0 on both.
bits() {
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "infiniband.bth.a") a = i; print; next }
		a && $a == "True" { $a = 1 } a && $a == "False" { $a = 0 } { print }'
}

# One line per packet: the headers' fields that the programs' printed values are checked against.
decode() {
	tshark -r "$out/node1/wire.pcap" -T fields -E header=y -E separator=/t -E occurrence=f \
		-e frame.number -e ip.src -e ip.dst -e udp.dstport -e _ws.col.Info \
		-e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.bth.a \
		-e infiniband.reth.va -e infiniband.reth.r_key -e infiniband.reth.dmalen \
		-e infiniband.aeth.syndrome -e infiniband.aeth.msn -e infiniband.immdt \
		-e infiniband.atomiceth.swapdt -e infiniband.atomiceth.cmpdt -e infiniband.atomicacketh.origremdt \
		-e infiniband.invariant.crc -e frame.len \
		-e infiniband.mad.attributeid -e infiniband.cm.req.localqpn -e infiniband.cm.req.startpsn \
		-e infiniband.cm.rep.localqpn -e infiniband.cm.rep.startpsn -e infiniband.cm.req.ip_cm.private \
		-e infiniband.cm.rep.private -e ip.dsfield.dscp -e ip.dsfield.ecn -e vlan.priority | bits >"$out/packets.tsv" &&
		tshark -r "$out/node1/wire.pcap" -O infiniband >"$out/decoded.txt"
}

command -v tshark >/dev/null || die "no tshark: run 'make deps DEPS_SET=wire' as root"
{ rm -rf "$out" && mkdir -p "$out"; } || die "cannot create $out"
tests/vm/boot-nodes.sh 2 "$out" tests/wire/node.sh || die "a node failed (see above)"
decode || die "tshark could not decode $out/node1/wire.pcap"
echo "wire: $(($(wc -l <"$out/packets.tsv") - 1)) RoCE v2 packets captured on node 1's eth0, decoded into $out/packets.tsv and decoded.txt"
