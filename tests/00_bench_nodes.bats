#!/usr/bin/env bats
# 00_bench_nodes.bats: make bench-nodes' report (tests/bench/nodes/report.sh) on the logs of one real 4-node run: step 09's model, its ratios and its check, worked out by hand.
# Needs no RDMA device: it reads logs (tests/bench/nodes/fixture.txt), so it runs on the host.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	dir=$BATS_TEST_TMPDIR/nodes
	# Each "==> PATH <==" section of the fixture becomes the file PATH under $dir.
	awk -v dir="$dir" 'NR == 1 { next }
		/^==> .* <==$/ { file = dir "/" $2; sub(/\/[^\/]*$/, "", $2); system("mkdir -p \"" dir "/" $2 "\""); next }
		{ print > file }' "$PROJECT_ROOT/tests/bench/nodes/fixture.txt"
}

@test "bench-nodes report, step 09: each row's model is its slowest pair's bytes over that pair's all-pairs ib_write_bw plus ib_atomic_lat, with /model, /ib_write_bw and TCP's ratio" {
	run "$PROJECT_ROOT/tests/bench/nodes/report.sh" "$dir"
	assert_success
	# The 12 ordered pairs' ib_write_bw, MiB/s as perftest prints them, in MB/s: slowest 0.85 x
	# 1.048576 = 0.89 (node 2 to node 4), mean 1.11; FETCH_ADD's round trip 451.36 us.
	assert_line 'N = 4 nodes, step 09, one rank a node: ib_atomic_lat FETCH_ADD 8 B 451.4 us (the signal); ib_write_bw 64 KiB on all 12 ordered pairs at once: slowest 0.89, mean 1.11 MB/s'
	# The largest dispatch: rank 1 sends rank 3 1737600 B over the slowest link, 1737600 / 0.89
	# = 1952359.6 us, the largest of the 12 pairs; plus 451.36: 1952811 us.  Measured 1120202 us:
	# 0.57x the model, and the bytes term 1.74x the time; TCP's 764062 us is 0.39x the model.
	assert_line --regexp '^ +5285200 +dispatch +1120202 +1952811 +0\.57x +1\.74x +764062 +0\.39x$'
	# Its combine: rank 1 sends rank 3 the results of rank 3's tokens, 1729416 B, on the same link.
	assert_line --regexp '^ +5209776 +combine +1027847 +1943615 +0\.53x +1\.89x +728850 +0\.37x$'
	# The smallest combine's slowest pair is another: rank 2 to rank 3, 28704 B at 0.93 MB/s.
	assert_line --regexp '^ +86112 +combine +33088 +31316 +1\.06x +0\.93x +15819 +0\.51x$'
	assert_line "N = 4, step 09's check, every token of every row against the CPU reference: RDMA 8 rows, 0 tokens wrong; TCP 8 rows, 0 tokens wrong"
	assert_line --regexp '^N = 4, rxe.s counters over the nodes: ib_write_bw on every pair at once: sent_pkts 126939, .*duplicate_request 0, .*; step 09: sent_pkts 384611, '
	# The TSVs the table came from: every ordered pair once, and model = bytes term + signal (each to 0.1 us).
	[ "$(awk -F'\t' 'NR > 1 && $1 == 4' "$dir/mesh.tsv" | wc -l)" = 12 ] || fail "mesh.tsv: not 12 pairs: $(cat "$dir/mesh.tsv")"
	run awk -F'\t' 'NR > 1 && ($10 - $8 - $9 > 0.1 || $8 + $9 - $10 > 0.1) { print "row " NR ": " $0 }' "$dir/moe.tsv"
	assert_output ''
	# Step 07's table is still there, as before.
	assert [ -s "$dir/nodes.svg" ]
	run cat "$dir/nodes.txt"
	assert_line "N = 4, result crc32 at the largest size, step 07 over RDMA and TCP, Gloo and Open MPI on every rank: 0x11f7f62d on 16 lines: the same to the bit"
}

@test "bench-nodes report: a pair whose ib_write_bw printed no figure stops the report, naming the pair" {
	sed -i '/^ *65536 /d' "$dir/4/node2/mesh.client.4.log"
	run "$PROJECT_ROOT/tests/bench/nodes/report.sh" "$dir"
	assert_failure
	assert_line --partial 'bench-nodes: 4 nodes: ib_write_bw from node 2 to node 4 printed no figure'
}
