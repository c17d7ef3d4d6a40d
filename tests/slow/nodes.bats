#!/usr/bin/env bats
# nodes.bats: step 07 across 2, 3 and 4 nodes on one segment (network namespaces of one VM on Linux 7.x, else VMs on QEMU's hub): every rank's result, the capture against the ring's schedule, a rank killed, collectives we did not write, and make train's job; step 09's all-to-all across 4, the capture against its layout; step 10's three ways across 4, each checked, its table, and its FP8 staging slots in flight ('make test-nodes').
# tests/nodes/nodes.sh boots the four nodes once for the whole file and runs tests/nodes/cases.tsv.
# Budget: 5 minutes on a 2-core machine (about 3 here), most of it torch starting in two VMs.
# bats file_tags=outside-vm

setup_file() {
	load ../lib/harness
	export NODES=$BATS_FILE_TMPDIR/nodes
	boot_harness_once "$BATS_TEST_DIRNAME/../nodes/nodes.sh" "$NODES" nodes
}

setup() {
	load ../lib/test_helper
	load ../lib/nodes
}

@test "nodes: every case ended as it must on every node it ran on" {
	for k in 1 2; do
		[ "$(status_of $k ring2)" = 0 ] || fail "node $k, ring2: $(cat "$NODES/node$k/ring2.log")"
		[ "$(status_of $k gloo2)" = 0 ] || fail "node $k, gloo2: $(tail -n 30 "$NODES/node$k/gloo2.log")"
		[ "$(status_of $k train2)" = 0 ] || fail "node $k, train2: $(tail -n 30 "$NODES/node$k/train2.log")"
	done
	for k in 1 2 3; do
		[ "$(status_of $k ring3)" = 0 ] || fail "node $k, ring3: $(cat "$NODES/node$k/ring3.log")"
	done
	for k in 1 2 3 4; do
		[ "$(status_of $k ring4)" = 0 ] || fail "node $k, ring4: $(cat "$NODES/node$k/ring4.log")"
		[ "$(status_of $k moe4)" = 0 ] || fail "node $k, moe4: $(cat "$NODES/node$k/moe4.log")"
	done
	[ "$(status_of 1 mpi4)" = 0 ] || fail "node 1, mpi4: $(tail -n 30 "$NODES/node1/mpi4.log")"
	# The killed rank's own end is SIGKILL's (128 + 9); the others end with 1, having named it.
	[ "$(status_of 3 kill3)" = 137 ] || fail "node 3, kill3: exit status $(status_of 3 kill3), not 137"
	[ "$(status_of 4 kill3)" = - ] || fail "node 4 ran kill3, a case of 3 nodes"
}

@test "nodes: across 2, 3 and 4 nodes every rank's result is right, over RDMA and over TCP, with one CRC-32 on every rank" {
	for n in 2 3 4; do
		run cat "$NODES/node1/ring$n.log"
		# One row per transport, 0 wrong; and rank 0's totals over every rank.
		[ "$(grep -cE '^ +786432 +196608 +int32 +sum +-1 .* 0$' <<<"$output")" = 2 ] || fail "ring$n: not two right rows: $output"
		[ "$(grep -cE "^check +: right: .* 0 wrong, over $n ranks and 1 sizes$" <<<"$output")" = 2 ] || fail "ring$n: $output"
		want=$(crcs_in "$NODES/node1/ring$n.log" | head -n 1)
		for ((k = 1; k <= n; k++)); do
			run cat "$NODES/node$k/ring$n.log"
			assert_line --regexp "^launcher +: none: rank $((k - 1)) of $n, from --rank and --world-size$"
			assert_line --regexp '^teardown +: every object released$'
			[ "$(crcs_in "$NODES/node$k/ring$n.log" | sort -u)" = "$want" ] ||
				fail "ring$n, node $k: CRC-32s $(crcs_in "$NODES/node$k/ring$n.log" | tr '\n' ' ') against rank 0's $want"
		done
	done
}

