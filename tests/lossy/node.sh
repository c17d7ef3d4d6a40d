#!/usr/bin/env bash
# node.sh: one node's job in make test-lossy: step 11 over UC and over RC under each case's netem, node 1 the sender with a capture a case, node 2 the receiver; and step 05 and ib_write_bw, node 2 their sender.
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
# never end on its own ("-": none).  Planes (the harness's RDMA_VM_PLANES=2): PLANE2 in a case's
# options stands for the node's second device (RDMA_DEV2); a case with a fifth column cuts
# plane 2 that many seconds after node 1's program posted its first WRITE: each node has
# netem at 0% on its eth1 from the case's start, and node 1 changes its own to 100% loss,
# writes the clock then to CASE.cut, and does the same on node 2's eth1 (in node 2's
# namespace); 'rdma resource show qp' is read as the first WRITE is seen (CASE.qps).
# A case with a sixth column runs that program instead of 11_lossy, with the case's options
# and no -s: 05_poll_destroy (-d, -t 60), or perftest's ib_write_bw (-d, -x the device's
# RoCE v2 IPv4 GID, -F); node 1 the server and node 2 the client, which is their initiator:
# the data goes from node 2 to node 1.  ib_write_bw's client does not retry its connection,
# so node 2 starts it again while the server is not yet listening.
# Writes, in
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
# shellcheck source=tests/lib/nap.bash
. tests/lib/nap.bash
# shellcheck source=tests/lib/perftest.bash
. tests/lib/perftest.bash
NAP_DIR=$TMPDIR

# Each counter of this node's device, and of its second plane's (prefixed "plane2_") when it has
# one; read by bash itself: a cat each, twice a case, cost seconds a case under emulation.
read_counters() {
	local c v
	for c in "${counters[@]}"; do
		read -r v <"/sys/class/infiniband/$dev/ports/1/hw_counters/$c"
		printf '%s %s\n' "$c" "$v"
	done
	[ -z "${RDMA_DEV2:-}" ] && return
	for c in "${counters[@]}"; do
		read -r v <"/sys/class/infiniband/$RDMA_DEV2/ports/1/hw_counters/$c"
		printf 'plane2_%s %s\n' "$c" "$v"
	done
}

# Plane 2 cut, once node 1's first WRITE is posted and AFTER seconds more: each node's eth1
# has had netem at 0% since the case began, and a cut changes it to 100%.  Every command
# started here would start from the 9p root under emulation, which on a loaded machine took
# longer than the transfer: cut_prepare starts, on node 1, one 'tc -batch' a node (node 2's in
# its namespace) at real-time priority, each reading its commands from a FIFO; the wait runs
# no command (bash's read on the log, and read's timeout on a pipe no one writes, for a nap)
# and the cut is one line written to each FIFO.  Real-time, for both programs spin on the
# VM's two vCPUs, and at their priority this would run only once they were done.
cut_prepare() { # CASE
	tests/vm/netem.sh eth1 loss 0% >"$out/$1.eth1.netem" 2>&1 || { cat "$out/$1.eth1.netem"; exit 1; }
	[ "$node" = 1 ] || return 0
	rm -f "$TMPDIR/cut1" "$TMPDIR/cut2"
	mkfifo "$TMPDIR/cut1" "$TMPDIR/cut2" || exit 1
	chrt -f 10 tc -batch "$TMPDIR/cut1" >"$out/$1.cut.netem" 2>&1 &
	cut_tc1=$!
	chrt -f 10 nsenter --net=/run/netns/node2 tc -batch "$TMPDIR/cut2" >>"$out/$1.cut.netem" 2>&1 &
	cut_tc2=$!
}
cut_plane2() { # CASE AFTER
	local nap line qps cut1 cut2
	exec {cut1}>"$TMPDIR/cut1" {cut2}>"$TMPDIR/cut2" {nap}<> <(:)
	for _ in {1..3000}; do
		while IFS= read -r line; do
			[[ $line == 'ibv_post_send '*'round 1, path'* ]] && break 2
		done <"$out/$1.log"
		read -rt 0.01 -u "$nap" _
	done
	# The kernel's view of the QPs, while the programs hold them.
	rdma resource show qp >"$out/$1.qps" 2>&1 &
	qps=$!
	read -rt "$2" -u "$nap" _
	# Node 1's first: from then on no WRITE of plane 2 leaves.
	echo "qdisc change dev eth1 parent 1:3 handle 30: netem loss 100%" >&"$cut1"
	echo "$EPOCHREALTIME" >"$out/$1.cut"
	echo "qdisc change dev eth1 parent 1:3 handle 30: netem loss 100%" >&"$cut2"
	exec {cut1}>&- {cut2}>&- {nap}<&-
	wait "$cut_tc1"
	cut_ok=$?
	wait "$cut_tc2" || cut_ok=1
	if [ "$cut_ok" != 0 ]; then
		say "$1: could not cut plane 2: $(cat "$out/$1.cut.netem")"
	fi
	wait "$qps"
}

# The index of this node's RoCE v2 GID of an IPv4 address (::ffff:a.b.c.d), for perftest's -x.
ipv4_gid_index() {
	local f gid type
	for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		read -r gid <"$f" 2>/dev/null || continue
		read -r type <"/sys/class/infiniband/$dev/ports/1/gid_attrs/types/${f##*/}" 2>/dev/null || continue
		[[ $gid == 0000:0000:0000:0000:0000:ffff:* && $type == 'RoCE v2' ]] && { echo "${f##*/}"; return 0; }
	done
	say "$dev has no RoCE v2 GID of an IPv4 address" >&2
	return 1
}

