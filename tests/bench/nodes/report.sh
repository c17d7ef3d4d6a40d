#!/usr/bin/env bash
# report.sh: the bench across nodes as tables: step 07's busbw against size for N = 2, 3, 4, beside ib_write_bw's bound, Gloo, Open MPI and the ring's model; step 09's dispatch and combine beside theirs; step 10's three ways beside their model (nodes.txt, nodes.tsv, links.tsv, mesh.tsv, moe.tsv, weights.tsv, nodes.svg).
#
# Usage: tests/bench/nodes/report.sh DIR   (DIR holds N/nodeK/*.log, as bench.sh leaves them)
# Bandwidths are in MB/s (10^6 B/s).  The bound is ib_write_bw's slowest ring link
# while every link ran at once: a ring moves at its slowest link's pace.  The model is
# the ring's, with nothing fitted: time = 2(N-1) x L + 2(N-1)/N x S / B, with L the
# latency of one WRITE (ib_write_lat's t_typical, node 2 to node 1 alone) and B that bound.  Below
# each table, rxe's counters summed over the nodes, for ib_write_bw on every link and for
# step 07's part (its TCP sweep moves none of them): packets sent, and those of loss and
# recovery (out_of_seq_request: a request arrived past a gap, so one was lost;
# duplicate_request: one arrived again; rcvd_seq_err: a NAK for a gap came back;
# completer_retry_err: a requester's retransmit timer ran out).
# Step 09's model, with nothing fitted either: a phase's time = max over the ordered pairs
# (s, d) of bytes(s, d) / B(s, d), plus L.  bytes(s, d) is what rank s sends rank d in that
# phase, from step 09's own "pairs" line of the row; B(s, d), ib_write_bw from node s + 1 to
# node d + 1 while every ordered pair ran at once (the mesh part); L, ib_atomic_lat's t_typical
# for an 8-byte FETCH_ADD (perftest's figure for an atomic is its round trip), the signal that
# ends the phase.  Every pair sends at once, each at its own measured pace: the slowest ends it.
set -uo pipefail
dir=${1:?usage: tests/bench/nodes/report.sh DIR}

die() { echo "bench-nodes: $*" >&2; exit 1; }

# perftest's t_typical (us) on ib_write_lat's result line: half a round trip of WRITEs.
lat_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $5 } END { if (v != "") print v }' "$1"; }

# perftest's BW average (MiB/s) on its result line, as 10^6 B/s.
bw_of() { awk '$1 ~ /^[0-9]+$/ && NF >= 4 { v = $4 * 1.048576 } END { if (v != "") printf "%.2f\n", v }' "$1"; }

# The rows of nccl-tests' tables in FILE, as "TABLE SIZE TIME_US BUSBW", TABLE counting
# from 1, BUSBW in MB/s from the time (the table's GB/s has three decimals: too few here).
rows_of() { # FILE N
	sed 's/^\[default0\]://' "$1" | awk -v n="$2" '/^# all_reduce over/ { t++ }
		$1 ~ /^[0-9]+$/ && NF == 9 && $4 == "sum" && $6 > 0 { printf "%d %d %s %.3f\n", t, $1, $6, 2 * (n - 1) / n * $1 / $6 }'
}

: >"$dir/nodes.tsv"
printf 'nodes\tsize\timplementation\ttransport\ttime_us\tbusbw_MBps\n' >"$dir/nodes.tsv"
: >"$dir/links.tsv"
printf 'nodes\tpair_alone_MBps\tlinks_min_MBps\tlinks_mean_MBps\tlinks\twrite_lat_us\n' >"$dir/links.tsv"
for n_dir in "$dir"/[2-4]; do
	[ -d "$n_dir" ] || continue
	n=${n_dir##*/}
	lat=$(lat_of "$n_dir/node2/lat.log")
	[ -n "$lat" ] || die "$n nodes: ib_write_lat printed no figure: $(tail -n 3 "$n_dir/node2/lat.log")"
	pair=$(bw_of "$n_dir/node2/pair.log")
	[ -n "$pair" ] || die "$n nodes: ib_write_bw alone printed no figure: $(tail -n 3 "$n_dir/node2/pair.log")"
	links=()
	for ((k = 1; k <= n; k++)); do
		v=$(bw_of "$n_dir/node$k/links.client.log")
		[ -n "$v" ] || die "$n nodes: ib_write_bw from node $k printed no figure: $(tail -n 3 "$n_dir/node$k/links.client.log")"
		links+=("$v")
	done
	printf '%s\t%s\t%s\t%s\n' "$n" "$pair" "${links[*]}" "$lat" |
		awk -F'\t' '{ m = split($3, l, " "); min = l[1]; s = 0
			for (i = 1; i <= m; i++) { s += l[i]; if (l[i] < min) min = l[i] }
			printf "%s\t%s\t%.2f\t%.2f\t%s\t%s\n", $1, $2, min, s / m, $3, $4 }' >>"$dir/links.tsv"
	{
		rows_of "$n_dir/node1/ring.log" "$n" | awk -v n="$n" '{ printf "%s\t%s\tstep 07\t%s\t%s\t%.2f\n", n, $2, ($1 == 1 ? "RDMA (verbs, RC)" : "TCP"), $3, $4 }'
		rows_of "$n_dir/node1/gloo.log" "$n" | awk -v n="$n" '{ printf "%s\t%s\tGloo\tTCP, across the nodes\t%s\t%.2f\n", n, $2, $3, $4 }'
		rows_of "$n_dir/node1/mpi.log" "$n" | awk -v n="$n" '{ printf "%s\t%s\tOpen MPI\tshared memory, one node\t%s\t%.2f\n", n, $2, $3, $4 }'
	} >>"$dir/nodes.tsv"
