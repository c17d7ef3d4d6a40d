# soak.bash: step 05 run for many round trips, busy-polled and event-driven: nothing fails, RSS stays flat, nothing leaks.
# Loaded by tests/slow/soak.bats (make soak: SOAK_ITERS round trips, 100,000 by default); make test runs no soak.

# Runs ITERS SEND round trips of 05_poll_destroy with the extra options MODE_ARGS
# (none, or --events) and checks what a long run must keep: every completion a
# success, every message intact, VmRSS the same after the first and the last
# thousand messages on both sides, and the kernel's counts back at the baseline.
# Prints one line of figures: "soak MODE: N round trips in S s, R round trips/s, RSS a -> b kB".
soak_run() {
	local iters=$1 mode=${2:-busy} started elapsed side rss_first rss_last line signalled
	local -a extra=()
	[ "$mode" = events ] && extra=(--events)
	record_baseline
	started=$EPOCHREALTIME
	run_server_client 05_poll_destroy -n "$iters" "${extra[@]}"
	elapsed=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	assert_both_succeeded "soak $mode, $iters round trips" "$(tail -n 20 "$BATS_TEST_TMPDIR"/*.out)"
	# Each side: a receive per message, and the SENDs of messages 0, 32, 64, ... and the last,
	# the only ones that ask for a completion.
	signalled=$(((iters + 31) / 32 + ((iters - 1) % 32 != 0)))
	for side in cli srv; do
		use_output_of "$side"
		assert_line --regexp "^completions +: $((iters + signalled)), every one success"
		refute_output --partial 'error:'
		line=$(grep -E '^memory +: VmRSS ' <<<"$output") || fail "$side printed no memory line"
		[[ $line =~ VmRSS\ ([0-9]+)\ kB\ after\ message\ 1000,\ ([0-9]+)\ kB\ after\ message\ $iters$ ]] ||
			fail "$side: unexpected memory line: $line"
		rss_first=${BASH_REMATCH[1]} rss_last=${BASH_REMATCH[2]}
		# The sanitizer build's RSS holds ASan's shadow memory and allocator too: in one run it grew
		# by 2 MB over 2,000 messages, and three repeats stayed flat. Flat RSS is asserted of the real build.
		[[ $BIN == */sanitize/* ]] || [ "$rss_last" -le "$rss_first" ] ||
			fail "$side: VmRSS grew from $rss_first kB after message 1000 to $rss_last kB after message $iters"
	done
	use_output_of srv
	assert_line --regexp "^data check +: $iters messages of 4096 bytes, every one arrived intact$"
	assert_back_to_baseline
	echo "# soak $mode: $iters round trips in $elapsed s ($(awk -v n="$iters" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }') round trips/s, both programs' start and teardown included), client VmRSS $rss_first -> $rss_last kB, counts back to $BASELINE" >&3
}
