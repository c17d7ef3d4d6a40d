#!/usr/bin/env bats
# serve.bats: 'make serve' checked: a small Llama-shaped model trained on 2 trainer ranks, synced by step 10 after every round into a replica of --tp 2, each tensor equal to the trainer's to the bit and the replica's tensor-parallel forward within tolerance; a bit flipped on one rank found ('make test-train').

bats_require_minimum_version 1.5.0

setup() {
	load ../lib/test_helper
}

# Round ROUND's held-back loss on trainer rank 0, from its line.
held_loss() { # ROUND
	sed -n "s/^train \{1,\}: round $1: .*, held-back loss \([0-9.]*\)\$/\1/p" <<<"$output"
}

@test "serve: 2 trainers train and step 10 syncs each of 3 versions into a replica of --tp 2: every tensor equal to the trainer's to the bit, the tensor-parallel logits within 1e-4 of the whole model's, the held-back loss falling; a bit flipped on rank 3 in the last round is found in that tensor alone, by both ranks of the replica, and the job ends 1; all freed" {
	command -v torchrun >/dev/null || fail "no torchrun: make test-train installs Debian's python3-torch (tests/tools/deps.sh collective)"
	record_baseline
	port=$(pick_port)
	RDMA_STEPS_RESULTS=$BATS_TEST_TMPDIR SERVE_RANKS=4 SERVE_MASTER_PORT=$((port + 1)) run \
		"$PROJECT_ROOT/steps/10_weight_sync/serve/serve.sh" --sync-port "$port" --rounds 3 --flip-bit 3
	echo "$output" >"$RDMA_STEPS_RESULTS/serve.out"
	[ "$status" -eq 1 ] || fail "serve.sh exited with $status, not 1 (the flipped bit): $output $(cat "$BATS_TEST_TMPDIR"/torch/*/attempt_0/*/std*.log 2>/dev/null)"
	# Step 10's own lines on rank 0 (the library joins verbosely there): the plan, checked.
	assert_line --regexp '^plan summary +: 4 pairs, [0-9]+ runs, [0-9]+ B a version \(1 replica, '
	assert_line --regexp '^plan check +: every byte of every replica.s 2 slices covered by exactly one run'
	for v in 1 2 3; do
		assert_line --regexp "^sync +: round $v: version $v: our shard.s runs WRITEn into the replica, a FETCH_ADD on each serving rank.s word, the two barriers of the flip: [0-9]+ ms\$"
	done
	# The two versions before the last: both serving ranks whole, to the bit, and their forward.
	for v in 1 2; do
		for k in 2 3; do
			assert_line --regexp "^round +: $v: rank $k \\(replica 0, TP rank $((k - 2))\\): 21 of 21 tensors, gathered, equal to the bit, logits within [0-9.e-]+ of the largest: ok\$"
		done
	done
	# The last: rank 3 flipped one bit of its slice of embed_tokens (the test aid). Each rank
	# checks the whole tensors it gathers from the replica, so both find that tensor, and only it.
	for k in 2 3; do
		assert_line --regexp "^round +: 3: rank $k \\(replica 0, TP rank $((k - 2))\\): 20 of 21 tensors, gathered, equal to the bit, logits within [0-9.e-]+ of the largest: FAILED\$"
		log=$(cat "$BATS_TEST_TMPDIR"/torch/*/attempt_0/$k/stdout.log)
		grep -q '^check               : round 3: version 3: 20 of 21 tensors, gathered from the replica.s 2 ranks, equal to trainer rank 0.s to the bit; differing: embed_tokens$' <<<"$log" ||
			fail "rank $k did not name embed_tokens alone: $log"
	done
	assert_line 'serve               : 2 check(s) failed (see above)'
	grep -q '^flip-bit            : round 3: one bit of our slice of embed_tokens flipped after it landed (the test aid)$' "$BATS_TEST_TMPDIR"/torch/*/attempt_0/3/stdout.log ||
		fail "rank 3 did not say it flipped the bit"
	! grep -q '^flip-bit' "$BATS_TEST_TMPDIR"/torch/*/attempt_0/2/stdout.log || fail "rank 2 flipped a bit too"
	# The forward's tolerance, 1e-4 of the largest logit: every ok round within it.
	while read -r within; do
		awk -v d="$within" 'BEGIN { exit !(d <= 1e-4) }' || fail "logits within $within of the largest, past 1e-4: $output"
	done < <(sed -n 's/^round .*logits within \([0-9.e-]*\) of the largest: ok$/\1/p' <<<"$output")
	# Training moved the weights each round: the held-back loss of round 3 below round 1's.
	first=$(held_loss 1) last=$(held_loss 3)
	[ -n "$first" ] && [ -n "$last" ] || fail "no held-back loss lines: $output"
	awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' || fail "the held-back loss went from $first to $last"
	for k in 0 1 2 3; do
		grep -q '^teardown            : every object released$' "$BATS_TEST_TMPDIR"/torch/*/attempt_0/$k/stdout.log ||
			fail "rank $k: $(cat "$BATS_TEST_TMPDIR"/torch/*/attempt_0/$k/stdout.log)"
	done
	assert_back_to_baseline
	sed -n '/^train .*round/p; /^round /p' <<<"$output" | sed 's/^/# /' >&3
}
