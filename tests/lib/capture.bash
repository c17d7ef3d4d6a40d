# capture.bash: node 1's captures: tcpdump started in the background until it listens (sourced by the nodes' jobs in the VMs: tests/wire/node.sh, tests/nodes/node.sh, tests/lossy/node.sh), and each capture decoded by tshark on the host (tests/nodes/nodes.sh, tests/lossy/lossy.sh).

# Starts tcpdump ARGS... on RDMA_STEPS_NETDEV, its messages to LOG, and sets capture to its
# pid.  Returns 0 once tcpdump says it is listening (packets sent before that are lost),
# or 1 after 10 s, having said why.  The caller defines say.
start_tcpdump() { # LOG ARGS...
	local log=$1
	shift
	tcpdump -i "$RDMA_STEPS_NETDEV" -n -Z root "$@" 2>"$log" &
	capture=$!
	for _ in $(seq 1 100); do
		grep -q 'listening on' "$log" && return 0
		sleep 0.1
	done
	say "tcpdump did not start: $(cat "$log")"
	return 1
}

# Decodes every OUT/node1/*.pcap into OUT/CASE.tsv: a header line, then a line a packet
# with the FIELDs named (tshark's -e, each one's first value); says how many packets each
# holds, as WHO.  Fails, naming it, on a capture tshark cannot read, or on none at all.
decode_captures() { # WHO OUT FIELD...
	local who=$1 out=$2 pcap name field fields=()
	shift 2
	for field in "$@"; do fields+=(-e "$field"); done
	for pcap in "$out"/node1/*.pcap; do
		[ -e "$pcap" ] || { echo "$who: node 1 left no capture" >&2; return 1; }
		name=$(basename "$pcap" .pcap)
		tshark -r "$pcap" -T fields -E header=y -E separator=/t -E occurrence=f "${fields[@]}" \
			>"$out/$name.tsv" 2>"$out/$name.tshark.log" || {
			echo "$who: tshark could not decode $pcap: $(cat "$out/$name.tshark.log")" >&2
			return 1
		}
		echo "$who: $name: $(($(wc -l <"$out/$name.tsv") - 1)) RoCE v2 packets captured on node 1's eth0, in $out/$name.tsv"
	done
}
