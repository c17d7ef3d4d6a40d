#!/usr/bin/env bash
# report.sh: turns bench.sh's raw figures into the table, build/bench/bench.json and the latency plot (bench.svg).
#
# Usage: tests/bench/report.sh DIR    (DIR holds raw.tsv, syscalls.tsv, cpu.tsv and meta.env)
# Each case's figure is the median of its repetitions; the ratio is ours over
# perftest's.  For latency lower is better, for bandwidth higher.
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

# One line per case: CASE SIZE OURS PERFTEST TOOL RATIO REPS, from the medians.
awk -F'\t' '
	function median(key,    n, i, j, t, v) {
		n = split(values[key], v, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	# The runs, in the order they ran, as a JSON list.
	function runs(key,    l) {
		l = values[key]
		sub(/^ /, "", l)
		gsub(/ /, ", ", l)
		return "[" l "]"
	}
	{ values[$1 "|" $2] = values[$1 "|" $2] " " $4; count[$1 "|" $2]++
	  if (!($1 in seen)) { seen[$1] = 1; order[++cases] = $1 }
	  if ($2 != "ours") tool[$1] = $2 }
	END {
		for (c = 1; c <= cases; c++) {
			name = order[c]; split(name, parts, " ")
			ours = median(name "|ours"); theirs = median(name "|" tool[name])
			ratio = theirs > 0 ? ours / theirs : 0
			printf "%s\t%s\t%s\t%.2f\t%.2f\t%s\t%.2f\t%d\t%s\t%s\n", parts[1], parts[2], name, ours, theirs, tool[name], ratio, count[name "|ours"], runs(name "|ours"), runs(name "|" tool[name])
		}
	}' "$dir/raw.tsv" >"$dir/medians.tsv"

{
	echo "bench: $(meta device) ($(meta provider)), kernel $(meta kernel), clocksource $(meta clocksource), perftest $(meta perftest), commit $commit, $date"
	echo "bench: each figure is the median of $(meta reps) run(s); ratio = ours / perftest's"
	echo "bench: write_lat is a round trip (the WRITE and its ACK); ib_write_lat reports half of one, so its figure is doubled"
	echo
	printf '%-16s %12s %12s  %-13s %7s  %s\n' case ours perftest tool ratio goal
	awk -F'\t' '{
		lat = $1 ~ /_lat$/
		unit = lat ? "us" : "MB/s"
		goal = lat ? "<= 1.00 (floor 1.10)" : ">= 1.00 (floor 0.90)"
		printf "%-16s %9.2f %-4s %7.2f %-4s %-13s %6.2fx  %s\n", $3, $4, unit, $5, unit, $6, $7, goal
	}' "$dir/medians.tsv"
	echo
	echo "system calls of the client (strace -c; 64-byte SENDs, ping-pong): step 05 busy-polled, event-driven, and ib_send_lat:"
	awk -F'\t' '$4 + 0 != 0 { key = $1 " / " $2; list[key] = list[key] sprintf(" %s %s,", $3, $4); total[key] += $4 }
		END { n = split("busy / set-up and teardown|busy / per message|events / set-up and teardown|events / per message|ib_send_lat / set-up and teardown|ib_send_lat / per message", k, "|")
		      for (i = 1; i <= n; i++) { l = list[k[i]]; sub(/,$/, "", l); printf "  %-28s %8.2f:%s\n", k[i], total[k[i]], l } }' \
		"$dir/syscalls.tsv"
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
	printf '  "units": {"latency": "us, median", "bandwidth": "10^6 bytes/s, median"},\n  "cases": [\n'
	awk -F'\t' '{ printf "%s    {\"case\": \"%s\", \"bytes\": %s, \"ours\": %s, \"perftest\": %s, \"tool\": \"%s\", \"ratio\": %s, \"runs\": %s, \"ours_runs\": %s, \"perftest_runs\": %s}",
		(NR > 1 ? ",\n" : ""), $1, $2, $4, $5, $6, $7, $8, $9, $10 } END { print "" }' "$dir/medians.tsv"
	printf '  ],\n  "syscalls": [\n'
	awk -F'\t' '$4 + 0 != 0 { printf "%s    {\"mode\": \"%s\", \"phase\": \"%s\", \"syscall\": \"%s\", \"calls\": %s}",
		(n++ ? ",\n" : ""), $1, $2, $3, $4 } END { print "" }' "$dir/syscalls.tsv"
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
