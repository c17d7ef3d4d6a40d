#!/usr/bin/env bash
# report.sh: turns bench.sh's raw figures into the table, build/bench/bench.json and the latency plot (bench.svg).
#
# Usage: tests/bench/report.sh DIR    (DIR holds raw.tsv, syscalls.tsv, cpu.tsv, counts.tsv and meta.env)
# Each tool's figure is the median of its repetitions; the ratio is the median of the
# repetitions' paired ratios, ours over perftest's, with a confidence interval.  For latency
# lower is better, for bandwidth higher.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
dir=${1:?usage: tests/bench/report.sh DIR}
meta() { sed -n "s/^$1=//p" "$dir/meta.env"; }
files=(raw.tsv meta.env)
[ "$(meta only 2>/dev/null)" = kv ] || files+=(syscalls.tsv cpu.tsv counts.tsv)
for f in "${files[@]}"; do
	[ -s "$dir/$f" ] || { echo "report: $dir/$f is missing or empty: did bench.sh finish?" >&2; exit 1; }
done

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# One line per case, from the repetitions: CASE SIZE NAME OURS PERFTEST TOOL RATIO LOW HIGH
# VERDICT REPS OURS_RUNS PERFTEST_RUNS RATIOS CONFIDENCE K.  OURS and PERFTEST are each tool's
# median.  RATIO is the median of the paired ratios, one per repetition (ours / perftest's,
# the two runs back to back), so that a slow spell of the VM, which slows both runs of a
# pair, cancels.  LOW and HIGH are order statistics k and n + 1 - k of the n ratios: a
# distribution-free confidence interval for their median, at CONFIDENCE = 1 - 2 P(X < k),
# X binomial(n, 1/2), with k as large as keeps CONFIDENCE at 95% or more.
awk -F'\t' '
	function sort(v, n,    i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	}
	function median(v, n) { return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
	# P(X < k) for X binomial(n, 1/2).
	function below(k, n,    i, c, p) {
		for (i = 0; i < k; i++) { c = i ? c * (n - i + 1) / i : 1; p += c }
		return p / 2 ^ n
	}
	function json(v, n,    i, l) {
		for (i = 1; i <= n; i++) l = l (i > 1 ? ", " : "") v[i]
		return "[" l "]"
	}
	# Past the floor: a latency ratio above it, or a bandwidth ratio below it.
	function past(r, lat) { return lat ? r > 1.10 : r < 0.90 }
	function meets_goal(r, lat) { return lat ? r <= 1.00 : r >= 1.00 }
	{ value[$1, $2, $3] = $4
	  if (!($1 in seen)) { seen[$1] = 1; order[++cases] = $1 }
	  if (!(($1, $3) in rep_seen)) { rep_seen[$1, $3] = 1; reps[$1] = reps[$1] " " $3 }
	  if ($2 != "ours") tool[$1] = $2 }
	END {
		for (c = 1; c <= cases; c++) {
			name = order[c]; split(name, parts, " "); lat = parts[1] ~ /_lat$/
			n = split(reps[name], r, " ")
			for (i = 1; i <= n; i++) {
				ours[i] = value[name, "ours", r[i]]; theirs[i] = value[name, tool[name], r[i]]
				ratio[i] = theirs[i] > 0 ? sprintf("%.4f", ours[i] / theirs[i]) : 0
			}
			ours_json = json(ours, n); theirs_json = json(theirs, n)
			sort(ours, n); sort(theirs, n); ratios_json = json(ratio, n); sort(ratio, n)
			for (k = 1; 2 * below(k + 1, n) <= 0.05 && k + 1 <= n / 2; k++) ;
			confidence = 1 - 2 * below(k, n)
			mid = median(ratio, n); low = ratio[k]; high = ratio[n + 1 - k]
			if (confidence < 0.95) verdict = "too few runs"
			else if (past(lat ? low : high, lat)) verdict = "misses floor"
			else if (past(lat ? high : low, lat)) verdict = "unresolved"
			else verdict = meets_goal(mid, lat) ? "meets goal" : "meets floor"
			printf "%s\t%s\t%s\t%.2f\t%.2f\t%s\t%.2f\t%.2f\t%.2f\t%s\t%d\t%s\t%s\t%s\t%.1f\t%d\n", parts[1], parts[2], name,
				median(ours, n), median(theirs, n), tool[name], mid, low, high, verdict, n,
				ours_json, theirs_json, ratios_json, 100 * confidence, k
		}
	}' "$dir/raw.tsv" >"$dir/medians.tsv"

# The counted instructions per message: for each case, tool, side and pass, each part's count
# at the larger message count less its count at the smaller, over the difference of the two.
# The work is the objects' counts and the check's; the event wait is counted apart, as the
# sleeps per message (events read) and the instructions each sleep cost (the wait's count over
# its events), since how often a wait sleeps depends on timing.
# counted.tsv: CASE TOOL SIDE PASSES PROGRAM LIBIBVERBS PROVIDER LIBC OTHER CHECK WORK SPREAD
# SLEEPS PER_SLEEP SLEEP_SPREAD, each the mean over the passes (PER_SLEEP over those that slept,
# "-" where none did); SPREAD is the largest work less the smallest, in percent of the smallest,
# SLEEP_SPREAD the same of PER_SLEEP.  counted_ratio.tsv: CASE RATIO RATIO_WITHOUT_CHECK MESSAGES OURS_WORK
# PERFTEST_WORK OURS_CHECK: both sides' work together, ours over perftest's, with step 05's
# check and without it, from the work and check of each side as counted.tsv gives them (whole
# instructions).
awk -F'\t' -v parts="program libibverbs provider libc other check" -v ratios="$dir/counted_ratio.tsv" '
	BEGIN { nparts = split(parts, part, " ") }
	function spread(most, least) { return least > 0 ? 100 * (most - least) / least : 0 }
	{ run = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4; count[run, $5, $6] = $7
	  if (!(run in low) || $5 + 0 < low[run]) low[run] = $5 + 0
	  if ($5 + 0 > high[run]) high[run] = $5 + 0
	  if (!(run in run_seen)) { run_seen[run] = 1; runs[++nruns] = run }
	  if (!($1 in case_seen)) { case_seen[$1] = 1; cases[++ncases] = $1 }
	  if ($2 != "ours") tool[$1] = $2 }
	END {
		for (r = 1; r <= nruns; r++) {
			run = runs[r]; split(run, f, SUBSEP); group = f[1] SUBSEP f[2] SUBSEP f[3]
			if (high[run] == low[run]) { printf "report: %s %s %s: counted at one message count only\n", f[1], f[2], f[3] > "/dev/stderr"; exit 1 }
			if (!((run, high[run], "sleeps") in count)) { printf "report: %s %s %s: no count of the sleeps\n", f[1], f[2], f[3] > "/dev/stderr"; exit 1 }
			messages = high[run] - low[run]; total = 0
			for (i = 1; i <= nparts; i++) {
				v = (count[run, high[run], part[i]] - count[run, low[run], part[i]]) / messages
				sum[group, part[i]] += v; total += v
			}
			slept = count[run, high[run], "sleeps"] - count[run, low[run], "sleeps"]
			sleeps[group] += slept / messages
			if (slept > 0) {
				per = (count[run, high[run], "sleep"] - count[run, low[run], "sleep"]) / slept
				per_sleep[group] += per; slept_passes[group]++
				if (!(group in least_per) || per < least_per[group]) least_per[group] = per
				if (per > most_per[group]) most_per[group] = per
			}
			passes[group]++
			if (!(group in least) || total < least[group]) least[group] = total
			if (total > most[group]) most[group] = total
			counted_messages[f[1]] = low[run] " " high[run]
		}
		for (c = 1; c <= ncases; c++) {
			name = cases[c]; ours = 0; check = 0; theirs = 0
			for (t = 1; t <= 2; t++) for (s = 1; s <= 2; s++) {
				who = t == 1 ? "ours" : tool[name]; side = s == 1 ? "initiator" : "target"
				group = name SUBSEP who SUBSEP side
				if (!(group in passes)) { printf "report: %s: no count for %s, %s\n", name, who, side > "/dev/stderr"; exit 1 }
				line = name "\t" (t == 1 ? "05_poll_destroy" : who) "\t" side "\t" passes[group]; total = 0
				for (i = 1; i <= nparts; i++) {
					v = sum[group, part[i]] / passes[group]; total += v
					line = line sprintf("\t%.0f", v)
				}
				# The ratio is computed from the work as printed, so that a reader can redo it.
				total = sprintf("%.0f", total) + 0
				line = line sprintf("\t%d\t%.2f\t%.2f", total, spread(most[group], least[group]), sleeps[group] / passes[group])
				# Per sleep: over the passes in which the side slept at all.
				if (slept_passes[group] > 0)
					line = line sprintf("\t%.0f\t%.2f", per_sleep[group] / slept_passes[group], spread(most_per[group], least_per[group]))
				else
					line = line "\t-\t-"
				print line
				if (t == 1) { ours += total; check += sprintf("%.0f", sum[group, "check"] / passes[group]) } else theirs += total
			}
			printf "%s\t%.2f\t%.2f\t%s\t%.0f\t%.0f\t%.0f\n", name, ours / theirs, (ours - check) / theirs, counted_messages[name], ours, theirs, check > ratios
		}
	}' "$dir/counts.tsv" >"$dir/counted.tsv"

# The rest of a whole bench's report: the counts, the system calls and 06_gdr's paths.
full_report() {
	echo
	echo "instructions per message, counted by callgrind in user space, on each side, by the object they ran in; both tools"
	echo "event-driven (step 05 -e, perftest -e); each figure is (the count at N2 messages less the count at N1) / (N2 - N1),"
	echo "so that set-up and teardown cancel; check: step 05's data check, on its own; work: the objects and the check."
	echo "The sleeps are counted apart, in no object and not in the work: the event wait (arming the CQ, poll() on the"
	echo "channel, reading and acknowledging the event: ibv_req_notify_cq, ibv_get_cq_event, ibv_ack_cq_events), what it"
	echo "calls, and step 05's polls that found the CQ empty; sleeps: events read per message; per sleep: the wait's"
	echo "instructions per event. How often a wait sleeps depends on timing (step 05 polls first and sleeps only when"
	echo "the CQ is empty; perftest sleeps on every wait); step 05's work holds one poll that found a completion per"
	echo "completion, wherever the timing made it come"
	printf '%-16s %-16s %-9s %7s %10s %8s %6s %5s %6s %6s %6s %9s  %s\n' case tool side program libibverbs provider libc other check work sleeps "per sleep" repeat
	awk -F'\t' '{ printf "%-16s %-16s %-9s %7s %10s %8s %6s %5s %6s %6s %6s %9s  %s\n", $1, $2, $3, $5, $6, $7, $8, $9, $10, $11, $13, $14,
		($4 > 1 ? sprintf("%d passes: work within %.2f%%", $4, $12) ($14 == "-" ? "" : sprintf(", per sleep within %.2f%%", $15)) : "1 pass") }' "$dir/counted.tsv"
	# What one of step 05's polls costs, solved in each count (bench.sh's callgrind_parts).
	awk -F'\t' '$2 == "ours" && $6 ~ /^look_/ { v = sprintf("%g", $7); if (!(($6, v) in seen)) values[$6] = values[$6] (values[$6] == "" ? "" : ", ") v; seen[$6, v] = 1 }
		END { if (values["look_found"] == "") exit
			same = values["look_found"] !~ /,/ && values["look_empty"] !~ /,/
			printf "step 05'"'"'s poll (look_at_cq), solved from the call counts: %s instructions when it finds a completion, %s when\n", values["look_found"], values["look_empty"]
			print "the CQ is empty" (same ? ", the same in every count" : ": not the same in every count") }' "$dir/counts.tsv"
	echo
	echo "counted ratio: both sides' work per message (the sleeps left out), ours / perftest's, with step 05's data check"
	echo "and without it; timed: the ratio in the first table (for bandwidth, higher is better there)"
	! grep -q '^write_' "$dir/counted_ratio.tsv" ||
		echo "write_lat, write_bw: perftest has no event mode for WRITE, so its work holds its empty polls (ib_write_lat: its spins on the buffer), as many as the wait"
	printf '%-16s %8s %10s %7s  %s\n' case counted "w/o check" timed messages
	awk -F'\t' 'FNR == NR { timed[$3] = $7; next }
		{ printf "%-16s %7.2fx %9.2fx %6s  %s\n", $1, $2, $3, $1 in timed ? sprintf("%.2fx", timed[$1]) : "-", $4 }' \
		"$dir/medians.tsv" "$dir/counted_ratio.tsv"
	echo
	echo "system calls of the client (strace; 64-byte SENDs, ping-pong) in three phases, split at the lines the program prints,"
	echo "most frequent first, and per message where a call is made at least once in ten messages:"
	echo "step 05 busy-polled, step 05 event-driven (-e), and ib_send_lat"
	# Each phase's calls, sorted by count, then by name.
	sort -t$'\t' -k1,1 -k2,2 -k4,4nr -k3,3 "$dir/syscalls.tsv" | awk -F'\t' '
		{ key = $1 " / " $2; messages[key] = $5; total[key] += $4
		  per = $2 == "loop" && $4 * 10 >= $5 ? sprintf(" (%.2f per message)", $4 / $5) : ""
		  list[key] = list[key] sprintf(" %s %s%s,", $3, $4, per) }
		END { n = split("busy|events|ib_send_lat", modes, "|")
		      for (i = 1; i <= n; i++) for (p = 1; p <= 3; p++) {
			      key = modes[i] " / " (p == 1 ? "set-up" : p == 2 ? "loop" : "teardown")
			      label = p == 2 ? key " (" messages[key] " messages)" : key
			      l = list[key]; sub(/,$/, "", l)
			      printf "  %-34s %5d:%s\n", label, total[key], l } }'
	echo
	echo "06_gdr, tcp against rdma, one run per size (wall and CPU time of each side, in us; extra copies):"
	printf '  %-8s %-5s %-9s %9s %9s %9s %7s\n' size path side wall user system copies
	awk -F'\t' '{ printf "  %-8s %-5s %-9s %9s %9s %9s %7s\n", $1, $2, $3, $4, $5, $6, $7 }' "$dir/cpu.tsv"
	echo "  (rxe is RDMA done in software by the kernel: here the comparison is CPU work and copies, not NIC offload)"
}