@test "nodes: the capture holds RDMA WRITE (with immediate) only from each node to the next, and credits only back to the one before" {
	for n in 2 3 4; do
		assert_ring_schedule "$n" "ring$n"
		# Every node sent WRITEs with immediate (9: Last, 11: Only) to its next one.
		for ((k = 1; k <= n; k++)); do
			[ "$(awk -F'\t' -v s="198.18.0.$k" -v d="198.18.0.$((k % n + 1))" '$2 == s && $3 == d && ($6 == 9 || $6 == 11)' \
				"$NODES/ring$n.tsv" | wc -l)" -gt 0 ] || fail "ring$n: no WRITE with immediate from node $k to node $((k % n + 1))"
		done
	done
	# Node 1's tcpdump kept every packet the hub flooded it.
	for n in 2 3 4; do
		file_has_line "$NODES/node1/ring$n.tcpdump.log" '^0 packets dropped by kernel$' ||
			fail "ring$n: $(cat "$NODES/node1/ring$n.tcpdump.log")"
	done
}

@test "nodes: each rank's WRITEs carry exactly 3 x 2(N-1)/N x S of data to the next node (-n 2 and the check); headers and retransmissions counted apart" {
	for n in 2 3 4; do
		posted=$(sed -n 's/^bytes posted *: each rank \([0-9]*\) B per all_reduce of S = 786432 B; .*: exact .*/\1/p' "$NODES/node1/ring$n.log")
		[ "$posted" = $((2 * (n - 1) * 786432 / n)) ] || fail "ring$n: rank 0 printed '$posted' bytes posted per rank"
		run write_bytes_of "ring$n"
		[ "${#lines[@]}" = "$n" ] || fail "ring$n: WRITEs between ${#lines[@]} pairs of nodes, not $n: $output"
		for ((k = 1; k <= n; k++)); do
			assert_line --regexp "^198\.18\.0\.$k 198\.18\.0\.$((k % n + 1)) $((3 * posted)) [0-9]+ [0-9]+$"
		done
		# The headers: Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4 per packet of at most 1024 bytes.
		while read -r src dst data frames again; do
			overhead=$(((frames - data) * 1000 / data))
			[ "$overhead" -ge 50 ] && [ "$overhead" -le 70 ] || fail "ring$n: frames $frames for data $data"
			echo "# ring$n, $src to $dst: $data B of data in $frames B of frames (+$overhead per mille), $again packets sent again" >&3
		done <<<"$output"
	done
}

@test "nodes: step 09 across 4 nodes, one rank each: every rank's tokens right at home, no RNR NAK, every object released" {
	for k in 0 1 2 3; do
		[ "$(status_of $((k + 1)) moe4)" = 0 ] || fail "node $((k + 1)), moe4: $(cat "$(moe_log $k moe4)")"
		run cat "$(moe_log $k moe4)"
		assert_line --regexp "^launcher +: none: rank $k of 4, from --rank and --world-size$"
		assert_line --regexp '^QPs +: 3 here, 12 in the job: N x \(N - 1\) for N = 4$'
		assert_line --regexp '^check +: right: all 16 of our tokens, '
		assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: '
		assert_line --regexp '^teardown +: every object released$'
		refute_line --regexp '^error: '
	done
	run cat "$(moe_log 0 moe4)"
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +dispatch +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +combine +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
}

@test "nodes: step 09's capture against its layout: every WRITE from node A lands in node B's buffer at the offset A's prefix sums gave, as long as A said, N - 1 FETCH_ADDs a phase into each node after the data, no RNR NAK" {
	# What the ranks printed agrees with itself: the counts' rows and columns, the prefix sums, the posts.
	run moe_layout_check moe4 4
	refute_line --regexp '^bad: '
	assert_line 'posts 36'
	run moe_plan moe4 4
	refute_line --regexp '^bad: '
	echo "$output" >"$BATS_TEST_TMPDIR/plan"
	run moe_capture_check moe4 "$BATS_TEST_TMPDIR/plan"
	refute_line --regexp '^bad: '
	# No RNR NAK (AETH syndrome 001xxxxx); other NAKs (011xxxxx) are shown below.
	assert_line --regexp '^naks 0 [0-9]+$'
	# Every ordered pair of the 4 nodes, and 3 FETCH_ADDs (one a phase) from each of the 3 others into each.
	[ "$(grep -c '^pair ' <<<"$output")" = 12 ] || fail "not 12 pairs: $output"
	for k in 1 2 3 4; do
		assert_line "into 198.18.0.$k 9"
	done
	file_has_line "$NODES/node1/moe4.tcpdump.log" '^0 packets dropped by kernel$' || fail "$(cat "$NODES/node1/moe4.tcpdump.log")"
	while read -r _ src dst writes bytes offs sigs again; do
		echo "# moe4, node ${src##*.} to node ${dst##*.}: $writes WRITEs, $bytes B as the layout said, each at node ${dst##*.}'s buffer + its post's offset (layout, dispatch, combine: $offs); FETCH_ADD +1 at + $sigs; $again packets sent again" >&3
	done < <(grep '^pair ' <<<"$output")
	echo "# moe4: $(sed -n 's/^naks 0 \([0-9]*\)$/\1/p' <<<"$output") NAKs other than RNR" >&3
}