# Whether a socket of this node's namespace listens on TCP port PORT (/proc/net/tcp and tcp6, read by bash).
listening() { # PORT
	local hex f addr state
	printf -v hex ':%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		while read -r _ addr _ state _; do
			[[ $addr == *"$hex" && $state == 0A ]] && return 0
		done <"$f"
	done
	return 1
}

# ib_write_bw's server has its port: node 1 says so in CASE.listening, which node 2 waits for
# in node 1's results (RESULTS/node1, as tests/vm/netns-nodes.sh lays them out) before it
# starts its client, rather than start one client after another while node 1 is busy.
perftest_ready() { # CASE PORT
	local i
	for ((i = 0; i < 1200; i++)); do
		if [ "$node" = 1 ]; then
			listening "$2" && { : >"$out/$1.listening"; return 0; }
		else
			[ -e "${out%/*}/node1/$1.listening" ] && return 0
		fi
		nap 0.05
	done
	say "$1: ib_write_bw's server did not listen on port $2 within 60 s"
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
while IFS=$'\t' read -r name netem opts stop cut program; do
	[ "$name" = case ] && continue
	[[ $name =~ $only ]] || continue
	# read takes a run of tabs as one: an empty column is "-".
	[ "$stop" = - ] && stop=
	[ "$cut" = - ] && cut=
	program=${program:-11_lossy}
	read -ra netem_args <<<"$netem"
	tests/vm/netem.sh eth0 "${netem_args[@]}" >"$out/$name.netem" 2>&1 || { cat "$out/$name.netem"; exit 1; }
	[ -z "$cut" ] || cut_prepare "$name"
	# "A | B": node 1 takes A, node 2 B; PLANE2 is the node's second device, DEV its first.
	[[ $opts == *' | '* ]] && { [ "$node" = 1 ] && opts=${opts%% | *} || opts=${opts#* | }; }
	opts=${opts//PLANE2/${RDMA_DEV2:-}}
	case $program in
	11_lossy) read -ra args <<<"-d $dev -t 60 -s $size ${opts//DEV/$dev}" ;;
	05_poll_destroy) read -ra args <<<"-d $dev -t 60 $opts" ;;
	ib_write_bw)
		gidx=$(ipv4_gid_index) || exit 1
		read -ra args <<<"-d $dev -x $gidx -F $opts"
		;;
	*)
		say "$name: no such program as $program in cases.tsv"
		exit 1
		;;
	esac
	[ "$node" = 2 ] && args+=("$RDMA_STEPS_PEER_ADDR")
	capture=
	if [ "$node" = 1 ]; then
		start_tcpdump "$out/$name.tcpdump.log" -U --immediate-mode -B 32768 -s 96 -w "$out/$name.pcap" udp port 4791 || exit 1
	fi
	before=$(read_counters)
	start=$(date +%s.%N)
	if [ "$program" = ib_write_bw ]; then
		say "$name: netem $netem; ib_write_bw ${args[*]}"
		[[ " ${args[*]} " =~ \ -p\ ([0-9]+)\  ]] || { say "$name: ib_write_bw's case gives no -p PORT"; exit 1; }
		if [ "$node" = 2 ]; then
			perftest_ready "$name" "${BASH_REMATCH[1]}"
			perftest_client "$out/$name.log" ib_write_bw "${args[@]}" &
			run=$!
		else
			timeout -k 5 120 ib_write_bw "${args[@]}" >"$out/$name.log" 2>&1 &
			run=$!
			perftest_ready "$name" "${BASH_REMATCH[1]}"
		fi
	else
		say "$name: netem $netem; $bin/$program ${args[*]}"
		timeout -k 5 120 "$bin/$program" "${args[@]}" >"$out/$name.log" 2>&1 &
		run=$!
	fi
	if [ "$node" = 1 ] && [ -n "$stop" ]; then
		for _ in $(seq 1 600); do
			grep -q '^side channel .*TCP connected' "$out/$name.log" && break
			sleep 0.1
		done
		sleep "$stop"
		# The program, the child of its timeout, by its parent's PID: the nodes share one PID space.
		pkill -TERM -P "$run"
	fi
	if [ "$node" = 1 ] && [ -n "$cut" ]; then
		(chrt -f -p 10 "$BASHPID" && cut_plane2 "$name" "$cut")
	fi
	wait "$run"
	status=$?
	end=$(date +%s.%N)
	took=$(echo "$end - $start" | bc)
	# What crossed while the program ran: each counter's change, then what netem passed and dropped.
	paste -d ' ' <(echo "$before") <(read_counters) | awk '{ print $1, $4 - $2 }' >"$out/$name.counters"
	tests/vm/netem.sh eth0 stats >>"$out/$name.counters"
	if [ -n "$cut" ]; then
		tests/vm/netem.sh eth1 stats >>"$out/$name.counters"
		tests/vm/netem.sh eth1 off >/dev/null
	fi
	[ -z "$capture" ] || { stop_capture "$out/$name.pcap"; tail -n 2 "$out/$name.tcpdump.log" >>"$out/$name.counters"; }
	tests/vm/netem.sh eth0 off >/dev/null
	printf '%s\t%s\t%.2f\t%s\n' "$name" "$status" "$took" "$end" >>"$out/status.tsv"
	say "$name: exit status $status in $took s"
done <tests/lossy/cases.tsv
exit 0