{
	echo "bench: $(meta device) ($(meta provider)), kernel $(meta kernel), clocksource $(meta clocksource), perftest $(meta perftest), commit $commit, $date"
	awk -F'\t' 'NR == 1 {
		printf "bench: ours and perftest: each tool'"'"'s median over %d repetitions; in each, the two ran back to back, each first in every other one\n", $11
		printf "bench: ratio: the median of the %d paired ratios, ours / perftest'"'"'s, one per repetition\n", $11
		printf "bench: interval: ratios %d to %d of the %d, sorted: a %.1f%% confidence interval for that median\n", $16, $11 + 1 - $16, $11, $15
		if ($15 < 95)
			print "bench: fewer than 6 repetitions give no 95% interval, so each verdict says: too few runs"
	}' "$dir/medians.tsv"
	echo "bench: goal: latency ratio <= 1.00 (floor 1.10), bandwidth ratio >= 1.00 (floor 0.90). Verdict: 'meets goal' when the"
	echo "bench:   ratio meets the goal and the whole interval the floor, 'meets floor' when only the interval does, 'misses floor'"
	echo "bench:   when the whole interval is past the floor, 'unresolved' when the interval spans it"
	echo "bench: write_lat is a round trip (the WRITE and its ACK); ib_write_lat reports half of one, so its figure is doubled"
	echo
	printf '%-16s %12s %12s  %-13s %7s  %-11s  %s\n' case ours perftest tool ratio interval verdict
	awk -F'\t' '{
		unit = $1 ~ /_lat$/ ? "us" : "MB/s"
		printf "%-16s %9.2f %-4s %7.2f %-4s %-13s %6.2fx  %4.2f-%4.2fx  %s\n", $3, $4, unit, $5, unit, $6, $7, $8, $9, $10
	}' "$dir/medians.tsv"
	if grep -q '^kv_' "$dir/medians.tsv"; then
		echo "kv_pull_qK, kv_push_qK: step 08 moving one request of 64 blocks of 64 KiB (4 MiB) over K QPs, pulled by RDMA READ"
		echo "  or pushed by WRITE with immediate, scattered on both sides; perftest moves the same bytes over K QPs, 64 in flight on each"
	fi
	if [ -s "$dir/ucx.tsv" ]; then
		echo "UCX $(meta ucx) (NIXL's default backend), ucx_perftest over rc_verbs (ud_verbs to connect), 64 KiB, 1000 messages:"
		awk -F'\t' '{ if ($2 == "ran") printf "  %-11s %9.2f MB/s\n", $1, $3
			else printf "  %-11s %s: %s\n", $1, $2, $4 }' "$dir/ucx.tsv"
	fi
	[ "$(meta only)" = kv ] || full_report
} | tee "$dir/report.txt"
if [ "$(meta only)" = kv ]; then
	echo "bench: wrote $dir/report.txt (BENCH_ONLY=kv: no counts, no JSON, no plot)"
	exit 0
