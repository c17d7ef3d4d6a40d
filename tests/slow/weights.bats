#!/usr/bin/env bats
# weights.bats: step 10 beyond make test: a serving rank killed mid-update with two replicas (a trainer held after its first chain of version 2), named by every rank within the bound, every surviving serving rank (its replica's other rank, the other replica's two) still on version 1, checked byte for byte; layouts that disagree in --model-dim, --tp or --layers refused at the start, naming the rank and the option; --late-replica, a replica that joins after round 1 and READs the served version from a live one, checked byte for byte, and its refusals; --serve-dtype fp8 beside the late replica and beside --way gather ('make test-weights').

bats_require_minimum_version 1.5.0

setup() {
	load ../lib/test_helper
	load ../lib/ring
}

# A model of 2.9 MB: Llama-3 8B's shapes at D = 128, 2 layers, as tests/10_weight_sync.bats.
SMALL=(--trainers 2 --tp 2 --model-dim 128 --layers 2)

# Rank 0's rounds in a --late-replica run of 3 updates, ONE the bytes of one replica's version:
# round 1 checked on the live replica alone, rounds 2 and 3 on both.
assert_late_rounds() { # ONE
	use_output_of r0
	assert_line --regexp "^round +: 1: version 1 whole in 1 replica \\(the late replica joins after this round\\): $1 B checked on 2 serving ranks, 0 wrong; "
	for v in 2 3; do
		assert_line --regexp "^round +: $v: version $v whole in 2 replicas: $((2 * $1)) B checked on 4 serving ranks, 0 wrong; "
	done
}

@test "weights: serving rank 3 killed mid-update (trainer 1 holds after its first chain of version 2), 2 trainers and 2 replicas of --tp 2: every rank names rank 3 within the bound; rank 2 (its replica) and ranks 4 and 5 (the other) still serve version 1, whole, checked byte for byte; all freed" {
	record_baseline
	# Trainer 1 stops after its first chain of version 2, looking at the control channel:
	# version 2 is half pushed when rank 3 dies, and its death closes its connection to
	# rank 0, which names it to every rank.
	RING_STEP=10_weight_sync start_ring 6 -t 10 "${SMALL[@]}" --updates 3 --hold 1:30000
	wait_for_line "$BATS_TEST_TMPDIR/r1.out" '^hold ' 60
	kill_rank_and_assert_named 3 11
	use_output_of r0
	assert_line --regexp '^round +: 1: version 1 whole in 2 replicas: 5813248 B checked on 4 serving ranks, 0 wrong; '
	refute_line --regexp '^round +: 2: '
	use_output_of r1
	assert_line --regexp '^hold +: rank 1 stops 30000 ms in round 2, mid-update \(--hold\)'
	refute_line --regexp '^push +: version 2: '
	for k in 2 4 5; do
		use_output_of "r$k"
		assert_line "check               : round 1: version 1 in buffer 1: all 1453312 B of our slices right, byte for byte as the plan says"
		assert_line "versions            : the update after version 1 did not finish: we still serve version 1 from buffer 1, whole (checked byte for byte)"
		refute_line --regexp '^check +: round 2: '
	done
}

# Runs 4 ranks of SMALL, rank RANK given ARGS too, and checks that every rank names RANK, within
# 15 s, as given the options GIVEN, not rank 0's, DIFFERS saying which differs first.
assert_layout_refused() { # RANK ARGS GIVEN DIFFERS
	local rank=$1 rank0="--trainers 2 --tp 2 --model-dim 128 --layers 2 --updates 3 --seed 1"
	local "RANK_ARGS_$rank=$2"
	RING_STEP=10_weight_sync run_ring 4 -t 5 "${SMALL[@]}"
	assert_all_name "$rank" "it was given other options than rank 0: $3; rank 0: $rank0; the first that differs: $4\$" 15
}

# Every rank computes the plan from its own options: the rendezvous compares them, and names the option.
@test "weights: layouts that disagree are refused at the start: --model-dim 256 on rank 3 of 4, --tp 1 on rank 2, --layers 1 on rank 1: every rank names the rank and the option, no WRITE posted; all freed" {
	record_baseline
	assert_layout_refused 3 "--model-dim 256" "--trainers 2 --tp 2 --model-dim 256 --layers 2 --updates 3 --seed 1" "its --model-dim 256, rank 0's --model-dim 128"
	for k in 0 1 2 3; do
		use_output_of "r$k"
		refute_line --regexp '^ibv_post_send '
	done
	assert_layout_refused 2 "--tp 1" "--trainers 2 --tp 1 --model-dim 128 --layers 2 --updates 3 --seed 1" "its --tp 1, rank 0's --tp 2"
	assert_layout_refused 1 "--layers 1" "--trainers 2 --tp 2 --model-dim 128 --layers 1 --updates 3 --seed 1" "its --layers 1, rank 0's --layers 2"
	for k in 0 1 2 3; do
		use_output_of "r$k"
		refute_line --regexp '^ibv_post_send '
	done
}

