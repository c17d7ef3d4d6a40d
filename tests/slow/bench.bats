#!/usr/bin/env bats
# bench.bats: make bench's machinery, on small sizes and once: every case measured beside perftest, a well-formed table, JSON and plot ('make test-bench'; .ci/run runs it).

setup() {
	load ../lib/test_helper
}

# counts.tsv's counts of each case, tool, side and pass, per message, one part a column: what
# counted.tsv averages, for a reader to see which part moved between two passes.
per_pass_counts() { # COUNTS_TSV
	awk -F'\t' '{ run = $1 " " $2 " " $3 " pass " $4; if (!(run in low) || $5 + 0 < low[run]) low[run] = $5 + 0
		if ($5 + 0 > high[run]) high[run] = $5 + 0; count[run, $5 + 0, $6] = $7
		if (!(run in seen)) { seen[run] = 1; runs[++n] = run }; if (!($6 in named)) { named[$6] = 1; parts[++m] = $6 } }
	END { for (r = 1; r <= n; r++) { run = runs[r]; line = run; d = high[run] - low[run]
		for (p = 1; p <= m; p++) if ((run, high[run], parts[p]) in count)
			line = line sprintf("  %s %.2f", parts[p], d ? (count[run, high[run], parts[p]] - count[run, low[run], parts[p]]) / d : 0)
		print line } }' "$1"
}

