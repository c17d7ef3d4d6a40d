#!/usr/bin/env bash
# report.sh: turns bench.sh's raw figures into the table, build/bench/bench.json and the latency plot (bench.svg).
#
# Usage: tests/bench/report.sh DIR    (DIR holds raw.tsv, syscalls.tsv, cpu.tsv and meta.env)
# Each tool's figure is the median of its repetitions; the ratio is the median of the
# repetitions' paired ratios, ours over perftest's, with a confidence interval.  For latency
# lower is better, for bandwidth higher.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
dir=${1:?usage: tests/bench/report.sh DIR}
for f in raw.tsv syscalls.tsv cpu.tsv meta.env; do
	[ -s "$dir/$f" ] || { echo "report: $dir/$f is missing or empty: did bench.sh finish?" >&2; exit 1; }
done
meta() { sed -n "s/^$1=//p" "$dir/meta.env"; }

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
} | tee "$dir/report.txt"

# The same figures as JSON.
{
	printf '{\n  "date": "%s",\n  "commit": "%s",\n  "kernel": "%s",\n  "device": "%s",\n  "provider": "%s",\n' \
		"$date" "$commit" "$(meta kernel)" "$(meta device)" "$(meta provider)"
	printf '  "clocksource": "%s",\n  "perftest": "%s",\n  "repetitions": %s,\n' \
		"$(meta clocksource)" "$(meta perftest)" "$(meta reps)"
	printf '  "units": {"latency": "us, median", "bandwidth": "10^6 bytes/s, median", "ratio": "median of the paired ratios, ours / perftest'"'"'s"},\n  "cases": [\n'
	awk -F'\t' '{ printf "%s    {\"case\": \"%s\", \"bytes\": %s, \"ours\": %s, \"perftest\": %s, \"tool\": \"%s\", \"ratio\": %s, \"interval\": [%s, %s], \"confidence\": %s, \"verdict\": \"%s\", \"runs\": %s, \"ours_runs\": %s, \"perftest_runs\": %s, \"ratios\": %s}",
		(NR > 1 ? ",\n" : ""), $1, $2, $4, $5, $6, $7, $8, $9, $15 / 100, $10, $11, $12, $13, $14 } END { print "" }' "$dir/medians.tsv"
	printf '  ],\n  "syscalls": [\n'
	awk -F'\t' '{ printf "%s    {\"mode\": \"%s\", \"phase\": \"%s\", \"syscall\": \"%s\", \"calls\": %s, \"loop_messages\": %s}",
		(NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5 } END { print "" }' "$dir/syscalls.tsv"
	printf '  ],\n  "tcp_vs_rdma": [\n'
	awk -F'\t' '{ printf "%s    {\"bytes\": %s, \"path\": \"%s\", \"side\": \"%s\", \"wall_us\": %s, \"user_us\": %s, \"system_us\": %s, \"extra_copies\": %s}",
		(NR > 1 ? ",\n" : ""), $1, $2, $3, $4, $5, $6, $7 } END { print "" }' "$dir/cpu.tsv"
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