@test "weights: --late-replica: replica 1 (ranks 4 and 5) joins after round 1, each rank READs version 1 from its twin in replica 0 (its version word first, then its buffer, within the agreed rd_atomic and max_msg_sz), checks it byte for byte, then takes versions 2 and 3 with the others; the trainers WRITE nothing to it in round 1; all freed" {
	record_baseline
	RING_STEP=10_weight_sync run_ring 6 -t 20 --trainers 2 --tp 2 --model-dim 128 --layers 2 --updates 3 --late-replica
	assert_ring_success
	assert_late_rounds 2906624
	for k in 0 1; do
		use_output_of "r$k"
		assert_line "QPs                 : 4 here, 20 in the job: one per trainer and serving rank, T x S = 2 x 4, and one per rank of the late replica to the rank of replica 0 it pulls from, 2"
		assert_line --regexp "^push +: version 1: 1453312 B in 523 WRITEs, 34 posts \\(each a chain, its last WR signalled\\), 2 FETCH_ADDs, 34 completions, in "
		for v in 2 3; do
			assert_line --regexp "^push +: version $v: 2906624 B in 1046 WRITEs, 68 posts \\(each a chain, its last WR signalled\\), 4 FETCH_ADDs, 68 completions, in "
		done
		refute_line --regexp "^ibv_post_send +: version 1 to rank [45]: "
	done
	for k in 2 3; do
		use_output_of "r$k"
		assert_line --regexp "^access +: .*remote_read.*: the trainers WRITE our slices into the version buffer being filled, and FETCH_ADD their signal words; the late replica's rank READs the version we serve\$"
		refute_line --regexp '^ibv_post_send '
	done
	for k in 4 5; do
		use_output_of "r$k"
		assert_line --regexp "^role +: rank $k serves: replica 1, TP rank $((k - 4)) of 2; its slice is 1453312 B .*; it joins after round 1 \\(--late-replica\\)\$"
		assert_line "late                : replica 1 joins after round 1 (--late-replica): no trainer WRITEs version 1 to it, and it serves nothing yet"
		assert_line --regexp "^rd_atomic +: agreed with the peer: 4 of ours in flight \\(we offer 4, it serves up to [0-9]+\\)"
		assert_line "ibv_post_send       : pull from rank $((k - 2)): 1 READ, 8 B in all, from its byte 128, the last signalled (at most 4 in flight: the rd_atomic agreed with it)"
		assert_line "ibv_post_send       : pull from rank $((k - 2)): 4 READs, 1048576 B in all, from its byte 1453824, the last signalled (at most 4 in flight: the rd_atomic agreed with it)"
		assert_line "ibv_post_send       : pull from rank $((k - 2)): 2 READs, 404736 B in all, from its byte 2502400, the last signalled (at most 4 in flight: the rd_atomic agreed with it)"
		assert_line --regexp "^pull +: version 1 from rank $((k - 2))'s buffer 1 by RDMA READ, not from the trainers: its version word \\(8 B\\) read first, then 1453312 B, in 7 READs of at most 262144 B \\(the smaller of 262144 and the port's max_msg_sz [0-9]+\\), at most 4 in flight \\(the agreed rd_atomic\\), in [0-9.]+ ms\$"
		assert_line "check               : pulled: version 1 in buffer 1: all 1453312 B of our slices right, byte for byte as the plan says; we serve it from now"
		refute_line --regexp '^check +: round 1: '
		assert_line "signals             : version 2: the words of all 2 trainers read 1: every run of it is in buffer 0, no receive posted"
		assert_line "check               : round 2: version 2 in buffer 0: all 1453312 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
		assert_line "check               : round 3: version 3 in buffer 1: all 1453312 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "weights: --serve-dtype fp8 with --late-replica: replica 1 READs version 1 in FP8 from its twin (the serving layout's bytes, nothing to convert), checks every byte against the E4M3 conversion, then takes versions 2 and 3 converted on the way; the trainers' pushes through their staging slots; all freed" {
	record_baseline
	RING_STEP=10_weight_sync run_ring 6 -t 20 "${SMALL[@]}" --updates 3 --late-replica --serve-dtype fp8
	assert_ring_success
	assert_late_rounds 1453312
	for k in 0 1; do
		use_output_of "r$k"
		assert_line --regexp "^push +: version 1: 726656 B in 530 WRITEs, 41 posts \\(each a chain, its last WR signalled\\), 2 FETCH_ADDs, 41 completions, in "
		for v in 2 3; do
			assert_line --regexp "^push +: version $v: 1453312 B in 1060 WRITEs, 82 posts \\(each a chain, its last WR signalled\\), 4 FETCH_ADDs, 82 completions, in "
			assert_line --regexp "^convert +: version $v: 2906624 B of BF16 to 1453312 B of FP8 E4M3, in 82 chains through 4 staging slots of 65536 B: "
		done
		refute_line --regexp "^ibv_post_send +: version 1 to rank [45]: "
	done
	for k in 4 5; do
		use_output_of "r$k"
		assert_line "ibv_post_send       : pull from rank $((k - 2)): 3 READs, 726656 B in all, from its byte 727168, the last signalled (at most 4 in flight: the rd_atomic agreed with it)"
		assert_line --regexp "^pull +: version 1 from rank $((k - 2))'s buffer 1 by RDMA READ, not from the trainers: its version word \\(8 B\\) read first, then 726656 B, in 4 READs of at most 262144 B "
		assert_line "check               : pulled: version 1 in buffer 1: all 726656 B of our slices right, byte for byte as the plan says; we serve it from now"
		assert_line "check               : round 3: version 3 in buffer 1: all 726656 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "weights: --serve-dtype fp8 with --way gather: the other trainer WRITEs its BF16 shard to rank 0, which alone converts, through its staging slots, every trainer's runs into the replica; every FP8 byte checked; all freed" {
	record_baseline
	RING_STEP=10_weight_sync run_ring 4 -t 20 "${SMALL[@]}" --updates 2 --way gather --serve-dtype fp8
	assert_ring_success
	use_output_of r0
	assert_line --regexp "^access +: none: --serve-dtype fp8: the staging slots, registered once here"
	for v in 1 2; do
		assert_line --regexp "^gather +: version $v: the words of the 1 other trainers read $v: the whole model is here, 2905344 B, in "
		assert_line --regexp "^gather +: version $v: every trainer's runs from here, 1453312 B in 1060 WRITEs, 80 posts, 2 FETCH_ADDs \\(one a serving rank, on its gathered word\\), in "
		assert_line --regexp "^convert +: version $v: 2906624 B of BF16 to 1453312 B of FP8 E4M3, in 80 chains through 4 staging slots of 65536 B: "
		assert_line --regexp "^round +: $v: version $v whole in 1 replica: 1453312 B checked on 2 serving ranks, 0 wrong; "
	done
	use_output_of r1
	assert_line --regexp "^gather +: version 1: our shard, 1452672 B, one WRITE into rank 0's buffer at its byte 1453184, "
	# It converts nothing: no staging slots registered.
	refute_line --regexp "^access +: none: "
	for k in 2 3; do
		use_output_of "r$k"
		for v in 1 2; do
			assert_line --regexp "^check +: version $v by gather: all 726656 B of our slices right, byte for byte as the plan says, in [0-9.]+ ms\$"
		done
		assert_line "check               : round 2: version 2 in buffer 0: all 726656 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
	done
	assert_back_to_baseline
}

@test "weights: --late-replica is refused without a live replica to pull from, or without a round after the first" {
	run_step 10_weight_sync --rank 0 --world-size 4 --trainers 2 --tp 2 --late-replica
	assert_failure 2
	assert_line "error: --late-replica with 1 replica and --updates 3: a late replica pulls version 1 from a live one after round 1, then takes round 2: give 2 replicas or more (--world-size) and --updates 2 or more"
	run_step 10_weight_sync --rank 0 --world-size 6 --trainers 2 --tp 2 --updates 1 --late-replica
	assert_failure 2
	assert_line "error: --late-replica with 2 replicas and --updates 1: a late replica pulls version 1 from a live one after round 1, then takes round 2: give 2 replicas or more (--world-size) and --updates 2 or more"
}