done
[ "$(wc -l <"$dir/links.tsv")" -gt 1 ] || die "no node counts under $dir"

# Step 09's rows in FILE (rank 0's), as "TABLE ROW SIZE PHASE TIME_US WRONG", TABLE 1 over RDMA,
# 2 over TCP; then each row's pairs, as "TABLE ROW pairs PHASE S>D BYTES ...", ranks from 0.
moe_rows_of() { # FILE
	awk '/^# MoE all-to-all over/ { t++; r = 0 }
		$1 ~ /^[0-9]+$/ && NF == 8 && $3 == "uint32" { if ($4 == "dispatch") r++; print t, r, $1, $4, $5, $8 }
		/^pairs [0-9]+ B/ { sub(/^[^:]*: B from rank s to rank d \(s>d\), dispatch: /, ""); split($0, ph, "; combine: ")
			gsub(/,/, "", ph[1]); gsub(/,/, "", ph[2])
			print t, r, "pairs dispatch", ph[1]; print t, r, "pairs combine", ph[2] }' "$1"
}

# Every ordered pair's ib_write_bw while all ran at once, and step 09's rows with their model.
printf 'nodes\tfrom\tto\tMBps\n' >"$dir/mesh.tsv"
printf 'nodes\tround\tway\ttime_ms\tslowest_B\tmodel_ms\twrong\n' >"$dir/weights.tsv"
printf 'nodes\trow\tsize\tphase\ttransport\ttime_us\twrong\tbytes_us\tsignal_us\tmodel_us\n' >"$dir/moe.tsv"
for n_dir in "$dir"/[2-4]; do
	n=${n_dir##*/}
	signal=$(lat_of "$n_dir/node2/atomic.log")
	[ -n "$signal" ] || die "$n nodes: ib_atomic_lat printed no figure: $(tail -n 3 "$n_dir/node2/atomic.log")"
	for ((s = 1; s <= n; s++)); do
		for ((d = 1; d <= n; d++)); do
			[ "$s" = "$d" ] && continue
			v=$(bw_of "$n_dir/node$s/mesh.client.$d.log")
			[ -n "$v" ] || die "$n nodes: ib_write_bw from node $s to node $d printed no figure: $(tail -n 3 "$n_dir/node$s/mesh.client.$d.log")"
			printf '%s\t%s\t%s\t%s\n' "$n" "$s" "$d" "$v" >>"$dir/mesh.tsv"
		done
	done
	rows=$(moe_rows_of "$n_dir/node1/moe.log")
	grep -q '^2 ' <<<"$rows" || die "$n nodes: step 09 printed no TCP table: $(tail -n 3 "$n_dir/node1/moe.log")"
	# Each row's model from the RDMA table's pairs (the TCP table's are the same gate's).
	awk -v n="$n" -v sig="$signal" 'FILENAME ~ /mesh.tsv$/ { if ($1 == n) bw[$2 - 1, $3 - 1] = $4; next }
		$3 == "pairs" && $1 == 1 { slow = 0
			for (i = 5; i < NF; i += 2) { split($i, p, ">"); if ($(i + 1) / bw[p[1], p[2]] > slow) slow = $(i + 1) / bw[p[1], p[2]] }
			term[$2, $4] = slow; next }
		$3 != "pairs" { line[++m] = $0 }
		END { for (i = 1; i <= m; i++) { split(line[i], f, " ")
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%.1f\n", n, f[2], f[3], f[4], (f[1] == 1 ? "RDMA" : "TCP"), f[5], f[6],
				term[f[2], f[4]], sig, term[f[2], f[4]] + sig } }' FS='\t' "$dir/mesh.tsv" FS=' ' - <<<"$rows" >>"$dir/moe.tsv"
done

# rxe's counters of PART on the N nodes, summed: "sent_pkts N out_of_seq_request N ...".
counters_of() { # N_DIR PART
	cat "$1"/node*/"$2".counters | awk '{ sum[$1] += $2 }
		END { printf "sent_pkts %d, out_of_seq_request %d, duplicate_request %d, rcvd_seq_err %d, completer_retry_err %d",
			sum["sent_pkts"], sum["out_of_seq_request"], sum["duplicate_request"], sum["rcvd_seq_err"], sum["completer_retry_err"] }'
}

# The table: per N, the bound, then one line per size.
awk -F'\t' 'FNR == 1 { next }
	FILENAME ~ /links.tsv$/ { pair[$1] = $2; bound[$1] = $3; mean[$1] = $4; lat[$1] = $6; next }
	{ key = $1 SUBSEP $2; sizes[$1] = sizes[$1] (key in seen ? "" : " " $2); seen[key] = 1
	  if ($3 == "step 07" && $4 ~ /^RDMA/) { rdma[key] = $6; t[key] = $5 }
	  else if ($3 == "step 07") tcp[key] = $6
	  else if ($3 == "Gloo") gloo[key] = $6
	  else mpi[key] = $6 }
	END {
		for (n = 2; n <= 4; n++) {
			if (!(n in bound)) continue
			m = split(sizes[n], s, " ")
			printf "N = %d nodes: ib_write_lat 2 B %.1f us; ib_write_bw 64 KiB, one pair alone %.2f MB/s; every ring link at once: slowest %.2f, mean %.2f MB/s (the bound)\n", n, lat[n], pair[n], bound[n], mean[n]
			printf "%10s  %10s %7s  %9s %9s %9s %9s  %11s %11s\n", "size (B)", "RDMA busbw", "/bound", "TCP", "Gloo", "MPI 1 node", "", "time (us)", "model (us)"
			f = 2 * (n - 1) / n
			a = 2 * (n - 1) * lat[n]
			for (i = 1; i <= m; i++) {
				k = n SUBSEP s[i]
				printf "%10d  %10.2f %6.2fx  %9.2f %9.2f %9.2f %9s  %11.0f %11.0f\n", s[i], rdma[k], rdma[k] / bound[n], tcp[k], gloo[k], mpi[k], "", t[k], a + f * s[i] / bound[n]
			}
			printf "\n"
		}
		print "busbw in MB/s (10^6 B/s), nccl-tests'\'' 2(N-1)/N x S / time; the model: 2(N-1) x ib_write_lat + 2(N-1)/N x S / bound."
		print "Transports: step 07, RDMA (verbs, RC over soft-RoCE) and TCP, across the nodes; Gloo, TCP across the nodes; Open MPI, shared memory on node 1 (btl self,vader)."
	}' "$dir/links.tsv" "$dir/nodes.tsv" >"$dir/nodes.txt"
# CPU seconds (user + system) against wall seconds, summed over the nodes: "NAME CPU of WALL s, ...".
cpu_of() { # N_DIR PART
	cat "$1"/node*/"$2".cpu | awk '{ cpu[$1] += $2 + $3; wall[$1] += $4; if (!($1 in seen)) { seen[$1] = 1; names[++n] = $1 } }
		END { for (i = 1; i <= n; i++) printf "%s%s %.1f of %.1f s", (i > 1 ? ", " : ""), names[i], cpu[names[i]], wall[names[i]] }'
}
# Every result crc32 line of FILES, as "VALUE" lines (torchrun's "[defaultK]:" taken off).
crcs_of() { sed -n 's/^\(\[default[0-9]*\]:\)\{0,1\}result crc32 *: \(0x[0-9a-f]*\):.*/\2/p' "$@"; }
for n_dir in "$dir"/[2-4]; do
	n=${n_dir##*/}
	values=$(crcs_of "$n_dir"/node*/ring.log "$n_dir"/node*/gloo.log "$n_dir"/node1/mpi.log | sort | uniq -c | awk '{ printf "%s%s on %d", sep, $2, $1; sep = ", " }')
	lines=$(crcs_of "$n_dir"/node*/ring.log "$n_dir"/node*/gloo.log "$n_dir"/node1/mpi.log | wc -l)
	# Each rank of step 07 prints one per transport (2), Gloo's and Open MPI's one each: 4 a rank.
	if [ "$lines" = $((4 * n)) ] && [ "$(crcs_of "$n_dir"/node*/ring.log "$n_dir"/node*/gloo.log "$n_dir"/node1/mpi.log | sort -u | wc -l)" = 1 ]; then
		verdict="the same to the bit"
	else
		verdict="NOT the same, or some missing ($lines lines, $((4 * n)) expected)"
	fi
	echo "N = $n, result crc32 at the largest size, step 07 over RDMA and TCP, Gloo and Open MPI on every rank: $values lines: $verdict"
done >>"$dir/nodes.txt"
# rxe's counters and CPU time of step 07's parts; then step 09's table: per N, the links and
# the signal, one line per row of each phase; below it, per N, the check, and the counters
# and CPU time of the mesh and step 09.
{
for n_dir in "$dir"/[2-4]; do
	[ -e "$n_dir/node1/links.counters" ] || continue
	echo "N = ${n_dir##*/}, rxe's counters over the nodes: ib_write_bw on every link: $(counters_of "$n_dir" links); step 07: $(counters_of "$n_dir" ring)"
	[ -e "$n_dir/node1/links.cpu" ] || continue
	echo "N = ${n_dir##*/}, CPU time over the nodes (user + system, of wall): ib_write_bw on every link: $(cpu_of "$n_dir" links); step 07 (RDMA and TCP): $(cpu_of "$n_dir" ring)"
done
awk -F'\t' 'FNR == 1 { next }
	FILENAME ~ /mesh.tsv$/ { k = $1; pairs[k]++; sum[k] += $4; if (!(k in slow) || $4 < slow[k]) slow[k] = $4; next }
	{ key = $1 SUBSEP $2 SUBSEP $4
	  if ($5 == "RDMA") { rows[$1] = rows[$1] " " $2 SUBSEP $4; size[key] = $3; t[key] = $6; model[key] = $10; term[key] = $8; sig[$1] = $9 }
	  else tcp[key] = $6 }
	END {
		for (n = 2; n <= 4; n++) {
			if (!(n in sig)) continue
			printf "\nN = %d nodes, step 09, one rank a node: ib_atomic_lat FETCH_ADD 8 B %.1f us (the signal); ib_write_bw 64 KiB on all %d ordered pairs at once: slowest %.2f, mean %.2f MB/s\n", n, sig[n], pairs[n], slow[n], sum[n] / pairs[n]
			printf "%10s  %8s  %11s %11s %7s %12s  %11s %7s\n", "size (B)", "phase", "RDMA (us)", "model (us)", "/model", "/ib_write_bw", "TCP (us)", "/model"
			m = split(rows[n], r, " ")
			for (i = 1; i <= m; i++) {
				k = n SUBSEP r[i]; split(r[i], f, SUBSEP)
				printf "%10d  %8s  %11.0f %11.0f %6.2fx %11.2fx  %11.0f %6.2fx\n", size[k], f[2], t[k], model[k], t[k] / model[k], term[k] / t[k], tcp[k], tcp[k] / model[k]
			}
		}
		print "Step 09: the size is the most bytes a rank sent in the phase, as its table prints it; times are the mean of -n pairs, the slowest rank'\''s."
		print "The model: max over the ordered pairs (s, d) of bytes(s, d) / ib_write_bw(s, d), every pair at once, plus ib_atomic_lat; bytes(s, d) from step 09'\''s pairs line."
		print "/ib_write_bw: that bytes term over the time, the share of ib_write_bw'\''s all-pairs rate step 09 reached; TCP'\''s /model against the same RDMA model."
	}' "$dir/mesh.tsv" "$dir/moe.tsv"
for n_dir in "$dir"/[2-4]; do
	n=${n_dir##*/}
	awk -F'\t' -v n="$n" 'FNR > 1 && $1 == n { rows[$5]++; wrong[$5] += $7 }
		END { printf "N = %d, step 09'\''s check, every token of every row against the CPU reference: RDMA %d rows, %d tokens wrong; TCP %d rows, %d tokens wrong\n", n, rows["RDMA"], wrong["RDMA"], rows["TCP"], wrong["TCP"] }' "$dir/moe.tsv"
	echo "N = $n, rxe's counters over the nodes: ib_write_bw on every pair at once: $(counters_of "$n_dir" mesh); step 09: $(counters_of "$n_dir" moe)"
	echo "N = $n, CPU time over the nodes (user + system, of wall): ib_write_bw on every pair at once: $(cpu_of "$n_dir" mesh); step 09 (RDMA and TCP): $(cpu_of "$n_dir" moe)"
done

# Step 10's three ways, each round, beside ib_write_bw's model: the slowest rank's bytes over
# ib_write_bw one pair alone (step 10's own model column uses the rate of its round's push).
for n_dir in "$dir"/[2-4]; do
	n=${n_dir##*/}
	[ -f "$n_dir/node1/weights.log" ] || die "$n nodes: step 10 left no log (job.sh's part weights)"
	pair=$(awk -F'\t' -v n="$n" '$1 == n { print $2 }' "$dir/links.tsv")
	awk -v n="$n" -v pair="$pair" -v out="$dir/weights.tsv" '
		/^# weight sync, round [0-9]+ / { round = $5; head = $0; sub(/^# weight sync, round [0-9]+ \(version [0-9]+\): /, "", head); sub(/; model:.*/, "", head) }
		round && NF == 11 && $1 ~ /^(push|gather|tcp)$/ {
			model = $9 / pair / 1000
			printf "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\n", n, round, $1, $2, $9, model, $11 >> out
			row[++m] = sprintf("%5s  %-6s %10.2f %12d %10.2f %8.2fx %7d", round, $1, $2, $9, model, $2 / model, $11) }
		END { if (!m) exit 1
			printf "\nStep 10 across %d nodes: %s; each way, each round, beside ib_write_bw'\''s model\n", n, head
			printf "%5s  %-6s %10s %12s %10s %9s %7s\n", "round", "way", "time (ms)", "slowest (B)", "model (ms)", "/model", "#wrong"
			for (i = 1; i <= m; i++) print row[i]
			printf "The model: the slowest rank'\''s bytes (the plan'\''s, as step 10'\''s table prints them) over ib_write_bw one pair alone, %.2f MB/s; the gather'\''s rank 0 moves every trainer'\''s shard in and the whole model out.\n", pair }' \
		"$n_dir/node1/weights.log" || die "$n nodes: step 10 printed no table: $(tail -n 3 "$n_dir/node1/weights.log")"
done
} >>"$dir/nodes.txt"
cat "$dir/nodes.txt"

# The plot: busbw against size, one colour per N; the bound as a flat line.
for n in 2 3 4; do
	awk -F'\t' -v n="$n" '$1 == n && $3 == "step 07" && $4 ~ /^RDMA/ { print $2, $6 }' "$dir/nodes.tsv" >"$dir/rdma$n.dat"
	awk -F'\t' -v n="$n" '$1 == n && $3 == "Gloo" { print $2, $6 }' "$dir/nodes.tsv" >"$dir/gloo$n.dat"
	awk -F'\t' -v n="$n" '$1 == n { print $3 }' "$dir/links.tsv" >"$dir/bound$n.dat"
	# The model's busbw at each size: 2(N-1)/N x S over the model's time.
	awk -F'\t' -v n="$n" 'FILENAME ~ /links.tsv$/ { if ($1 == n) { b = $3; l = $6 } next }
		$1 == n && $3 == "step 07" && $4 ~ /^RDMA/ { f = 2 * (n - 1) / n; print $2, f * $2 / (2 * (n - 1) * l + f * $2 / b) }' \
		"$dir/links.tsv" "$dir/nodes.tsv" >"$dir/model$n.dat"
done
plots=()
for n in 2 3 4; do
	[ -s "$dir/rdma$n.dat" ] || continue
	bound=$(cat "$dir/bound$n.dat")
	plots+=("\"$dir/rdma$n.dat\" using 1:2 title \"step 07, N = $n\" lc $n pt 7 with linespoints"
		"\"$dir/gloo$n.dat\" using 1:2 title \"Gloo, N = $n\" lc $n pt 4 dt 3 with linespoints"
		"$bound title \"ib_write_bw, every link at once, N = $n\" lc $n dt 2 with lines"
		"\"$dir/model$n.dat\" using 1:2 title \"the ring's model, N = $n\" lc $n dt 4 with lines")
done
plot_line=$(IFS=,; echo "${plots[*]}")
gnuplot <<GNUPLOT
set terminal svg size 760,440 font "sans,12" noenhanced
set output "$dir/nodes.svg"
set title "Ring all-reduce across N VMs on one soft-RoCE segment (bus bandwidth)"
set xlabel "all-reduce size S (bytes)"
set ylabel "busbw (MB/s)"
set logscale x 2
set key top left font ",9"
set grid
plot $plot_line
GNUPLOT
rm -f "$dir"/rdma?.dat "$dir"/gloo?.dat "$dir"/bound?.dat "$dir"/model?.dat
echo "bench-nodes: wrote $dir/nodes.txt, nodes.tsv, links.tsv, mesh.tsv, moe.tsv, weights.tsv and nodes.svg"
