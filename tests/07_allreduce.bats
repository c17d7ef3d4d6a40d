#!/usr/bin/env bats
# 07_allreduce.bats: step 07's ring all-reduce: N ranks on one rxe, the sum checked, the credits proved, every failure named by every rank.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper
}

# Starts N ranks of 07_allreduce on a fresh port, ARGS... given to each, as r0 ... r(N-1);
# rank 0 first, the others against 127.0.0.1.  RANK_ARGS_k, when set, adds words for rank k.
start_ring() {
	local n=$1 k extra
	shift
	RING_N=$n RING_PORT=$(pick_port)
	for ((k = 0; k < n; k++)); do
		extra=RANK_ARGS_$k
		# shellcheck disable=SC2086
		start_step "r$k" 07_allreduce -d "$DEV" -p "$RING_PORT" --rank "$k" --world-size "$n" "$@" ${!extra:-} 127.0.0.1
	done
}

# Waits for every rank; ring_status[k] holds rank k's exit status.
finish_ring() {
	local k pid
	ring_status=()
	for ((k = 0; k < RING_N; k++)); do
		pid=r${k}_pid
		status=0
		wait "${!pid}" || status=$?
		ring_status[k]=$status
	done
}

# Fails unless every rank exited with 0.
assert_ring_success() {
	local k
	for ((k = 0; k < RING_N; k++)); do
		[ "${ring_status[k]}" -eq 0 ] || fail "rank $k exited with ${ring_status[k]}: $(cat "$BATS_TEST_TMPDIR/r$k.out")"
	done
}

@test "07_allreduce: debug" {
	record_baseline
	start_ring 3 -t 5 -b 0 --maxbytes 1M -f 64 -n 3 -w 1 --transport both
	finish_ring
	for k in 0 1 2; do echo "== rank $k: ${ring_status[k]}"; grep -v "^ibv_\|^lkey\|^rkey\|^VmPin\|^buffer\|^access\|^RLIMIT" "$BATS_TEST_TMPDIR/r$k.out"; done
	false
}
