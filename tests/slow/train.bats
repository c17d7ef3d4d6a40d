#!/usr/bin/env bats
# train.bats: 'make train' checked: a small model trained by PyTorch's DDP with step 07's ring beside Gloo, same seeds and data, on 4 ranks of one VM ('make test-train').

bats_require_minimum_version 1.5.0

setup() {
	load ../lib/test_helper
}

# Run NAME's held-back loss before or after training, from its line ("run : NAME: held-back loss A before, B after").
held_loss() { # NAME before|after
	local line
	line=$(grep -E "^run +: $1: held-back loss " <<<"$output") || return 1
	[[ $line =~ held-back\ loss\ ([0-9.]+)\ before,\ ([0-9.]+)\ after ]] || return 1
	if [ "$2" = before ]; then echo "${BASH_REMATCH[1]}"; else echo "${BASH_REMATCH[2]}"; fi
}

@test "train: 4 ranks train under torchrun with DDP's buckets summed by step 07's ring and by Gloo: both held-back losses fall, every bucket's two sums within float's order bound, fixed point the same to the bit, all freed" {
	command -v torchrun >/dev/null || fail "no torchrun: make test-train installs Debian's python3-torch (tests/tools/deps.sh collective)"
	record_baseline
	port=$(pick_port)
	RDMA_STEPS_RESULTS=$BATS_TEST_TMPDIR TRAIN_RANKS=4 TRAIN_MASTER_PORT=$((port + 1)) run \
		"$PROJECT_ROOT/steps/07_allreduce/train/train.sh" --ring-port "$port"
	[ "$status" -eq 0 ] || fail "train.sh exited with $status: $output $(cat "$BATS_TEST_TMPDIR"/torch/*/attempt_0/*/std*.log 2>/dev/null)"
	echo "$output" >"$RDMA_STEPS_RESULTS/train.out"
	for name in ring gloo ring-fixed gloo-fixed; do
		before=$(held_loss "$name" before) && after=$(held_loss "$name" after) || fail "no run line for $name: $output"
		# 8 classes: a loss near ln 8 = 2.08 untrained; 20 steps of SGD take it well down on
		# the 512 points no rank trained on (to 0.69 of where it started, in one process on the host).
		awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < 0.85 * a) }' ||
			fail "$name: the held-back loss went from $before to $after, not below 85% of where it started"
		assert_line --regexp "^run +: $name: held-back loss [0-9.]+ before, [0-9.]+ after 20 steps; held-back accuracy [0-9.]+% \\(the most common class: [0-9.]+%\\); [0-9.]+ ms a step"
	done
	assert_line --regexp '^agreement +: ring-fixed and gloo-fixed: largest loss difference 0 over 20 steps; largest weight difference 0 \(the same to the bit\)$'
	assert_line --regexp '^agreement +: ring and gloo: largest loss difference [0-9.e+-]+ over 20 steps; largest weight difference [0-9.e+-]+'
	for name in ring gloo; do
		assert_line --regexp "^overlap +: $name: [0-9.]+ ms a step, -?[0-9.]+ ms more than local's [0-9.]+; the same buckets summed alone, outside backward: [0-9.]+ ms$"
	done
	# DDP's first step: one bucket of all 283,656 weights; then its rebuilt buckets, the first
	# closed once past 1 MiB (266,760 x 4 B), in the order the gradients became ready.
	assert_line --regexp '^buckets +: step 0: 1 bucket of 283656 elements, in the order the hook got them$'
	assert_line --regexp '^buckets +: step 1: 2 buckets, of 266760 and 16896 elements, in the order the hook got them$'
	assert_line --regexp '^bucket sums +: every bucket of 2 steps, 567312 elements: ring and Gloo sums differ by at most [0-9.e+-]+, [0-9.]+ of the bound 2 gamma_3 sum\|g\|; 0 elements outside it$'
	assert_back_to_baseline
}

# Rank K's log of stdout or stderr under torchrun's --log_dir.
rank_log() { # K stdout|stderr
	find "$BATS_TEST_TMPDIR/torch" -path "*/attempt_0/$1/$2.log" 2>/dev/null | head -n 1
}

@test "train: a rank killed (SIGKILL) mid-training: every other rank stops within the bound naming it, releases its verbs objects, and torchrun exits 1 naming the rank" {
	command -v torchrun >/dev/null || fail "no torchrun: make test-train installs Debian's python3-torch (tests/tools/deps.sh collective)"
	record_baseline
	port=$(pick_port)
	RDMA_STEPS_RESULTS=$BATS_TEST_TMPDIR TRAIN_RANKS=3 TRAIN_MASTER_PORT=$((port + 1)) \
		"$PROJECT_ROOT/steps/07_allreduce/train/train.sh" --ring-port "$port" --timeout 10 >"$BATS_TEST_TMPDIR/train.out" 2>&1 &
	train_pid=$!
	# Rank 2 says its pid when it joins, and "step 10 of 20" of the ring run; then it is killed.
	for _ in $(seq 600); do
		[ -n "$(rank_log 2 stdout)" ] && grep -q '^progress .*: ring: step 10 of 20$' "$(rank_log 2 stdout)" && break
		kill -0 "$train_pid" 2>/dev/null || fail "train.sh ended before rank 2 reached step 10: $(cat "$BATS_TEST_TMPDIR/train.out")"
		sleep 0.5
	done
	pid=$(sed -n 's/^ring_comm .*: rank 2 of 3 (pid \([0-9]*\)) joined.*/\1/p' "$(rank_log 2 stdout)")
	[ -n "$pid" ] || fail "rank 2 never reached step 10 of the ring run: $(cat "$BATS_TEST_TMPDIR/train.out")"
	kill -KILL "$pid"
	killed=$SECONDS
	train_status=0
	wait "$train_pid" || train_status=$?
	took=$((SECONDS - killed))
	run cat "$BATS_TEST_TMPDIR/train.out"
	echo "# the job ended $took s after rank 2 was killed" >&3
	[ "$train_status" -eq 1 ] || fail "train.sh exited with $train_status, not 1 (torchrun's status): $output"
	# The ranks see it at once on the control channel; torchrun's agent looks every 5 s.
	[ "$took" -le 30 ] || fail "the job took $took s to end after rank 2 was killed, more than 30"
	for k in 0 1; do
		file_has_line "$(rank_log "$k" stderr)" '^error: rank '"$k"' stopped training: rank 2: ' ||
			fail "rank $k did not say that rank 2 failed: $(cat "$(rank_log "$k" stderr)")"
		file_has_line "$(rank_log "$k" stderr)" "^teardown +: rank $k released its verbs objects\$" ||
			fail "rank $k did not release its verbs objects: $(cat "$(rank_log "$k" stderr)")"
	done
	assert_line --regexp 'rank +: 2 \(local_rank: 2\)'
	assert_line --regexp 'exitcode +: -9 '
	assert_back_to_baseline
}
