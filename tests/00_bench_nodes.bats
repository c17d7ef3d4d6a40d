#!/usr/bin/env bats
# 00_bench_nodes.bats: make bench-nodes' report (tests/bench/nodes/report.sh) on the logs of real 4-node runs: step 09's model, its ratios and its check, and step 10's three ways beside theirs, worked out by hand.
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

@test "bench-nodes report, step 10: each round's three ways beside the slowest rank's bytes over ib_write_bw one pair alone" {
	run "$PROJECT_ROOT/tests/bench/nodes/report.sh" "$dir"
	assert_success
	assert_line "Step 10 across 4 nodes: 2 trainers, 2 serving ranks, 11621376 B a version; each way, each round, beside ib_write_bw's model"
	# ib_write_bw one pair alone: 15.11 MiB/s x 1.048576 = 15.84 MB/s.  Push's and TCP's slowest
	# rank moves its shard, 5810688 B: 5810688 / 15.84 / 1000 = 366.84 ms; round 1's push took
	# 940.42 ms, 2.56x.  The gather's rank 0 takes the other trainer's shard in and sends the whole
	# model out: 17430784 B, 1100.43 ms; 1436.20 ms is 1.31x.  TCP's 408.92 ms, 1.11x.
	assert_line --regexp '^ +1  push +940\.42 +5810688 +366\.84 +2\.56x +0$'
	assert_line --regexp '^ +1  gather +1436\.20 +17430784 +1100\.43 +1\.31x +0$'
	assert_line --regexp '^ +1  tcp +408\.92 +5810688 +366\.84 +1\.11x +0$'
	[ "$(awk -F'\t' 'NR > 1 && $1 == 4' "$dir/weights.tsv" | wc -l)" = 9 ] || fail "weights.tsv: not 3 ways x 3 rounds: $(cat "$dir/weights.tsv")"
	# A run whose step 10 left no log stops the report, naming it.
	rm "$dir/4/node1/weights.log"
	run "$PROJECT_ROOT/tests/bench/nodes/report.sh" "$dir"
	assert_failure
	assert_line --partial "bench-nodes: 4 nodes: step 10 left no log (job.sh's part weights)"
}

@test "bench-nodes report: a pair whose ib_write_bw printed no figure stops the report, naming the pair" {
	sed -i '/^ *65536 /d' "$dir/4/node2/mesh.client.4.log"
	run "$PROJECT_ROOT/tests/bench/nodes/report.sh" "$dir"
	assert_failure
	assert_line --partial 'bench-nodes: 4 nodes: ib_write_bw from node 2 to node 4 printed no figure'
}