@test "nodes: step 10 across 4 nodes (trainers on nodes 1 and 2, a replica of --tp 2 on nodes 3 and 4), --way all: each round every way's check passes on both serving nodes, and rank 0's table has the plan's bytes: push's and TCP's busiest sender half the version, the gather's rank 0 all of it; every object released" {
	for k in 1 2 3 4; do
		[ "$(status_of $k weights4)" = 0 ] || fail "node $k, weights4: $(cat "$NODES/node$k/weights4.log")"
		run cat "$NODES/node$k/weights4.log"
		assert_line --regexp "^launcher +: none: rank $((k - 1)) of 4, from --rank and --world-size$"
		assert_line --regexp '^teardown +: every object released$'
	done
	for k in 3 4; do
		run cat "$NODES/node$k/weights4.log"
		for v in 1 2 3; do
			for w in push gather tcp; do
				assert_line --regexp "^check +: version $v by $w: all 1453312 B of our slices right, byte for byte as the plan says, in [0-9.]+ ms\$"
			done
		done
	done
	run cat "$NODES/node1/weights4.log"
	[ "$(grep -cE '^ +push( +[0-9.]+){3} +0 +1453312 +2 +1453312 +1453312 +1\.00 +0$' <<<"$output")" = 3 ] || fail "push's rows: $output"
	[ "$(grep -cE '^ +gather( +[0-9.]+){3} +0 +2906624 +2 +1453312 +4359296 +[0-9.]+ +0$' <<<"$output")" = 3 ] || fail "gather's rows: $output"
	[ "$(grep -cE '^ +tcp( +[0-9.]+){3} +[01] +1453312 +2 +1453312 +1453312 +[0-9.]+ +0$' <<<"$output")" = 3 ] || fail "tcp's rows: $output"
	# The last round's table, for the record.
	sed -n '/^# weight sync, round 3 /,/^ *tcp /p' <<<"$output" | sed 's/^/# weights4: /' >&3
}

# On one rxe a chain's WRITEs often complete before the trainer has converted the next
# (make test's FP8 case allows 1 slot in flight); across a wire of about 22 MB/s a chain
# of 64 KiB takes milliseconds, so the staging slots must overlap the writes.
@test "nodes: step 10 with --serve-dtype fp8 across 4 nodes: each trainer converts the next chain while earlier ones are on the wire, 2 or more staging slots in flight at once; both serving nodes check every byte of both versions" {
	for k in 1 2 3 4; do
		[ "$(status_of $k fp8w4)" = 0 ] || fail "node $k, fp8w4: $(cat "$NODES/node$k/fp8w4.log")"
		run cat "$NODES/node$k/fp8w4.log"
		assert_line --regexp '^teardown +: every object released$'
	done
	for k in 1 2; do
		run cat "$NODES/node$k/fp8w4.log"
		for v in 1 2; do
			assert_line --regexp "^convert +: version $v: 1453312 B of BF16 to 726656 B of FP8 E4M3, in 41 chains through 4 staging slots of 65536 B: [0-9.]+ ms of CPU converting, [0-9.]+% of the push's [0-9.]+ ms; at most [2-4] slots in flight at once, [0-9]+ chains waited for a free one\$"
			echo "# fp8w4, node $k: $(grep "^convert *: version $v:" <<<"$output" | sed 's/^convert *: //')" >&3
		done
	done
	for k in 3 4; do
		run cat "$NODES/node$k/fp8w4.log"
		assert_line "check               : round 1: version 1 in buffer 1: all 726656 B of our slices right, byte for byte as the plan says"
		assert_line "check               : round 2: version 2 in buffer 0: all 726656 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
	done
}

