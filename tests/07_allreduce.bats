#!/usr/bin/env bats
# 07_allreduce.bats: step 07's ring all-reduce: N ranks on one rxe, the sum checked, the credits proved, every failure named by every rank.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper
}

# Starts N ranks of 07_allreduce on a fresh port, ARGS... given to each, as r0 ... r(N-1),
# each against 127.0.0.1.  RANK_ARGS_k, when set, adds its words for rank k (a later
# option wins); SKIP_RANK leaves one rank out.
start_ring() {
	local n=$1 k extra
	shift
	RING_N=$n RING_PORT=$(pick_port) RING_START=$SECONDS
	for ((k = 0; k < n; k++)); do
		[ "$k" != "${SKIP_RANK:-}" ] || continue
		extra=RANK_ARGS_$k
		# shellcheck disable=SC2086
		start_step "r$k" 07_allreduce -d "$DEV" -p "$RING_PORT" --rank "$k" --world-size "$n" "$@" ${!extra:-} 127.0.0.1
	done
}

# Waits for every rank started; ring_status[k] holds rank k's exit status, RING_SECONDS the wall time.
finish_ring() {
	local k pid
	ring_status=()
	for ((k = 0; k < RING_N; k++)); do
		[ "$k" != "${SKIP_RANK:-}" ] || continue
		pid=r${k}_pid
		status=0
		wait "${!pid}" || status=$?
		ring_status[k]=$status
	done
	RING_SECONDS=$((SECONDS - RING_START))
}

run_ring() {
	start_ring "$@"
	finish_ring
}

# Fails unless every rank exited with 0.
assert_ring_success() {
	local k
	for ((k = 0; k < RING_N; k++)); do
		[ "${ring_status[k]}" -eq 0 ] || fail "rank $k exited with ${ring_status[k]}: $(cat "$BATS_TEST_TMPDIR/r$k.out")"
	done
}

