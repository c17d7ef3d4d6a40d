#!/usr/bin/env bash
# node.sh: one node's job in make test-lossy: step 11 over UC and over RC under each case's netem, node 1 the sender with a capture a case, node 2 the receiver.
#
# Runs in each of two nodes (tests/lossy/lossy.sh starts them), with RDMA_VM_NODE,
# RDMA_DEV (the node's own rxe device), RDMA_STEPS_NETDEV and RDMA_STEPS_PEER_ADDR set.
# For each case of cases.tsv (or LOSSY_CASES, a regular expression on the case names),
# each node puts the case's netem on its own eth0 (tests/vm/netem.sh: RoCE v2 only, so the
# side channel is never dropped), reads its rxe device's counters, runs 11_lossy with
# the case's options and -s LOSSY_SIZE (1M unless given; node 1 the server, node 2 the client, which retries
# its connection until that server listens; a -t in the case's options overrides the 60 s
# given first), and reads them again.  A case with a fourth column stops node 1's program
# with SIGTERM that many seconds after its side channel connects: a transfer that would
# never end on its own.  Writes, in
# RDMA_STEPS_RESULTS: CASE.log (the program's output), CASE.counters (each counter's
# change over the case, and the netem qdisc's packets sent and dropped), status.tsv (CASE,
# exit status, seconds the program ran, the clock when it ended: the nodes of one VM share
# it) and, on node 1, CASE.pcap (UDP port 4791, the
# headers only).
set -uo pipefail
bin=${RDMA_STEPS_BIN:-build/bin}
out=${RDMA_STEPS_RESULTS:?}
node=${RDMA_VM_NODE:?node.sh runs in one of two nodes (tests/lossy/lossy.sh)}
dev=${RDMA_DEV:?node.sh runs in one of two nodes (tests/lossy/lossy.sh)}
size=${LOSSY_SIZE:-1M}
only=${LOSSY_CASES:-.}
counters=(sent_pkts rcvd_pkts rcvd_seq_err out_of_seq_request duplicate_request completer_retry_err retry_exceeded_err)

say() { echo "node $node: $*"; }

# shellcheck source=tests/lib/capture.bash
. tests/lib/capture.bash

read_counters() {
	local c
	for c in "${counters[@]}"; do
		printf '%s %s\n' "$c" "$(cat "/sys/class/infiniband/$dev/ports/1/hw_counters/$c")"
	done
}

# The last packets may still be on their way to the file: stop once it stops growing.
stop_capture() { # PCAP
	local bytes=-1
	for _ in $(seq 1 20); do
		[ "$(stat -c %s "$1")" = "$bytes" ] && break
		bytes=$(stat -c %s "$1")
		sleep 0.2
	done
	kill -INT "$capture"
	wait "$capture"
}

# The harness put RDMA_VM_NETEM's netem on this eth0 before the job: it must be there.
tests/vm/netem.sh eth0 stats >"$out/harness.netem" 2>&1
tc qdisc show dev eth0 >>"$out/harness.netem"
: >"$out/status.tsv"
while IFS=$'\t' read -r name netem opts stop; do
	[ "$name" = case ] && continue
	[[ $name =~ $only ]] || continue
	read -ra netem_args <<<"$netem"
	tests/vm/netem.sh eth0 "${netem_args[@]}" >"$out/$name.netem" 2>&1 || { cat "$out/$name.netem"; exit 1; }
	read -ra args <<<"-d $dev -t 60 -s $size $opts"
	[ "$node" = 2 ] && args+=("$RDMA_STEPS_PEER_ADDR")
	capture=
	if [ "$node" = 1 ]; then
		start_tcpdump "$out/$name.tcpdump.log" -U --immediate-mode -B 32768 -s 96 -w "$out/$name.pcap" udp port 4791 || exit 1
	fi
	before=$(read_counters)
	say "$name: netem $netem; $bin/11_lossy ${args[*]}"
	start=$(date +%s.%N)
	timeout -k 5 120 "$bin/11_lossy" "${args[@]}" >"$out/$name.log" 2>&1 &
	run=$!
	if [ "$node" = 1 ] && [ -n "$stop" ]; then
		for _ in $(seq 1 600); do
			grep -q '^side channel .*TCP connected' "$out/$name.log" && break
			sleep 0.1
		done
		sleep "$stop"
		# The program, the child of its timeout, by its parent's PID: the nodes share one PID space.
		pkill -TERM -P "$run"
	fi
	wait "$run"
	status=$?
	end=$(date +%s.%N)
	took=$(echo "$end - $start" | bc)
	# What crossed while the program ran: each counter's change, then what netem passed and dropped.
	paste -d ' ' <(echo "$before") <(read_counters) | awk '{ print $1, $4 - $2 }' >"$out/$name.counters"
	tests/vm/netem.sh eth0 stats >>"$out/$name.counters"
	[ -z "$capture" ] || { stop_capture "$out/$name.pcap"; tail -n 2 "$out/$name.tcpdump.log" >>"$out/$name.counters"; }
	tests/vm/netem.sh eth0 off >/dev/null
	printf '%s\t%s\t%.2f\t%s\n' "$name" "$status" "$took" "$end" >>"$out/status.tsv"
	say "$name: exit status $status in $took s"
done <tests/lossy/cases.tsv
exit 0