@test "nodes: a rank killed on node 3 mid-run is named by the ranks on nodes 1 and 2, in bounded time" {
	for k in 1 2; do
		[ "$(status_of $k kill3)" = 1 ] || fail "node $k, kill3: exit status $(status_of $k kill3), not 1"
		run cat "$NODES/node$k/kill3.log"
		assert_line --regexp '^== stage 7'
		[[ $(grep '^error: ' <<<"$output" | tail -n 1) =~ ^error:\ rank\ 2:\ it\ stopped ]] ||
			fail "node $k's last error does not name rank 2: $output"
		assert_line --regexp '^teardown +: every object released$'
		# -t 10: set-up, the second of stage 7 before the kill, then at most 2 x -t.
		seconds=$(awk -F'\t' '$1 == "kill3" { print $3 }' "$NODES/node$k/status.tsv")
		[ "$seconds" -le 40 ] || fail "node $k took $seconds s to end after rank 2 was killed"
	done
}

@test "nodes: PyTorch's Gloo across 2 nodes, and Open MPI's 4 processes on node 1, reach step 07's results to the bit" {
	# torch takes over a minute to import in each VM under emulation: Gloo runs on two nodes
	# here, and on 2, 3 and 4 in make bench.
	want=$(crcs_in "$NODES/node1/ring2.log" | head -n 1)
	[ -n "$want" ] || fail "ring2 printed no CRC-32"
	for k in 1 2; do
		[ "$(crcs_in "$NODES/node$k/gloo2.log" | sort -u)" = "$want" ] || fail "Gloo on node $k: $(crcs_in "$NODES/node$k/gloo2.log"), step 07 $want"
	done
	run cat "$NODES/node1/gloo2.log"
	assert_line --regexp '^(\[default0\]:)?launcher +: gloo: rank 0 of 2$'
	assert_line --regexp "^(\[default0\]:)?transport +: PyTorch .*'s Gloo over TCP \(eth0\)$"
	assert_line --regexp '^(\[default0\]:)?check +: right: .* 0 wrong, over 2 ranks and 1 sizes$'
	want=$(crcs_in "$NODES/node1/ring4.log" | head -n 1)
	run cat "$NODES/node1/mpi4.log"
	assert_line --regexp '^launcher +: mpi: rank 0 of 4$'
	assert_line --regexp '^transport +: Open MPI v4\.[0-9.]+ \(mpi4py [0-9.]+\), byte transfer layers: self,vader$'
	assert_line --regexp '^check +: right: .* 0 wrong, over 4 ranks and 1 sizes$'
	[ "$(crcs_in "$NODES/node1/mpi4.log" | sort | uniq -c | awk '{ print $1, $2 }')" = "4 $want" ] ||
		fail "Open MPI's 4 ranks: $(crcs_in "$NODES/node1/mpi4.log" | tr '\n' ' '), step 07 $want"
}

@test "nodes: make train's job across 2 nodes, one rank each: DDP's gradients cross the wire through step 07's ring, and with two ranks (a + b = b + a) ring and Gloo train to the bit" {
	# Each rank opened its own node's device (namespaces see every node's): rxe0 in a VM, rxeK in namespace K.
	for k in 1 2; do
		dev=$(sed -n 's/^node [0-9]*: device \([^,]*\), .*/\1/p' "$NODES/node$k/console.log")
		[ -n "$dev" ] || fail "node $k named no device: $(head -n 5 "$NODES/node$k/console.log")"
		run cat "$NODES/node$k/train2.log"
		assert_line --regexp "^(\[default[0-9]+\]:)?ring_comm +: rank $((k - 1)) of 2 \(pid [0-9]+\) joined step 07's ring .*; device $dev$"
	done
	run cat "$NODES/node1/train2.log"
	assert_line --regexp '^(\[default0\]:)?agreement +: ring and gloo: largest loss difference 0 over 10 steps; largest weight difference 0 \(the same to the bit\)$'
	assert_line --regexp '^(\[default0\]:)?agreement +: ring-fixed and gloo-fixed: largest loss difference 0 over 10 steps; largest weight difference 0 \(the same to the bit\)$'
	assert_line --regexp '^(\[default0\]:)?bucket sums +: every bucket of 2 steps, 567312 elements: ring and Gloo sums differ by at most 0, .* 0 elements outside it$'
	assert_line --regexp '^(\[default0\]:)?run +: ring: held-back loss [0-9.]+ before, [0-9.]+ after 10 steps; held-back accuracy '
}
