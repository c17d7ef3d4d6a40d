#!/usr/bin/env bash
# node.sh: one node's job in make test-wire: steps 03 to 06 and 08 across the wire, node 1 the server with the capture, node 2 the client.
#
# Runs in each node (tests/wire/wire.sh starts them: VMs, or network namespaces of one
# VM), with RDMA_VM_NODE, RDMA_DEV (the node's own rxe device), RDMA_STEPS_NETDEV
# and RDMA_STEPS_PEER_ADDR set.  For each case of cases.tsv, node 1 runs
# the step's server and node 2 its client (with the case's fourth column, if any), which
# retries its connection until that server listens.  For the case cm_default_tos, node 2's
# rdma_cm default ToS is 106, as an operator sets it, and back to 0 after; for the case
# ce_mark, node 2's NIC marks the RoCE packets it sends Congestion Experienced, as a
# congested switch would, and stops after.  Node 1 captures RoCE v2 (UDP port 4791) on its NIC the whole time.  Writes, in
# RDMA_STEPS_RESULTS: CASE.log (the program's output), status.tsv (CASE and exit status), kernel
# (uname -r) and, on node 1, wire.pcap.
set -uo pipefail
bin=${RDMA_STEPS_BIN:-build/bin}
out=${RDMA_STEPS_RESULTS:?}
node=${RDMA_VM_NODE:?node.sh runs in one of two nodes (tests/wire/wire.sh)}
dev=${RDMA_DEV:?node.sh runs in one of two nodes (tests/wire/wire.sh)}

say() { echo "node $node: $*"; }

# shellcheck source=tests/lib/capture.bash
. tests/lib/capture.bash

# --immediate-mode: each packet is handed over as it arrives, not in batches a second apart.
# -B (KiB): step 08's READs come back as a burst of responses, and with the default buffer
# the kernel dropped 107 of 509 packets on the one vCPU that also runs the prefiller.
start_capture() {
	start_tcpdump "$out/tcpdump.log" -U --immediate-mode -B 32768 -w "$out/wire.pcap" udp port 4791
}

# The last case's packets may still be on their way to the file: stop once it stops growing.
stop_capture() {
	local size=-1
	for _ in $(seq 1 20); do
		[ "$(stat -c %s "$out/wire.pcap")" = "$size" ] && break
		size=$(stat -c %s "$out/wire.pcap")
		sleep 0.5
	done
	kill -INT "$capture"
	wait "$capture"
	say "capture: $(tail -n 3 "$out/tcpdump.log" | tr '\n' ' ')"
}

# The rdma_cm default ToS of this node's device, port 1: what cma_roce_tos writes
# (configfs, the kernel's Documentation/ABI/testing/configfs-rdma_cm).
set_cm_default_tos() { # TOS
	local dir=/sys/kernel/config/rdma_cm/$dev
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	[ -d "$dir" ] || mkdir "$dir" || return 1
	echo "$1" >"$dir/ports/1/default_roce_tos" || return 1
	say "rdma_cm default ToS of $dev port 1: $(cat "$dir/ports/1/default_roce_tos")"
}

# Node 2's NIC sets CE on every RoCE packet it sends, or stops: netem's loss model with ecn
# marks an ECN-capable packet CE where it would drop it (man tc-netem), here every packet (100%);
# a prio qdisc and a u32 filter on UDP port 4791 give netem RoCE alone, so the side channel
# passes untouched.
mark_ce() { # on|off
	local ifc=${RDMA_STEPS_NETDEV:?node.sh runs in one of two nodes (tests/wire/wire.sh)}
	if [ "$1" = on ]; then
		tc qdisc add dev "$ifc" root handle 1: prio &&
			tc qdisc add dev "$ifc" parent 1:3 handle 30: netem loss 100% ecn &&
			tc filter add dev "$ifc" protocol ip parent 1:0 prio 3 u32 match ip dport 4791 0xffff flowid 1:3 ||
			return 1
	else
		say "netem on $ifc: $(tc -s qdisc show dev "$ifc" parent 1:3 | tr -s ' \n' ' ')"
		tc qdisc del dev "$ifc" root || return 1
	fi
	say "CE marking on $ifc: $1"
}

capture=
[ "$node" = 1 ] && { start_capture || exit 1; }
# The kernel the node runs: which cases its rxe can do (tests/slow/wire.bats reads it).
uname -r >"$out/kernel"
: >"$out/status.tsv"
while IFS=$'\t' read -r name program opts only2; do
	[ "$name" = case ] && continue
	args=(-d "$dev" -t 60)
	read -ra more <<<"$opts"
	if [ "$node" = 2 ]; then
		read -ra extra <<<"$only2"
		more+=("${extra[@]}" "$RDMA_STEPS_PEER_ADDR")
		[ "$name" != cm_default_tos ] || set_cm_default_tos 106 || exit 1
		[ "$name" != ce_mark ] || mark_ce on || exit 1
	fi
	say "$name: $bin/$program ${args[*]} ${more[*]}"
	# A --cm client is refused at once (REJ, reason 8) while node 1 does not listen yet:
	# unlike the side channel's client, rdma_cm does not retry, so node 2 does.
	for _ in $(seq 1 60); do
		timeout -k 5 120 "$bin/$program" "${args[@]}" "${more[@]}" >"$out/$name.log" 2>&1
		status=$?
		grep -q 'nothing listens through rdma_cm' "$out/$name.log" || break
		sleep 1
	done
	printf '%s\t%s\n' "$name" "$status" >>"$out/status.tsv"
	say "$name: exit status $status"
	[ "$node" != 2 ] || [ "$name" != cm_default_tos ] || set_cm_default_tos 0 || exit 1
	[ "$node" != 2 ] || [ "$name" != ce_mark ] || mark_ce off || exit 1
done <tests/wire/cases.tsv
[ -z "$capture" ] || stop_capture
exit 0
