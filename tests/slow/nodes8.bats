#!/usr/bin/env bats
# nodes8.bats: step 07 and step 09 with 8 ranks on 8 nodes, network namespaces in one VM booting Linux 7.x: every rank's result, node 1's capture against the ring's schedule and against step 09's layout ('make test-nodes8').
# tests/nodes/nodes.sh starts the eight nodes once for the whole file and runs tests/nodes/cases8.tsv.
# Budget: about 3 minutes on a 2-core machine, one VM for all eight.
# bats file_tags=outside-vm

setup_file() {
	load ../lib/harness
	export NODES=$BATS_FILE_TMPDIR/nodes
	# Eight nodes want namespaces: QEMU's hub takes four VMs at most.
	boot_harness_once "$BATS_TEST_DIRNAME/../nodes/nodes.sh" "$NODES" nodes8 8 tests/nodes/cases8.tsv
}

setup() {
	load ../lib/test_helper
	load ../lib/nodes
}

@test "nodes8: 8 nodes as network namespaces of one VM, each with its own rxe device, and both cases ended well on every node" {
	run cat "$NODES/vm.boot.log"
	assert_line --regexp '^netns: 8 nodes up: namespaces node1 to node8, rxe1 to rxe8, 198\.18\.0\.1 to 198\.18\.0\.8 on the bridge nodes0 '
	for k in 1 2 3 4 5 6 7 8; do
		[ "$(status_of $k ring8)" = 0 ] || fail "node $k, ring8: $(cat "$NODES/node$k/ring8.log")"
		[ "$(status_of $k moe8)" = 0 ] || fail "node $k, moe8: $(cat "$NODES/node$k/moe8.log")"
	done
}

@test "nodes8: step 07 across 8 nodes: every rank's result right over RDMA and TCP, one CRC-32 on every rank" {
	run cat "$NODES/node1/ring8.log"
	[ "$(grep -cE '^ +786432 +196608 +int32 +sum +-1 .* 0$' <<<"$output")" = 2 ] || fail "ring8: not two right rows: $output"
	[ "$(grep -cE "^check +: right: .* 0 wrong, over 8 ranks and 1 sizes$" <<<"$output")" = 2 ] || fail "ring8: $output"
	want=$(crcs_in "$NODES/node1/ring8.log" | head -n 1)
	[ -n "$want" ] || fail "rank 0 printed no CRC-32"
	for k in 1 2 3 4 5 6 7 8; do
		run cat "$NODES/node$k/ring8.log"
		assert_line --regexp "^launcher +: none: rank $((k - 1)) of 8, from --rank and --world-size$"
		assert_line --regexp '^teardown +: every object released$'
		[ "$(crcs_in "$NODES/node$k/ring8.log" | sort -u)" = "$want" ] ||
			fail "node $k: CRC-32s $(crcs_in "$NODES/node$k/ring8.log" | tr '\n' ' ') against rank 0's $want"
	done
	grep -E '^ +786432 +196608 +int32 +sum ' "$NODES/node1/ring8.log" | sed 's/^/# ring8, rank 0: /' >&3
}

@test "nodes8: the capture holds WRITEs only from each node to the next, credits only back, and each rank's WRITEs carry exactly 3 x 2(N-1)/N x S" {
	n=8
	assert_ring_schedule "$n" ring8
	file_has_line "$NODES/node1/ring8.tcpdump.log" '^0 packets dropped by kernel$' || fail "$(cat "$NODES/node1/ring8.tcpdump.log")"
	posted=$(sed -n 's/^bytes posted *: each rank \([0-9]*\) B per all_reduce of S = 786432 B; .*: exact .*/\1/p' "$NODES/node1/ring8.log")
	[ "$posted" = $((2 * (n - 1) * 786432 / n)) ] || fail "ring8: rank 0 printed '$posted' bytes posted per rank"
	run write_bytes_of ring8
	[ "${#lines[@]}" = "$n" ] || fail "ring8: WRITEs between ${#lines[@]} pairs of nodes, not $n: $output"
	for ((k = 1; k <= n; k++)); do
		assert_line --regexp "^198\.18\.0\.$k 198\.18\.0\.$((k % n + 1)) $((3 * posted)) [0-9]+ [0-9]+$"
	done
	while read -r src dst data frames again; do
		echo "# ring8, $src to $dst: $data B of data in $frames B of frames, $again packets sent again" >&3
	done <<<"$output"
}

@test "nodes8: step 09 across 8 nodes: every rank's tokens right at home over 56 QPs, no RNR NAK, and the capture against every rank's layout" {
	for k in 0 1 2 3 4 5 6 7; do
		run cat "$(moe_log $k moe8)"
		assert_line --regexp "^launcher +: none: rank $k of 8, from --rank and --world-size$"
		assert_line --regexp '^QPs +: 7 here, 56 in the job: N x \(N - 1\) for N = 8$'
		assert_line --regexp '^check +: right: all 16 of our tokens, '
		assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: '
		assert_line --regexp '^teardown +: every object released$'
		refute_line --regexp '^error: '
	done
	grep -E '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +(dispatch|combine) ' "$(moe_log 0 moe8)" | sed 's/^/# moe8, rank 0: /' >&3
	run moe_layout_check moe8 8
	refute_line --regexp '^bad: '
	assert_line 'posts 168'
	run moe_plan moe8 8
	refute_line --regexp '^bad: '
	echo "$output" >"$BATS_TEST_TMPDIR/plan"
	run moe_capture_check moe8 "$BATS_TEST_TMPDIR/plan"
	refute_line --regexp '^bad: '
	assert_line --regexp '^naks 0 [0-9]+$'
	[ "$(grep -c '^pair ' <<<"$output")" = 56 ] || fail "not 56 pairs: $output"
	for k in 1 2 3 4 5 6 7 8; do
		assert_line "into 198.18.0.$k 21"
	done
	file_has_line "$NODES/node1/moe8.tcpdump.log" '^0 packets dropped by kernel$' || fail "$(cat "$NODES/node1/moe8.tcpdump.log")"
	echo "# moe8: 56 ordered pairs, each WRITE at its layout's offset; $(sed -n 's/^naks 0 \([0-9]*\)$/\1/p' <<<"$output") NAKs other than RNR" >&3
}