# Fails unless every rank started ended with 1 within BOUND seconds, its last error
# line (the only one, on a rank that did not fail itself) being "error: rank FAILED: CAUSE".
assert_all_name() {
	local failed=$1 cause=$2 bound=$3 k errors
	[ "$RING_SECONDS" -le "$bound" ] || fail "the ranks took $RING_SECONDS s to end, more than $bound"
	for ((k = 0; k < RING_N; k++)); do
		[ "$k" != "${SKIP_RANK:-}" ] || continue
		use_output_of "r$k"
		[ "${ring_status[k]}" -eq 1 ] || fail "rank $k exited with ${ring_status[k]}, not 1: $output"
		errors=$(grep -c '^error: ' <<<"$output")
		[ "$errors" -eq 1 ] || [ "$k" = "$failed" ] || fail "rank $k printed $errors error lines: $output"
		[[ $(grep '^error: ' <<<"$output" | tail -n 1) =~ ^error:\ rank\ $failed:\ $cause ]] ||
			fail "rank $k's last error does not name rank $failed ($cause): $output"
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "07_allreduce: 3 ranks sum 0, 1, 16 (not divisible by 3), 256 ... 65536 floats over verbs: the table, the bytes, no RNR NAK, every rank right, all freed" {
	record_baseline
	rnr_before=$(rnr_naks)
	run_ring 3 -t 10 -b 0 --maxbytes 256K -f 16 -n 2 -w 1
	assert_ring_success
	[ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks)"
	use_output_of r0
	assert_line '#       size         count      type   redop    root     time   algbw   busbw #wrong'
	for row in '0 0' '4 1' '64 16' '1024 256' '16384 4096' '262144 65536'; do
		assert_line --regexp "^ +${row% *} +${row#* } +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$"
	done
	# 65536 floats in 3 chunks: 21846, 21845, 21845 elements; each rank posts 2 chunks per half.
	assert_line --regexp '^bytes posted +: 349524 to 349528 B per rank per all_reduce of S = 262144 B, against 2\(N-1\)/N x S = 349525.3 B: 65536 elements do not split into 3 equal chunks, so the first 1 of them have one element more; all ranks together posted 1048576 B = 2\(N-1\) x S, exactly$'
	assert_line --regexp '^device counters +: rxe[0-9]*: sent_pkts \+[1-9][0-9]*, rcvd_pkts \+[1-9][0-9]* over the RDMA sweep \(per device: every rank on this node adds to them\)$'
	assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: no WRITE found its receive missing'
	assert_line --regexp "^check +: right: every rank's result checked element by element after a run on fresh data: 0 wrong, over 3 ranks and 6 sizes$"
	assert_line --regexp '^rendezvous +: all 3 ranks came; each was sent its neighbours. QPs$'
	for k in 0 1 2; do
		use_output_of "r$k"
		assert_line --regexp "^launcher +: none: rank $k of 3, from --rank and --world-size$"
		assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: port 1, pkey index 0, remote access none '
		assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: port 1, pkey index 0, remote access remote_write '
		assert_line --regexp '^ibv_post_send +: credit for slot 7: a SEND with immediate 7 and no bytes, to the previous rank$'
		assert_in_order '^ibv_destroy_qp ' '^ibv_destroy_cq ' '^ibv_destroy_qp ' '^ibv_destroy_cq ' '^ibv_dereg_mr ' '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_close_device ' '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "07_allreduce: the halves alone on int32, and K = 1 with rank 1 slowed: right, no RNR NAK; 2 ranks still use two QPs each; over TCP too" {
	record_baseline
	rnr_before=$(rnr_naks)
	run_ring 4 -t 10 -o reduce_scatter --datatype int32 -b 40 --maxbytes 40 --slots 1 --slot-bytes 8 --slow 1:20 -n 2 -w 0
	assert_ring_success
	[ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks)"
	use_output_of r0
	assert_line --regexp '^# reduce_scatter over RDMA \(verbs\): 4 ranks, int32, K = 1 slots of C = 8 bytes$'
	assert_line --regexp '^ +40 +10 +int32 +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp "^check +: right: "
	run_ring 2 -t 10 -o all_gather --transport both -b 4K --maxbytes 4K -n 2 -w 0
	assert_ring_success
	use_output_of r0
	assert_line --regexp '^# all_gather over TCP: 2 ranks, float, K = 8 slots of C = 65536 bytes$'
	[ "$(grep -cE '^ +4096 +1024 +float +sum +-1 .* 0$' <<<"$output")" -eq 2 ] || fail "not one row per transport: $output"
	assert_line --regexp '^bytes posted +: each rank 2048 B per all_gather of S = 4096 B; \(N-1\)/N x S = 2048 B: exact \(S is 2 chunks of 512 whole elements\)$'
	assert_line --regexp '^rdma/tcp 4096 B +: time [0-9.]+ / [0-9.]+ us = [0-9.]+; CPU of this rank per run: rdma [0-9.]+ us, tcp [0-9.]+ us$'
	use_output_of r1
	[ "$(grep -c '^ibv_create_qp ' <<<"$output")" -eq 2 ] || fail "rank 1 of 2 did not create two QPs: $output"
	assert_line --regexp '^tcp ring +: connected: to rank 0 at 127.0.0.1 port [0-9]+, from rank 0$'
	assert_back_to_baseline
}

@test "07_allreduce failures at the rendezvous: a rank that never comes, other options, world sizes, one rank twice, a rank past the world, no rank 0: every rank names the rank" {
	record_baseline
	SKIP_RANK=2
	run_ring 3 -t 2
	assert_all_name 2 "it never came to the rendezvous within 2 s" 5
	unset SKIP_RANK
	RANK_ARGS_2="--datatype int32" run_ring 3 -t 5
	assert_all_name 2 "it was given other options than rank 0: -o all_reduce --datatype int32 " 5
	RANK_ARGS_1="--world-size 4" run_ring 3 -t 5
	assert_all_name 1 "it was given world size 4, rank 0 world size 3" 5
	RANK_ARGS_2="--rank 1" run_ring 3 -t 5
	assert_all_name 1 "two processes claim rank 1" 5
	RANK_ARGS_2="--rank 5" run_ring 3 -t 5
	assert_all_name 5 "rank 5 is past the world size 3 \(ranks are 0 to 2\)" 5
	SKIP_RANK=0
	run_ring 2 -t 1
	assert_all_name 0 "no rendezvous at 127.0.0.1 port $RING_PORT within 1 s \(Connection refused\): is rank 0 running, with the same -p\?" 4
}

@test "07_allreduce failures in the run: a rank killed, a verb failed on one rank only: every rank, two hops away too, names it within the bound" {
	record_baseline
	start_ring 4 -t 3 -b 1M --maxbytes 1M -n 100000 -w 0
	for k in 0 1 2 3; do wait_for_line "$BATS_TEST_TMPDIR/r$k.out" '^== stage 7' 30; done
	nap 0.5
	pkill -KILL -P "$r1_pid"
	finish_ring
	ring_status[1]=1
	SKIP_RANK=1
	assert_all_name 1 "" 8
	unset SKIP_RANK
	RDMA_STEPS_FAIL_AT=post_send RDMA_STEPS_FAIL_RANK=2 run_ring 3 -t 3 -b 4K --maxbytes 4K -n 1 -w 0
	assert_all_name 2 "it could not send a credit" 5
	use_output_of r2
	assert_line 'error: ibv_post_send (credit) failed: Cannot allocate memory (errno 12)'
	use_output_of r0
	assert_line --regexp '^fault points +: RDMA_STEPS_FAIL_AT is for rank 2 only \(RDMA_STEPS_FAIL_RANK\)$'
}

# bats test_tags=host
@test "07_allreduce --schedule: the ring's plan, run on the CPU, equals the plain sum for 1 to 8 ranks, odd counts, every collective and type" {
	for n in 1 2 3 4 5 6 7 8; do
		for count in 0 1 $((n - 1)) $((n + 1)) 1000 1001; do
			for op in all_reduce reduce_scatter all_gather; do
				for dt in float int32; do
					run "$BIN/07_allreduce" --schedule --world-size "$n" -b $((4 * count)) --maxbytes $((4 * count)) -o "$op" --datatype "$dt" --slot-bytes 12
					[ "$status" -eq 0 ] || fail "N=$n, $count elements, $op, $dt: $output"
				done
			done
		done
	done
	run "$BIN/07_allreduce" --schedule --world-size 3 -b 40 --maxbytes 40 --slot-bytes 8
	assert_success
	assert_line --regexp '^step 0 rank 0 +: sends chunk 2 \(elements 7 to 10, 2 pieces\) to rank 1, which adds it in$'
	assert_line --regexp '^step 2 rank 0 +: sends chunk 0 \(elements 0 to 4, 2 pieces\) to rank 1, which copies it$'
	assert_line --regexp '^rank 1 +: posts 56 bytes in 8 pieces, takes 8$'
	assert_line --regexp '^reference check +: all_reduce of 10 float elements on 3 ranks, pieces of 2: 0 wrong \(every rank equals the plain CPU sum\)$'
}

# bats test_tags=host
@test "07_allreduce: the rank from each launcher's variables, the innermost first, and what is missing" {
	run "$BIN/07_allreduce" -t 1 --help
	assert_success
	assert_output --partial 'the innermost launcher wins (srun running torchrun:'
	run env RANK=1 WORLD_SIZE=4 SLURM_PROCID=0 SLURM_NTASKS=2 MASTER_ADDR=10.0.0.1 "$BIN/07_allreduce" -t 1
	assert_line --index 0 --regexp '^launcher +: torchrun: rank 1 of 4, from RANK and WORLD_SIZE$'
	assert_line --index 1 --regexp '^rendezvous +: rank 0 at 10.0.0.1, TCP port 18515 '
	run env OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=3 SLURM_PROCID=0 SLURM_NTASKS=1 "$BIN/07_allreduce"
	assert_failure 2
	assert_line --index 0 --regexp '^launcher +: Open MPI: rank 2 of 3, from OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE$'
	assert_line --index 1 "error: rank 2: no address for rank 0's rendezvous: give it as HOST or set MASTER_ADDR (torchrun sets it; with mpirun add -x MASTER_ADDR=HOST)"
	run env PMI_RANK=1 PMI_SIZE=2 "$BIN/07_allreduce" -t 1 somehost
	assert_line --index 0 --regexp '^launcher +: MPICH: rank 1 of 2, from PMI_RANK and PMI_SIZE$'
	run env SLURM_PROCID=3 SLURM_NTASKS=4 MASTER_ADDR=h "$BIN/07_allreduce" -t 1
	assert_line --index 0 --regexp '^launcher +: Slurm: rank 3 of 4, from SLURM_PROCID and SLURM_NTASKS$'
	run "$BIN/07_allreduce"
	assert_failure 2
	assert_output --partial 'error: no rank: give --rank R --world-size N, or run under torchrun, mpirun or srun'
	run "$BIN/07_allreduce" --rank 1
	assert_failure 2
	assert_output 'error: give --rank and --world-size together, or neither (then a launcher'\''s variables give them)'
}