fi

# The same figures as JSON.
{
	printf '{\n  "date": "%s",\n  "commit": "%s",\n  "kernel": "%s",\n  "device": "%s",\n  "provider": "%s",\n' \
		"$date" "$commit" "$(meta kernel)" "$(meta device)" "$(meta provider)"
	printf '  "clocksource": "%s",\n  "perftest": "%s",\n  "repetitions": %s,\n' \
		"$(meta clocksource)" "$(meta perftest)" "$(meta reps)"
	printf '  "units": {"latency": "us, median", "bandwidth": "10^6 bytes/s, median", "ratio": "median of the paired ratios, ours / perftest'"'"'s", "counted": "user-space instructions per message of work (the sleeps counted apart), both sides, ours / perftest'"'"'s"},\n  "cases": [\n'
	awk -F'\t' 'FNR == NR { counted[$1] = sprintf("{\"ratio\": %s, \"ratio_without_check\": %s, \"ours_work\": %s, \"perftest_work\": %s, \"ours_check\": %s}", $2, $3, $5, $6, $7); next }
		{ printf "%s    {\"case\": \"%s\", \"bytes\": %s, \"ours\": %s, \"perftest\": %s, \"tool\": \"%s\", \"ratio\": %s, \"interval\": [%s, %s], \"confidence\": %s, \"verdict\": \"%s\", \"runs\": %s, \"ours_runs\": %s, \"perftest_runs\": %s, \"ratios\": %s, \"counted\": %s}",
		(FNR > 1 ? ",\n" : ""), $1, $2, $4, $5, $6, $7, $8, $9, $15 / 100, $10, $11, $12, $13, $14, $3 in counted ? counted[$3] : "null" } END { print "" }' "$dir/counted_ratio.tsv" "$dir/medians.tsv"
	printf '  ],\n  "instructions_per_message": [\n'
	awk -F'\t' 'function num(v) { return v == "-" ? "null" : v }
		{ printf "%s    {\"case\": \"%s\", \"tool\": \"%s\", \"side\": \"%s\", \"passes\": %s, \"program\": %s, \"libibverbs\": %s, \"provider\": %s, \"libc\": %s, \"other\": %s, \"check\": %s, \"work\": %s, \"spread_percent\": %s, \"sleeps_per_message\": %s, \"instructions_per_sleep\": %s, \"sleep_spread_percent\": %s}",
		(NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, num($14), num($15) } END { print "" }' "$dir/counted.tsv"
	printf '  ],\n  "syscalls": [\n'
	awk -F'\t' '{ printf "%s    {\"mode\": \"%s\", \"phase\": \"%s\", \"syscall\": \"%s\", \"calls\": %s, \"loop_messages\": %s}",
		(NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5 } END { print "" }' "$dir/syscalls.tsv"
	printf '  ],\n  "tcp_vs_rdma": [\n'
	awk -F'\t' '{ printf "%s    {\"bytes\": %s, \"path\": \"%s\", \"side\": \"%s\", \"wall_us\": %s, \"user_us\": %s, \"system_us\": %s, \"extra_copies\": %s}",
		(NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7 } END { print "" }' "$dir/cpu.tsv"
	printf '  ],\n  "ucx": [\n'
	[ ! -s "$dir/ucx.tsv" ] || awk -F'\t' 'function esc(v) { gsub(/[\\"]/, "\\\\&", v); return v }
		{ printf "%s    {\"test\": \"%s\", \"outcome\": \"%s\", \"mb_per_s\": %s, \"last_line\": \"%s\"}",
		(NR > 1 ? ",\n" : ""), $1, $2, ($3 == "-" ? "null" : $3), ($4 == "-" ? "" : esc($4)) } END { print "" }' "$dir/ucx.tsv"
	printf '  ]\n}\n'
} >"$dir/bench.json"

# Latency against message size, ours beside perftest's.
awk -F'\t' '$1 == "send_lat" { print $2, $4, $5 }' "$dir/medians.tsv" >"$dir/send_lat.dat"
gnuplot <<GNUPLOT
set terminal svg size 720,420 font "sans,12" noenhanced
set output "$dir/bench.svg"
set title "SEND ping-pong latency over $(meta device), kernel $(meta kernel) (median of $(meta reps))"
set xlabel "message size (bytes)"
set ylabel "half round trip (us)"
set logscale x 2
set key top left
set grid
set style data linespoints
plot "$dir/send_lat.dat" using 1:2 title "step 05 (05_poll_destroy)" pt 7, \
     "$dir/send_lat.dat" using 1:3 title "perftest (ib_send_lat, t_typical)" pt 5
GNUPLOT
echo "bench: wrote $dir/report.txt, $dir/bench.json and $dir/bench.svg"
