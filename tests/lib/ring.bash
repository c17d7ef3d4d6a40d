# ring.bash: start N ranks of step 07 (or of a later step launched as it, RING_STEP) on one device, wait for them, and check that every rank names a failed one; loaded by tests/07_allreduce.bats, tests/09_moe.bats, tests/slow/allreduce.bats and tests/slow/moe.bats; step 09's waits line too.

# Starts N ranks of RING_STEP (default 07_allreduce) on a fresh port, ARGS... given to
# each, as r0 ... r(N-1), each against 127.0.0.1.  RANK_ARGS_k, when set, adds its words
# for rank k (a later option wins); RANK_DELAY_k, when set, waits that many seconds
# before starting rank k (a rank still on its way); SKIP_RANK leaves one rank out.
start_ring() {
	local n=$1 k extra delay
	shift
	RING_N=$n RING_PORT=$(pick_port) RING_START=$SECONDS
	for ((k = 0; k < n; k++)); do
		[ "$k" != "${SKIP_RANK:-}" ] || continue
		delay=RANK_DELAY_$k
		[ -z "${!delay:-}" ] || nap "${!delay}"
		extra=RANK_ARGS_$k
		# shellcheck disable=SC2086
		start_step "r$k" "${RING_STEP:-07_allreduce}" -d "$DEV" -p "$RING_PORT" --rank "$k" --world-size "$n" "$@" ${!extra:-} 127.0.0.1
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

# Fails unless every rank exited with 0, showing every rank that did not: in a ring
# the rank that failed first is often not rank 0.
assert_ring_success() {
	local k failed=""
	for ((k = 0; k < RING_N; k++)); do
		[ "${ring_status[k]}" -eq 0 ] ||
			failed+="rank $k exited with ${ring_status[k]}: $(cat "$BATS_TEST_TMPDIR/r$k.out")"$'\n'
	done
	[ -z "$failed" ] || fail "$failed"
}

# Fails unless every rank started ended with 1 within BOUND seconds (2 x -t and 5 s for
# the ranks' start and teardown under emulation, on a shared machine), its last error
# line (the only one, on a rank that did not fail itself) being "error: rank FAILED: CAUSE".
assert_all_name() {
	local failed=$1 cause=$2 bound=$(($3 * TIME_SCALE)) k errors
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

# Fails unless every rank of the last run exited with 1 printing LINE, a limit of the
# device refused after stage 1, before anything was registered.
assert_all_refused() { # LINE
	local k
	for ((k = 0; k < RING_N; k++)); do
		use_output_of "r$k"
		[ "${ring_status[k]}" -eq 1 ] || fail "rank $k exited with ${ring_status[k]}, not 1: $output"
		assert_line "$1"
		refute_line --regexp '^ibv_reg_mr '
	done
}

# Kills rank K with SIGKILL, as a crash would, waits for every rank, and checks that every
# other rank names rank K within BOUND seconds of the kill (assert_all_name), all freed.
kill_rank_and_assert_named() { # K BOUND
	local pid=r$1_pid
	pkill -KILL -P "${!pid}"
	RING_START=$SECONDS
	finish_ring
	SKIP_RANK=$1 assert_all_name "$1" "" "$2"
}

# Step 09: what a rank's waits call between looks with N ranks here: nanosleep when they outnumber the CPUs.
wait_call() { # N
	if [ "$1" -gt "$(nproc)" ]; then echo nanosleep; else echo sched_yield; fi
}

# Step 09: the line that says how a rank of N waits, and why.
assert_waits_line() { # N
	if [ "$1" -gt "$(nproc)" ]; then
		assert_line "waits               : $1 ranks on $(nproc) online CPUs (every rank counted as on this node): the ranks outnumber the CPUs, so a waiting rank sleeps between looks (nanosleep, 1 us doubling to 1 ms) instead of yielding, which would hand the CPU to another waiting rank and leave rxe's kernel work behind them"
	else
		assert_line "waits               : $1 ranks on $(nproc) online CPUs: a waiting rank yields between looks (sched_yield), as a proxy thread on a core of its own would spin"
	fi
}
