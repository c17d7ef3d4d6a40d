#!/usr/bin/env bats
# train.bats: 'make train' checked: a small model trained by PyTorch's DDP with step 07's ring beside Gloo, same seeds and data, on 4 ranks of one VM ('make test-train').

bats_require_minimum_version 1.5.0

setup() {
	load ../test_helper
}

# The value of the first number after WORDS in the line of run NAME ("run : NAME: loss A at step 0, B at step N").
run_loss() { # NAME first|last
	local line
	line=$(grep -E "^run +: $1: loss " <<<"$output") || return 1
	[[ $line =~ loss\ ([0-9.]+)\ at\ step\ 0,\ ([0-9.]+)\ at\ step ]] || return 1
	if [ "$2" = first ]; then echo "${BASH_REMATCH[1]}"; else echo "${BASH_REMATCH[2]}"; fi
}

@test "train: 4 ranks train under torchrun with DDP's buckets summed by step 07's ring and by Gloo: both losses fall, every bucket's two sums within float's order bound, fixed point the same to the bit, all freed" {
	command -v torchrun >/dev/null || fail "no torchrun: make test-train installs Debian's python3-torch (tests/deps.sh collective)"
	record_baseline
	port=$(pick_port)
	RDMA_STEPS_RESULTS=$BATS_TEST_TMPDIR TRAIN_RANKS=4 TRAIN_MASTER_PORT=$((port + 1)) run \
		"$PROJECT_ROOT/steps/07_allreduce/train/train.sh" --ring-port "$port"
	[ "$status" -eq 0 ] || fail "train.sh exited with $status: $output $(cat "$BATS_TEST_TMPDIR"/torch/*/attempt_0/*/std*.log 2>/dev/null)"
	for name in ring gloo ring-fixed gloo-fixed; do
		first=$(run_loss "$name" first) && last=$(run_loss "$name" last) || fail "no run line for $name: $output"
		# The loss of 8 classes starts near ln 8 = 2.08; 30 steps of SGD take it well down.
		awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.8 * a) }' ||
			fail "$name: the loss went from $first to $last, not below 80% of where it started"
		assert_line --regexp "^run +: $name: .*; held-back accuracy [0-9.]+% \\(512 samples\\); [0-9.]+ ms a step"
	done
	assert_line --regexp '^agreement +: ring-fixed and gloo-fixed: largest loss difference 0 over 30 steps; largest weight difference 0 \(the same to the bit\)$'
	assert_line --regexp '^agreement +: ring and gloo: largest loss difference [0-9.e+-]+ over 30 steps; largest weight difference [0-9.e+-]+'
	# DDP's first step: one bucket of all 283,656 weights; then its rebuilt buckets, the first
	# closed once past 1 MiB (266,760 x 4 B), in the order the gradients became ready.
	assert_line --regexp '^buckets +: step 0: 1 bucket of 283656 elements, in the order the hook got them$'
	assert_line --regexp '^buckets +: step 1: 2 buckets, of 266760 and 16896 elements, in the order the hook got them$'
	assert_line --regexp '^bucket sums +: every bucket of 2 steps, 567312 elements: ring and Gloo sums differ by at most [0-9.e+-]+, [0-9.]+ of the bound 2 gamma_3 sum\|g\|; 0 elements outside it$'
	assert_back_to_baseline
}
