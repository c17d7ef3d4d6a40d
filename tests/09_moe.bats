#!/usr/bin/env bats
# 09_moe.bats: step 09's MoE dispatch and combine: 3 ranks on one rxe, every token checked at home, the signals counted, all freed; an option refused.

bats_require_minimum_version 1.5.0

setup() {
	load lib/test_helper
	load lib/ring
}

@test "09_moe: 3 ranks dispatch 32 tokens each to their top-4 of 12 experts and combine them back: the layout, one post per peer, N - 1 signals per phase, every token right, all freed" {
	record_baseline
	RING_STEP=09_moe run_ring 3 -t 10 --tokens 32 --hidden 256 --experts 4 --topk 4 --seed 7
	assert_ring_success
	use_output_of r0
	assert_line '#       size         count      type     phase       time   algbw   busbw #wrong'
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +dispatch +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +combine +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp '^rendezvous +: rank 0 handed on 6 QPs; the 2 made for us came back$'
	for k in 0 1 2; do
		use_output_of "r$k"
		assert_line --regexp "^launcher +: none: rank $k of 3, from --rank and --world-size$"
		assert_line --regexp '^QPs +: 2 here, 6 in the job: N x \(N - 1\) for N = 3$'
		assert_line --regexp '^layout in +: records [0-9]+ from 0 at 0, [0-9]+ from 1 at [0-9]+, [0-9]+ from 2 at [0-9]+ '
		for phase in layout dispatch combine; do
			assert_line "signal              : our $phase word reads 2 = N - 1: every peer's data is here"
		done
		assert_line --regexp '^ibv_post_send +: dispatch to rank [0-2]: [0-9]+ WRITEs? of [0-9]+ B in all at its offset [0-9]+, unsignalled, then FETCH_ADD \+1 on its dispatch word, signalled: one post$'
		assert_line --regexp '^posts +: dispatch: 2 ibv_post_send calls \(one per peer; on rxe each is one write\(\) system call\), [1-9][0-9]* WRITEs and 2 FETCH_ADDs, [1-9][0-9]* B$'
		assert_line "signals             : 2 FETCH_ADDs came to each of our 3 words (layout, dispatch, combine); we sent 6"
		assert_line "check               : right: all 32 of our tokens, every word the weighted sum of its 4 experts' outputs (CPU reference)"
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "09_moe refuses a top-k larger than the experts there are, naming the options" {
	run_step 09_moe --rank 0 --world-size 2 --experts 4 --topk 9
	assert_failure 2
	assert_line "error: --topk 9 is more than the 8 experts of 2 ranks x 4 (--experts): a token's top-k experts are distinct; lower --topk or raise --experts"
}

@test "09_moe failures: other options on rank 1, then rank 1 killed between dispatch and combine: every rank names rank 1 within the bound, all freed" {
	record_baseline
	RANK_ARGS_1="--seed 2" RING_STEP=09_moe run_ring 3 -t 5 --tokens 8 --hidden 64
	assert_all_name 1 "it was given other options than rank 0: --tokens 8 --hidden 64 --experts 8 --topk 8 --seed 2; rank 0: --tokens 8 --hidden 64 --experts 8 --topk 8 --seed 1" 15
	RING_STEP=09_moe start_ring 3 -t 5 --tokens 8 --hidden 64 --hold 1:20000
	wait_for_line "$BATS_TEST_TMPDIR/r1.out" '^hold ' 30
	kill_rank_and_assert_named 1 11
}