@test "bench, quick: every case beside perftest, in turn first, syscalls counted, tcp against rdma, and a well-formed table, JSON and SVG" {
	out=$BATS_TEST_TMPDIR/bench
	mkdir -p "$out"
	BENCH_QUICK=1 BENCH_REPS=2 RDMA_STEPS_RESULTS=$out run timeout 1200 "$PROJECT_ROOT/tests/bench/bench.sh"
	assert_success
	# Each case ran step 05 first in repetition 1 and perftest first in repetition 2.
	run awk -F'\t' '!(($1, $3) in first) { first[$1, $3] = $2; print $3, $2 }' "$out/raw.tsv"
	assert_equal "$(grep -c '^1 ours$' <<<"$output")" 8
	assert_equal "$(grep -c '^2 ib_' <<<"$output")" 8
	run "$PROJECT_ROOT/tests/bench/report.sh" "$out"
	assert_success
	for case in 'send_lat 2 ' 'send_lat 4096 ' 'write_lat 2 ' 'read_lat 2 '; do
		assert_line --regexp "^$case +[0-9.]+ us +[0-9.]+ us +ib_[a-z]+_lat +[0-9]+\.[0-9]+x  [0-9.]+-[0-9.]+x  too few runs$"
	done
	for case in 'write_bw 65536 ' 'send_bw 65536 '; do
		assert_line --regexp "^$case +[0-9.]+ MB/s +[0-9.]+ MB/s +ib_[a-z]+_bw +[0-9]+\.[0-9]+x  [0-9.]+-[0-9.]+x  too few runs$"
	done
	# Step 08 beside ib_read_bw and ib_write_bw, over 2 QPs: the decoder's figure, from its request line.
	assert_line --regexp '^kv_pull_q2 65536 +[0-9.]+ MB/s +[0-9.]+ MB/s +ib_read_bw +[0-9]+\.[0-9]+x  [0-9.]+-[0-9.]+x  too few runs$'
	assert_line --regexp '^kv_push_q2 65536 +[0-9.]+ MB/s +[0-9.]+ MB/s +ib_write_bw +[0-9]+\.[0-9]+x  [0-9.]+-[0-9.]+x  too few runs$'
	# UCX ran, or each of its two tests says why it gave no figure.
	# Debian 12's UCX calls itself 1.13.1-1, Debian 13's 1.18.1+ds-2+b1: the package's version, whatever its form.
	assert_line --regexp '^UCX [0-9][^ ]* \(NIXL.s default backend\), ucx_perftest over rc_verbs'
	assert_line --regexp '^  ucp_get +([0-9.]+ MB/s|no figure in 6 s: .+|failed \([0-9]+\): .+)$'
	assert_line --regexp '^  ucp_put_bw +([0-9.]+ MB/s|no figure in 6 s: .+|failed \([0-9]+\): .+)$'
	refute_line --regexp ' 0\.00x '
	# The counts: send_lat 2 counted twice, each side of each tool, every object present, the
	# sleeps in columns of their own, the work and the cost of a sleep each within 2% over the
	# two passes.
	for row in '05_poll_destroy +initiator' '05_poll_destroy +target' 'ib_send_lat +initiator' 'ib_send_lat +target'; do
		assert_line --regexp "^send_lat 2 +$row +[1-9][0-9]* +-?[0-9]+ +[1-9][0-9]* +[0-9]+ +-?[0-9]+ +-?[0-9]+ +[1-9][0-9]* +[0-9]+\.[0-9]{2} +[1-9][0-9]*  2 passes: work within [0-9.]+%, per sleep within [0-9.]+%$"
	done
	assert_line --partial 'The sleeps are counted apart, in no object and not in the work'
	# Step 05's poll costs one count when it finds a completion and another when it finds none;
	# solved from each count's calls, they must come out whole and the same in every count, or
	# the split between work and sleep would follow the timing again.
	assert_line --regexp "^step 05's poll \(look_at_cq\), solved from the call counts: [1-9][0-9]* instructions when it finds a completion, [1-9][0-9]* when$"
	assert_line 'the CQ is empty, the same in every count'
	awk -F'\t' '$4 != 2 || $12 > 2 { print "work not 2 passes within 2%: " $0; bad = 1 }
		$13 <= 0 || $14 == "-" || $15 > 2 { print "an event-driven side that never slept, or its sleeps not within 2%: " $0; bad = 1 }
		$2 == "05_poll_destroy" && $10 <= 0 { print "no data check counted: " $0; bad = 1 }
		$2 != "05_poll_destroy" && $10 != 0 { print "a check counted for perftest: " $0; bad = 1 }
		END { exit bad }' "$out/counted.tsv" || fail "$(cat "$out/counted.tsv")
each pass, per message (the count at the larger message count less the count at the smaller, over their difference):
$(per_pass_counts "$out/counts.tsv")"
	# perftest sleeps on every wait, so its sleeps per message are a count, the same in both
	# passes; step 05 sleeps only when its first poll finds nothing, as often as timing makes it.
	awk -F'\t' '$2 == "ib_send_lat" && $6 == "sleeps" { n[$3, $4, $5] = $7; sides[$3] = 1 }
		END { for (s in sides) {
			a = (n[s, 2, 500] - n[s, 2, 100]) / 400; b = (n[s, 1, 500] - n[s, 1, 100]) / 400
			if (a != b || a <= 0) { print "ib_send_lat, " s ": " b " and " a " sleeps per message"; bad = 1 } }
		exit bad }' "$out/counts.tsv" || fail "$(grep sleeps "$out/counts.tsv")"
	# The ratio is the quotient of the printed work, both sides together, with step 05's check
	# and without it: recomputed here from the table's lines.
	expected=$(awk '$1 == "send_lat" && $2 == 2 && NF >= 13 && $4 ~ /^(initiator|target)$/ {
			if ($3 == "05_poll_destroy") { ours += $11; check += $10 } else if ($3 == "ib_send_lat") theirs += $11 }
		END { if (!theirs) exit 1; printf "%.2f %.2f", ours / theirs, (ours - check) / theirs }' <<<"$output") ||
		fail "no counted rows for send_lat 2"
	read -r ratio without <<<"$expected"
	assert_line --regexp "^send_lat 2 +${ratio/./[.]}x +${without/./[.]}x +[0-9.]+x  100 500$"
	# Two repetitions give the interval from the two ratios, at 50% confidence: no verdict.
	assert_line 'bench: interval: ratios 1 to 2 of the 2, sorted: a 50.0% confidence interval for that median'
	assert_line 'bench: fewer than 6 repetitions give no 95% interval, so each verdict says: too few runs'
	# Kernel bypass, counted: a busy-polled ping-pong makes one system call per message, the
	# write() that is rxe's doorbell.  Polling makes none, and neither does the clock.  Any
	# other call in the loop comes a few times in the whole run: step 05 reads
	# /proc/self/status once, at message 1000, for its memory line.
	# That write() is rxe's: a hardware NIC's doorbell is a store to a mapped page, no system call.
	if on_rxe; then
		assert_line --regexp '^  busy / loop \(999 messages\) +[0-9]+: write 999 \(1\.00 per message\)(, [a-z0-9_]+ [1-9])*$'
	fi
	assert_line --regexp '^  busy / set-up +[0-9]+: .*ioctl [0-9]+'
	assert_line --regexp '^  busy / teardown +[0-9]+: .*ioctl [0-9]+'
	# ib_send_lat makes the same single call per message.  Its loop also holds one handshake
	# on its socket, and the work for its result line (reading /proc/cpuinfo), a few calls.
	if on_rxe; then
		assert_line --regexp '^  ib_send_lat / loop \(1000 messages\) +[0-9]+: write 100[0-9] \(1\.00 per message\)(, [a-z0-9_]+ [1-9][0-9]?)*$'
	fi
	# The GID table is read in one call: set-up makes tens of ioctls, not one per table slot (1024 on rxe).
	ioctls=$(grep '^  busy / set-up' <<<"$output" | grep -oE ' ioctl [0-9]+' | awk '{ print $2 }')
	[ "$ioctls" -lt 64 ] || fail "set-up made $ioctls ioctls: is the GID table read entry by entry again?"
	# Event mode adds, per sleep, poll() and the read of the event.  How often it sleeps
	# depends on timing; with both sides under strace, most waits sleep (735 of 999 in one
	# run), so at least one in ten must.  The counts are checked against each other: every
	# event read was slept for in poll(), one read more being /proc/self/status's; each event
	# used up one arming (an ioctl on rxe), give or take one at the loop's two ends.  The
	# post is one write per message, as when busy-polled.
	events=$(grep '^  events / loop' <<<"$output") || fail "no events line"
	! on_rxe || grep -qE ': write 999 \(1\.00 per message\)(,|$)' <<<"$events" || fail "event mode: not one write per message: $events"
	count() { grep -oE " $1 [0-9]+" <<<"$events" | awk '{ n += $2 } END { print n + 0 }'; }
	reads=$(count read) polls=$(count poll) ioctls=$(count ioctl)
	[ "$polls" -ge 100 ] || fail "event mode: $polls sleeps in poll() in 999 messages, fewer than one in ten: $events"
	[ "$polls" -ge $((reads - 1)) ] || fail "event mode: $reads reads but only $polls poll calls: $events"
	# The arming is a command to the kernel on rxe (ibv_cmd_req_notify_cq); mlx5 rings its CQ's doorbell.
	if on_rxe; then
		[ "$ioctls" -ge $((reads - 2)) ] && [ "$ioctls" -le "$reads" ] ||
			fail "event mode: $ioctls armings (ioctl) for $((reads - 1)) events: $events"
	fi
	for size in 4096 65536; do
		for side in sender receiver; do
			assert_line --regexp "^  $size +tcp +$side +[0-9]+ +[0-9]+ +[0-9]+ +2$"
			assert_line --regexp "^  $size +rdma +$side +[0-9]+ +[0-9]+ +[0-9]+ +1$"
		done
	done
	run jq -e '(.cases | length == 8) and (.ucx | length == 2) and all(.cases[]; .ratio > 0 and .ours > 0 and .perftest > 0
			and (.ratios | length == 2) and .interval[0] <= .ratio and .ratio <= .interval[1]
			and .confidence == 0.5 and .verdict == "too few runs")
		and (.kernel | length > 0) and (.device | length > 0) and (.provider | length > 0)
		and (.commit | length > 0) and (.date | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T"))
		and (.tcp_vs_rdma | length == 8) and any(.syscalls[]; .syscall == "ioctl")' "$out/bench.json"
	assert_success
	run jq -r '.cases[] | select(.case == "send_lat" and .bytes == 2) | "\(.counted.ratio + 0) \(.counted.ratio_without_check + 0)"' "$out/bench.json"
	assert_output "$(awk '{ print $1 + 0, $2 + 0 }' <<<"$expected")"
	run jq -e '[.cases[] | select(.counted != null)] | length == 1' "$out/bench.json"
	assert_success
	grep -q '^<svg' "$out/bench.svg" || fail "bench.svg is no SVG: $(head -3 "$out/bench.svg")"
	grep -qF 'step 05 (05_poll_destroy)' "$out/bench.svg" || fail "bench.svg has no line for step 05"
	grep -qF 'perftest (ib_send_lat, t_typical)' "$out/bench.svg" || fail "bench.svg has no line for perftest"
}

