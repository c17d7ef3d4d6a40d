#!/usr/bin/env bats
# bench.bats: make bench's machinery, on small sizes and once: every case measured beside perftest, a well-formed table, JSON and plot ('make test-bench'; .ci/run runs it).

setup() {
	load ../test_helper
}

@test "bench, quick: every case beside perftest, syscalls counted, tcp against rdma, and a well-formed table, JSON and SVG" {
	out=$BATS_TEST_TMPDIR/bench
	mkdir -p "$out"
	BENCH_QUICK=1 BENCH_REPS=1 RDMA_STEPS_RESULTS=$out run timeout 300 "$PROJECT_ROOT/tests/bench/bench.sh"
	assert_success
	run "$PROJECT_ROOT/tests/bench/report.sh" "$out"
	assert_success
	for case in 'send_lat 2 ' 'send_lat 4096 ' 'write_lat 2 ' 'read_lat 2 '; do
		assert_line --regexp "^$case +[0-9.]+ us +[0-9.]+ us +ib_[a-z]+_lat +[0-9]+\.[0-9]+x "
	done
	for case in 'write_bw 65536 ' 'send_bw 65536 '; do
		assert_line --regexp "^$case +[0-9.]+ MB/s +[0-9.]+ MB/s +ib_[a-z]+_bw +[0-9]+\.[0-9]+x "
	done
	refute_line --regexp ' 0\.00x '
	# Kernel bypass, counted: a busy-polled ping-pong makes one system call per message, the
	# write() that is rxe's doorbell.  Polling makes none, and neither does the clock.
	assert_line --regexp '^  busy / per message +1\.00: write 1\.00$'
	assert_line --regexp '^  busy / set-up and teardown +[0-9]+\.00: .*ioctl [0-9]+'
	# ib_send_lat makes the same single call per message.
	assert_line --regexp '^  ib_send_lat / per message +1\.00: write 1\.00$'
	# The GID table is read in one call: set-up makes tens of ioctls, not one per table slot (1024 on rxe).
	ioctls=$(grep '^  busy / set-up and teardown' <<<"$output" | grep -oE ' ioctl [0-9]+' | awk '{ print $2 }')
	[ "$ioctls" -lt 64 ] || fail "set-up made $ioctls ioctls: is the GID table read entry by entry again?"
	# Event mode adds, per sleep, poll() and the read of the event: exactly the same count of
	# each.  How often it sleeps depends on timing (under strace, rarely), so only the counts'
	# agreement is checked.  Each sleep also used up one arming (an ioctl on rxe), but a run may
	# end with one arming that never fired: the two runs' difference can be one ioctl more or
	# less, 0.001 per message, which rounding to two places may show as 0.01.
	# The count per message is a difference of two runs, and how often each run slept at
	# its start differs, so event mode's write count is near 1, not exactly 1.
	events=$(grep '^  events / per message' <<<"$output") || fail "no events line"
	grep -oE ' write [0-9.]+' <<<"$events" | awk '{ exit !($2 >= 0.9 && $2 <= 1.1) }' ||
		fail "event mode, per message: not about one write per message: $events"
	per_call() { grep -oE " $1 [0-9.]+" <<<"$events" | awk '{ print $2 }'; }
	[ "$(per_call read)" = "$(per_call poll)" ] ||
		fail "event mode, per message: read and poll differ: $events"
	awk -v a="$(per_call ioctl)" -v b="$(per_call poll)" 'BEGIN { d = a - b; exit !(d * d <= 0.0001 + 1e-9) }' ||
		fail "event mode, per message: ioctl (the arming) and poll differ by more than rounding: $events"
	for size in 4096 65536; do
		for side in sender receiver; do
			assert_line --regexp "^  $size +tcp +$side +[0-9]+ +[0-9]+ +[0-9]+ +2$"
			assert_line --regexp "^  $size +rdma +$side +[0-9]+ +[0-9]+ +[0-9]+ +1$"
		done
	done
	run jq -e '(.cases | length == 6) and all(.cases[]; .ratio > 0 and .ours > 0 and .perftest > 0)
		and (.kernel | length > 0) and (.device | length > 0) and (.provider | length > 0)
		and (.commit | length > 0) and (.date | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T"))
		and (.tcp_vs_rdma | length == 8) and any(.syscalls[]; .syscall == "ioctl")' "$out/bench.json"
	assert_success
	grep -q '^<svg' "$out/bench.svg" || fail "bench.svg is no SVG: $(head -3 "$out/bench.svg")"
	grep -qF 'step 05 (05_poll_destroy)' "$out/bench.svg" || fail "bench.svg has no line for step 05"
	grep -qF 'perftest (ib_send_lat, t_typical)' "$out/bench.svg" || fail "bench.svg has no line for perftest"
}