@test "bench report: the ratio is the median of the paired ratios, its interval order statistics 4 and 12 of 15, and each verdict follows from them" {
	out=$BATS_TEST_TMPDIR/report
	mkdir -p "$out"
	# Perftest's figure moves from one repetition to the next, as in the VM; step 05's makes
	# ratios BASE + 0.01 * j, for j = 0..14 in a shuffled order, so the median of the ratios is
	# BASE + 0.07 and the interval BASE + 0.03 to BASE + 0.11.  The ratio of the two medians
	# would differ.
	for spec in 'send_lat 2:ib_send_lat:0.85' 'write_lat 2:ib_write_lat:0.98' 'read_lat 2:ib_read_lat:1.20' \
		'send_lat 4096:ib_send_lat:1.00' 'write_bw 65536:ib_write_bw:0.95' 'send_bw 65536:ib_send_bw:0.80' \
		'send_bw 1048576:ib_send_bw:0.70' 'write_bw 1048576:ib_write_bw:0.88'; do
		IFS=: read -r name tool base <<<"$spec"
		for rep in $(seq 15); do
			awk -v n="$name" -v t="$tool" -v b="$base" -v r="$rep" 'BEGIN {
				j = (r * 7) % 15; p = 50 + 10 * ((r * 4) % 15)
				printf "%s\tours\t%d\t%.4f\n%s\t%s\t%d\t%d\n", n, r, p * (b + 0.01 * j), n, t, r, p }'
		done
	done >"$out/raw.tsv"
	# Counts at 100 and 300 messages: a set-up of 50,000 instructions per part, then per
	# message, on each side, ours 300 in the program, 100 in libibverbs, 200 in the provider,
	# 20 in libc and 80 in the check (303 in the program in pass 2), perftest 400, 100, 200.
	# Sleeps: ours 0.5 per message in pass 1 and 0.6 in pass 2, 400 instructions each; perftest
	# 2 per message, 350 each.  write_lat 2: ours sleeps 0.25 per message, ib_write_lat never
	# (its sleep count only its set-up's arming).
	for pass in 1 2; do
		for n in 100 300; do
			for side in initiator target; do
				awk -v n="$n" -v s="$side" -v p="$pass" 'BEGIN {
					split("program libibverbs provider libc other check", part, " ")
					split((p == 2 && s == "initiator" ? 303 : 300) " 100 200 20 0 80", ours, " ")
					split("400 100 200 0 0 0", theirs, " ")
					for (i = 1; i <= 6; i++) {
						printf "send_lat 2\tours\t%s\t%d\t%d\t%s\t%d\n", s, p, n, part[i], 50000 + n * ours[i]
						printf "send_lat 2\tib_send_lat\t%s\t%d\t%d\t%s\t%d\n", s, p, n, part[i], 50000 + n * theirs[i]
						printf "write_lat 2\tours\t%s\t%d\t%d\t%s\t%d\n", s, p, n, part[i], 50000 + n * ours[i]
						printf "write_lat 2\tib_write_lat\t%s\t%d\t%d\t%s\t%d\n", s, p, n, part[i], 50000 + n * theirs[i]
					}
					slept = n * (p == 1 ? 0.5 : 0.6)
					printf "send_lat 2\tours\t%s\t%d\t%d\tsleep\t%d\nsend_lat 2\tours\t%s\t%d\t%d\tsleeps\t%d\n", s, p, n, 9000 + 400 * slept, s, p, n, 10 + slept
					printf "send_lat 2\tib_send_lat\t%s\t%d\t%d\tsleep\t%d\nsend_lat 2\tib_send_lat\t%s\t%d\t%d\tsleeps\t%d\n", s, p, n, 700 + 350 * 2 * n, s, p, n, 2 * n
					printf "write_lat 2\tours\t%s\t%d\t%d\tsleep\t%d\nwrite_lat 2\tours\t%s\t%d\t%d\tsleeps\t%d\n", s, p, n, 380 * n / 4, s, p, n, n / 4
					printf "write_lat 2\tib_write_lat\t%s\t%d\t%d\tsleep\t%d\nwrite_lat 2\tib_write_lat\t%s\t%d\t%d\tsleeps\t%d\n", s, p, n, 476, s, p, n, 0 }'
			done
		done
	done >"$out/counts.tsv"
	printf 'busy\tloop\twrite\t999\t999\n' >"$out/syscalls.tsv"
	printf '4096\ttcp\tsender\t1\t1\t1\t2\n' >"$out/cpu.tsv"
	printf 'kernel=k\ndevice=rxe0\nprovider=p\nperftest=v\nclocksource=tsc\nreps=15\n' >"$out/meta.env"
	run "$PROJECT_ROOT/tests/bench/report.sh" "$out"
	assert_success
	assert_line 'bench: interval: ratios 4 to 12 of the 15, sorted: a 96.5% confidence interval for that median'
	assert_line --regexp '^send_lat 2 +[0-9.]+ us +120\.00 us +ib_send_lat +0\.92x  0\.88-0\.96x  meets goal$'
	assert_line --regexp '^write_lat 2 .* 1\.05x  1\.01-1\.09x  meets floor$'
	assert_line --regexp '^read_lat 2 .* 1\.27x  1\.23-1\.31x  misses floor$'
	assert_line --regexp '^send_lat 4096 .* 1\.07x  1\.03-1\.11x  unresolved$'
	assert_line --regexp '^write_bw 65536 .* 1\.02x  0\.98-1\.06x  meets goal$'
	assert_line --regexp '^send_bw 65536 .* 0\.87x  0\.83-0\.91x  unresolved$'
	assert_line --regexp '^send_bw 1048576 .* 0\.77x  0\.73-0\.81x  misses floor$'
	assert_line --regexp '^write_bw 1048576 .* 0\.95x  0\.91-0\.99x  meets floor$'
	# Counted: the mean of the two passes per part, the spread of the work, the sleeps apart,
	# and the ratio (702 + 700) / 1400 with the check, (702 + 700 - 160) / 1400 without it.
	assert_line --regexp '^send_lat 2 +05_poll_destroy +initiator +302 +100 +200 +20 +0 +80 +702 +0\.55 +400  2 passes: work within 0\.43%, per sleep within 0\.00%$'
	assert_line --regexp '^send_lat 2 +05_poll_destroy +target +300 +100 +200 +20 +0 +80 +700 +0\.55 +400  2 passes: work within 0\.00%, per sleep within 0\.00%$'
	assert_line --regexp '^send_lat 2 +ib_send_lat +target +400 +100 +200 +0 +0 +0 +700 +2\.00 +350  2 passes: work within 0\.00%, per sleep within 0\.00%$'
	assert_line --regexp '^write_lat 2 +ib_write_lat +initiator +400 +100 +200 +0 +0 +0 +700 +0\.00 +-  2 passes: work within 0\.00%$'
	assert_line --regexp '^write_lat 2 +05_poll_destroy +target +.* +700 +0\.25 +380  2 passes: work within 0\.00%, per sleep within 0\.00%$'
	assert_line --regexp '^send_lat 2 +1\.00x +0\.89x +0\.92x  100 300$'
	assert_line --regexp '^write_lat 2 +1\.00x +0\.89x +1\.05x  100 300$'
	# jq 1.7 (Debian 13) prints a number as its literal stands in the JSON (1.00), jq 1.6 (Debian
	# 12) as a double (1): + 0 makes each a double in both, so the values are compared, not their spelling.
	num='def num: if type == "number" then . + 0 elif type == "array" then map(num) else . end;'
	run jq -c "$num"'.cases[] | select(.case == "read_lat") | [.ratio, .interval, .confidence, .verdict, (.ratios | length)] | num' "$out/bench.json"
	assert_output '[1.27,[1.23,1.31],0.965,"misses floor",15]'
	run jq -c "$num"'.cases[] | select(.counted != null) | [.case, .bytes, .counted.ratio, .counted.ratio_without_check, .counted.ours_work, .counted.perftest_work, .counted.ours_check] | num' "$out/bench.json"
	assert_output $'["send_lat",2,1,0.89,1402,1400,160]\n["write_lat",2,1,0.89,1402,1400,160]'
	run jq -c "$num"'.instructions_per_message[] | select(.side == "initiator") | [.case, .tool, .work, .sleeps_per_message, .instructions_per_sleep] | num' "$out/bench.json"
	assert_output $'["send_lat 2","05_poll_destroy",702,0.55,400]\n["send_lat 2","ib_send_lat",700,2,350]\n["write_lat 2","05_poll_destroy",702,0.25,380]\n["write_lat 2","ib_write_lat",700,0,null]'
}
