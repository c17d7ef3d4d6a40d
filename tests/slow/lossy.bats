#!/usr/bin/env bats
# lossy.bats: step 11 over UC against RC between two nodes under netem's loss on the wire (0, 0.1, 1 and 5%, a reordering, and 100%): goodput, what was sent again, rxe's counters and node 1's capture, checked against each other; step 05's pipelined WRITEs and ib_write_bw under the same loss, RC from node 2; each of 4 paths' UDP source port; and over two planes, one cut mid-transfer ('make test-lossy').
# tests/lossy/lossy.sh boots the two nodes (namespaces of one VM on Linux 7.x) once for the whole file and runs tests/lossy/cases.tsv;
# node 1 is the sender and captures, node 2 the receiver; netem on each node's eth0 drops RoCE v2 packets only.
# The harness gives each node a second plane (RDMA_VM_PLANES=2: eth1, rxeKb); the planes cases cut it with netem on eth1.
# Budget: about 5 minutes on a 2-core machine.
# bats file_tags=outside-vm

setup_file() {
	load ../lib/harness
	export LOSSY=$BATS_FILE_TMPDIR/lossy
	boot_harness_once "$BATS_TEST_DIRNAME/../lossy/lossy.sh" "$LOSSY" lossy
}

setup() {
	load ../lib/test_helper
}

# Column COL (2: exit status, 3: seconds, 4: the clock at its end) of CASE in node K's status.tsv; "-" if it did not run.
status_of() { # K CASE [COL]
	awk -F'\t' -v c="$2" -v col="${3:-2}" '$1 == c { s = $col } END { print (s == "" ? "-" : s) }' "$LOSSY/node$1/status.tsv"
}

# The change of rxe's counter NAME on node K over CASE.
counter() { # K CASE NAME
	awk -v n="$3" '$1 == n { print $2 }' "$LOSSY/node$1/$2.counters"
}

# What node K's netem did over CASE: "sent" or "dropped" packets.
netem_of() { # K CASE sent|dropped
	sed -n "s/^netem: eth0 sent \([0-9]*\) packets, dropped \([0-9]*\)$/\1 \2/p" "$LOSSY/node$1/$2.counters" |
		awk -v w="$3" '{ print (w == "sent" ? $1 : $2) }'
}

# The chunks (of 1,024 B) the transfer moved, and those the sender sent again, from its summary line.
chunks_of() { sed -n 's/^summary .*, \([0-9]*\) chunks of 1024 bytes: .*/\1/p' "$LOSSY/node1/$1.log"; }
again_of() { sed -n 's/^summary .*: sent again \([0-9]*\) chunks .*/\1/p' "$LOSSY/node1/$1.log"; }
rounds_of() { sed -n 's/^summary .*, rounds \([0-9]*\), check .*/\1/p' "$LOSSY/node1/$1.log"; }
goodput_of() { sed -n 's/^goodput .*, \([0-9.]*\) MB\/s .*/\1/p' "$LOSSY/node1/$1.log"; }

# Packets node 1's capture of CASE holds from node 1 (or from node 2) with BTH opcode OP
# (11: RC WRITE Only with Immediate, 43: UC's, 17: Acknowledge, 4: SEND Only), or any ("").
captured() { # CASE FROM_NODE [OP]
	awk -F'\t' -v s="198.18.0.$2" -v op="${3:-}" 'NR > 1 && $3 == s && (op == "" || $6 == op)' "$LOSSY/$1.tsv" | wc -l
}

# How many of FROM_NODE's packets in node 1's capture came with a PSN more than one past the
# highest before it to the same QP (24 bits, so mod 2^24): the gaps node 1's responders met, as
# its capture saw them.
gaps_in_capture() { # CASE FROM_NODE
	awk -F'\t' -v s="198.18.0.$2" 'NR > 1 && $3 == s {
			ahead = ($7 in top) ? ($8 - top[$7] + 16777216) % 16777216 : 1
			if (ahead > 1 && ahead < 8388608) gaps++
			if (ahead > 0 && ahead < 8388608) top[$7] = $8 }
		END { print gaps + 0 }' "$LOSSY/$1.tsv"
}

# Node 2 (the receiver, whose wall time includes its wait for node 1's server) ended within
# 3 s of node 1, by the clock the nodes of one VM share.
ends_together() { # CASE
	awk -v a="$(status_of 1 "$1" 4)" -v b="$(status_of 2 "$1" 4)" -v s="$TIME_SCALE" 'BEGIN { d = b - a; exit !(d >= -3 * s && d <= 3 * s) }' ||
		fail "$1: node 1 ended at $(status_of 1 "$1" 4), node 2 at $(status_of 2 "$1" 4)"
}

# The model's packets sent beyond the data of PACKETS at CASE's loss p (its name's last part, in
# percent; "-" under reordering): p x PACKETS losses, each costing UC the one chunk lost and RC
# about a window, the 128 PSNs rxe lets a QP have unacknowledged (RXE_MAX_UNACKED_PSNS, rxe_param.h;
# rxe_req.c stops there), all sent again from the gap on (req_retry).  First order: losses among
# the packets sent again, and several losses in one window, are left out.
model_of() { # CASE PACKETS
	local p=${1##*_} w=128
	[[ $p =~ ^[0-9.]+$ ]] || { echo -; return; }
	[[ $1 == uc_* ]] && w=1
	awk -v p="$p" -v n="$2" -v w="$w" 'BEGIN { printf "%.0f\n", p / 100 * n * w }'
}

# The plot beside the table: for each loss and program, its goodput (linear) beside the packets
# it sent beyond the data and the model's (both on a log scale, 0 as no bar).
plot_of() { # TABLE
	awk '
		function bar(n, c,  s) { s = ""; while (n-- > 0) s = s c; return s }
		function lg(x) { return log(1 + x) }
		$1 ~ /^[a-z0-9]+_[0-9a-z.]+$/ && $2 ~ /^[0-9.]+$/ {
			g[$1] = $2; b[$1] = $4; m[$1] = $5
			if ($2 > gmax) gmax = $2
			if ($4 > bmax) bmax = $4
			if ($5 ~ /^[0-9]+$/ && $5 > bmax) bmax = $5
		}
		END {
			print "goodput against loss, beside the packets sent beyond the data: measured (=) and the model (~), UC p x N, RC p x N x 128"
			printf "%-8s %-4s %-27s | %-22s | %s\n", "loss", "run", "goodput, MB/s", "beyond the data (log)", "the model (log)"
			n = split("0 0.1 1 5 reorder", loss, " ")
			split("uc rc s05 bw", run, " ")
			for (i = 1; i <= n; i++) {
				label = loss[i] == "reorder" ? "reorder" : loss[i] "%"
				for (j = 1; j <= 4; j++) {
					c = run[j] "_" loss[i]
					if (!(c in g)) continue
					printf "%-8s %-4s %-20s %6.2f | %-16s %5d | %-16s %5s\n", label, run[j],
						bar(int(g[c] / gmax * 20 + 0.5), "#"), g[c], bar(int(lg(b[c]) / lg(bmax) * 16 + 0.5), "="), b[c],
						m[c] == "-" ? "" : bar(int(lg(m[c]) / lg(bmax) * 16 + 0.5), "~"), m[c]
					label = ""
				}
			}
		}' "$1"
}

# One row of the table: what CASE cost.
row() { # CASE
	local c=$1 chunks writes
	chunks=$(chunks_of "$c")
	# The WRITEs node 1's rxe sent: its sent_pkts less the other packets it sent (ACKs,
	# asks) as the capture shows them; a control packet netem dropped would count here.
	writes=$(($(counter 1 "$c" sent_pkts) - $(awk -F'\t' 'NR > 1 && $3 == "198.18.0.1" && $6 != 11 && $6 != 43' "$LOSSY/$c.tsv" | wc -l)))
	printf '%-10s %9s %8s %9s %6s %6s %7s %7s %7s %7s %7s %5s/%s\n' "$c" "$(goodput_of "$c")" "$writes" \
		"$((writes - chunks))" "$(model_of "$c" "$chunks")" "$(again_of "$c")" "$(rounds_of "$c")" "$(counter 1 "$c" rcvd_seq_err)" \
		"$(counter 1 "$c" completer_retry_err)" "$(counter 2 "$c" out_of_seq_request)" \
		"$(counter 2 "$c" duplicate_request)" "$(netem_of 1 "$c" dropped)" "$(netem_of 2 "$c" dropped)"
}

# One row of the table for step 05 or ib_write_bw: node 2 sent (rxe's sent_pkts: WRITEs only), node 1 received.
row_client() { # CASE
	local c=$1 sent
	sent=$(counter 2 "$c" sent_pkts)
	printf '%-10s %9s %8s %9s %6s %6s %7s %7s %7s %7s %7s %5s/%s\n' "$c" "$(client_goodput_of "$c")" "$sent" \
		"$((sent - $(client_packets_of "$c")))" "$(model_of "$c" "$(client_packets_of "$c")")" - - "$(counter 2 "$c" rcvd_seq_err)" \
		"$(counter 2 "$c" completer_retry_err)" "$(counter 1 "$c" out_of_seq_request)" \
		"$(counter 1 "$c" duplicate_request)" "$(netem_of 1 "$c" dropped)" "$(netem_of 2 "$c" dropped)"
}

@test "lossy: every transfer under 0 to 5% loss and reordering ended with every chunk in and every byte right, on both sides; 100% ended in failure on both" {
	for c in uc_0 rc_0 uc_0.1 rc_0.1 uc_1 rc_1 uc_5 rc_5 uc_reorder rc_reorder; do
		for k in 1 2; do
			[ "$(status_of $k $c)" = 0 ] || fail "node $k, $c: exit status $(status_of $k $c): $(cat "$LOSSY/node$k/$c.log")"
			run cat "$LOSSY/node$k/$c.log"
			refute_output --partial 'error:'
			assert_line --regexp "^summary +: ${c%%_*} over 1 path, [0-9]+ chunks of 1024 bytes: sent again [0-9]+ chunks \([0-9]+ bytes\), rounds [0-9]+, check right$"
			assert_line --regexp '^teardown +: every object released$'
		done
		# Both sides print the sender's account.
		[ "$(grep '^summary' "$LOSSY/node1/$c.log")" = "$(grep '^summary' "$LOSSY/node2/$c.log")" ] || fail "$c: the two summaries differ"
		# tcpdump missed nothing: the capture's counts below are the wire's.
		grep -qx '0 packets dropped by kernel' "$LOSSY/node1/$c.counters" || fail "$c: tcpdump dropped packets: $(cat "$LOSSY/node1/$c.counters")"
	done
	for c in rc_100 rc_100_retry7 uc_100; do
		for k in 1 2; do
			[ "$(status_of $k $c)" = 1 ] || fail "node $k, $c: exit status $(status_of $k $c), not 1: $(cat "$LOSSY/node$k/$c.log")"
			[ "$(grep -c '^error: ' "$LOSSY/node$k/$c.log")" = 1 ] || fail "node $k, $c: not one error line: $(cat "$LOSSY/node$k/$c.log")"
			grep -qE '^teardown +: every object released$' "$LOSSY/node$k/$c.log" || fail "node $k, $c: objects left: $(cat "$LOSSY/node$k/$c.log")"
		done
	done
}

@test "lossy: the harness put RDMA_VM_NETEM's netem on each node's eth0 before the job: a prio qdisc, netem in its band 3, RoCE v2 filtered there" {
	for k in 1 2; do
		run cat "$LOSSY/node$k/harness.netem"
		assert_line 'netem: eth0 sent 0 packets, dropped 0'
		assert_line --regexp '^qdisc prio 1: root refcnt [0-9]+ bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1$'
		# tc prints no loss of 0%.
		assert_line --regexp '^qdisc netem 30: parent 1:3 limit 1000$'
		[ "$(grep -c "^node $k: netem: eth0: loss 0% on RoCE v2 (UDP port 4791) only; everything else untouched$" "$LOSSY/vm.boot.log")" = 1 ] ||
			fail "node $k: the harness did not say it put netem on: $(grep netem "$LOSSY/vm.boot.log")"
	done
	run cat "$LOSSY/node1/uc_1.netem"
	assert_output 'netem: eth0: loss 1% on RoCE v2 (UDP port 4791) only; everything else untouched'
	run cat "$LOSSY/node1/uc_100.netem"
	assert_output 'netem: eth0: loss 100% on RoCE v2'"'"'s UC packets (UDP port 4791, BTH opcode 0x20 to 0x3f) only; everything else untouched'
}

@test "lossy: UC sends again exactly the chunks its SACKs named, and every WRITE that crossed the wire arrived: the receiver's arrivals are the capture's WRITEs" {
	for c in uc_0 uc_0.1 uc_1 uc_5 uc_reorder; do
		chunks=$(chunks_of $c)
		again=$(again_of $c)
		# Each answer names the chunks missing; the next round sends them and only them.  A
		# round that stalled (its send queue full for a whole timer) asks before it has
		# posted them all: its answer names chunks never sent, too.
		named=$(sed -n 's/^SACK .* answered: [0-9]* of [0-9]* chunks in; \([0-9]*\) missing .*/\1/p' "$LOSSY/node1/$c.log" | awk '{ s += $1 } END { print s + 0 }')
		if grep -q '^round .*: nothing could be posted for ' "$LOSSY/node1/$c.log"; then
			[ "$again" -le "$named" ] || fail "$c: sent again $again chunks, the SACKs named $named"
		else
			[ "$again" = "$named" ] || fail "$c: sent again $again chunks, the SACKs named $named"
		fi
		# On the wire, by the immediates: every chunk crossed, and one crossed twice only as a
		# duplicate the receiver counted: nothing that had arrived was sent again.
		run awk -F'\t' -v n="$chunks" '
			function hex(s,  v, i) { v = 0; for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1; return v }
			NR > 1 && $3 == "198.18.0.1" && $6 == 43 { seen[hex($10)]++ }
			END { for (c = 0; c < n; c++) { if (!(c in seen)) { print "chunk " c " never crossed"; exit 1 } twice += seen[c] - 1 }
				print twice }' "$LOSSY/$c.tsv"
		assert_success
		rounds=$(rounds_of $c)
		[ "$(grep -c '^SACK .* answered: ' "$LOSSY/node1/$c.log")" = $((rounds - 1)) ] || fail "$c: $rounds rounds, not one answer fewer"
		# The receiver took a WRITE for each UC WRITE Only with Immediate node 1 put on the wire.
		arrivals=$(sed -n 's/^arrivals *: \([0-9]*\) WRITEs with immediate taken: 0 taken as lost by the test, \([0-9]*\) duplicates; .*/\1 \2/p' "$LOSSY/node2/$c.log")
		[ -n "$arrivals" ] || fail "$c: no arrivals line: $(cat "$LOSSY/node2/$c.log")"
		read -r took dups <<<"$arrivals"
		[ "$took" = "$(captured $c 1 43)" ] || fail "$c: the receiver took $took WRITEs, the wire carried $(captured $c 1 43)"
		[ "$took" = $((chunks + dups)) ] || fail "$c: $took arrivals for $chunks chunks and $dups duplicates"
		[ "$output" = "$dups" ] || fail "$c: $output chunks crossed twice, the receiver counted $dups duplicates"
		# What netem dropped of node 1's WRITEs is what was lost: posted, less arrived.
		lost=$((chunks + again - took))
		[ "$lost" -le "$(netem_of 1 $c dropped)" ] || fail "$c: $lost WRITEs lost, netem dropped $(netem_of 1 $c dropped)"
		[ "$lost" = $((again - dups)) ] || fail "$c: $lost lost, $again sent again, $dups duplicates"
	done
	# No loss, nothing again; reordering costs UC nothing either: order is no part of its rule.
	# (A round whose send queue stayed full for a whole timer asks early, and its answer's
	# holes are chunks not yet sent: more rounds, nothing again.)
	for c in uc_0 uc_reorder; do
		[ "$(again_of $c)" = 0 ] || fail "$c: sent again $(again_of $c), rounds $(rounds_of $c)"
	done
	# At 5% of about a thousand WRITEs some were lost, and sent again.
	[ "$(again_of uc_5)" -gt 0 ] || fail "uc_5: nothing sent again: $(cat "$LOSSY/node1/uc_5.counters")"
}

@test "lossy: RC's go-back-N: at 1% and 5% loss, and under reordering, the sender's rxe sends more packets than the data's, and more again than were lost, the receiver counts packets out of sequence, the sender NAKs and retries" {
	for c in rc_1 rc_5 rc_reorder; do
		chunks=$(chunks_of $c)
		writes=$(($(counter 1 $c sent_pkts) - $(captured $c 1) + $(captured $c 1 11)))
		[ "$writes" -gt "$chunks" ] || fail "$c: $writes WRITE packets sent for $chunks chunks"
		[ "$(counter 2 $c out_of_seq_request)" -gt 0 ] || fail "$c: no packet out of sequence at the receiver: $(cat "$LOSSY/node2/$c.counters")"
		[ "$(counter 1 $c completer_retry_err)" -gt 0 ] || fail "$c: the sender never retried: $(cat "$LOSSY/node1/$c.counters")"
		# The program itself sent nothing again: the transport did.
		[ "$(again_of $c)" = 0 ] && [ "$(rounds_of $c)" = 1 ] || fail "$c: the program resent over RC"
		# Go-back-N: more sent again than netem dropped on node 1's way out, the packets after
		# each gap that had arrived included (UC's selective repeat sends again what was lost).
		# Not the 5% run against the 1% run: how much one loss costs depends on where it falls.
		dropped=$(netem_of 1 $c dropped)
		[ "$((writes - chunks))" -gt "$dropped" ] ||
			fail "$c: $((writes - chunks)) WRITE packets sent beyond the data, no more than the $dropped netem dropped"
	done
}

@test "lossy: the capture shows a NAK (PSN sequence error) from the receiver, and the sender's run sent again from that PSN on" {
	# Each NAK of syndrome 0x60 (NAK, PSN sequence error) from node 2 names the PSN it
	# expects: node 1's last pass before it went from the PSN before that one to later ones
	# without it (netem dropped it on node 1's way out, before the capture).  WRITEs already
	# queued may still leave node 1 after the NAK; then the requester rewinds, and node 1
	# sends that PSN and the ones after it again, those that had crossed before included.
	# When retries overlap, a NAK may answer an earlier pass than the capture's last one, so
	# only some NAKs show the gap there; each that does must be followed by the PSN sent
	# again, and the line shows the longest such run.
	run awk -F'\t' '
		NR == 1 { next }
		$3 == "198.18.0.1" && $6 == 11 { k++; f[k] = $1; p[k] = $8; }
		$3 == "198.18.0.2" && $6 == 17 && $9 == 96 { naks++; nf[naks] = $1; np[naks] = $8; at[naks] = k }
		END {
			if (!naks) { print "no NAK with syndrome 0x60"; exit 1 }
			for (j = 1; j <= naks; j++) {
				psn = np[j]; prev_at = 0; gap = 0
				# The last time node 1 sent the PSN before this one, before the NAK, and no PSN after it.
				for (i = at[j]; i >= 1; i--) { if (p[i] == psn) break; if (p[i] == psn - 1) { prev_at = i; gap = 1; break } }
				if (!gap) continue
				gaps++
				for (i = at[j] + 1; i <= k && p[i] != psn; i++) ;
				if (i > k) { printf "node 1 never sent PSN %d after the NAK at frame %d\n", psn, nf[j]; exit 1 }
				queued = i - at[j] - 1
				for (n = 1; i + n <= k && p[i + n] == psn + n; n++) ;
				if (n > best) { best = n; bj = j; bq = queued; bprev = prev_at; bf = f[i] }
			}
			if (!gaps) { printf "%d NAKs, none for a PSN node 1 had skipped in its last pass before it\n", naks; exit 1 }
			# Of the longest run, the PSNs node 1 had put on the wire before the NAK.
			for (m = 0; m < best; m++) for (i = 1; i <= at[bj]; i++) if (p[i] == np[bj] + m) { before++; break }
			printf "%d NAKs, %d of them for a PSN node 1 had skipped in its last pass before it, each sent again after it; the longest run: NAK PSN sequence error (syndrome 0x60) for PSN %d at frame %d, after node 1 had sent PSN %d (frame %d) and later ones; %d WRITEs already queued left after the NAK; then from frame %d node 1 sent PSN %d to %d again, %d packets in a row, %d of them on the wire before the NAK\n", naks, gaps, np[bj], nf[bj], np[bj] - 1, f[bprev], bq, bf, np[bj], np[bj] + best - 1, best, before
		}' "$LOSSY/rc_5.tsv"
	assert_success
	echo "# rc_5: $output" >&3
	regex='^[1-9][0-9]* NAKs, [1-9][0-9]* of them for a PSN node 1 had skipped in its last pass before it, each sent again after it; the longest run: NAK PSN sequence error \(syndrome 0x60\) for PSN ([0-9]+) at frame [0-9]+, after node 1 had sent PSN [0-9]+ \(frame [0-9]+\) and later ones; [0-9]+ WRITEs already queued left after the NAK; then from frame [0-9]+ node 1 sent PSN ([0-9]+) to [0-9]+ again, [1-9][0-9]* packets in a row, ([0-9]+) of them on the wire before the NAK$'
	[[ $output =~ $regex ]] || fail "rc_5: $output"
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] || fail "the run did not start at the NAK's PSN: $output"
	# Go-back-N: the run sent again packets that had crossed already.
	[ "${BASH_REMATCH[3]}" -ge 1 ] || fail "nothing sent again had crossed before: $output"
}

# The UDP source port rxe gives a connected QP at RTR (rxe_verbs.c, rxe_modify_qp): rdma_get_udp_sport
# of the GRH's flow label, 0 here, and its two QP numbers (include/rdma/ib_verbs.h): the 20-bit fold of
# LOCAL x REMOTE, its top 6 bits XORed into its low 14, in 0xc000 to 0xffff.
udp_sport() { # LOCAL_QPN REMOTE_QPN
	local v=$(($1 * $2)) fl
	v=$((v ^ (v >> 20)))
	v=$((v ^ (v >> 40)))
	fl=$((v & 0xfffff))
	echo $((((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000))
}

@test "lossy: --paths 4 on one wire: each data QP's WRITEs carry a UDP source port of their own, rdma_get_udp_sport of its two QP numbers; 4 flows for ECMP to hash, not 4 paths" {
	for k in 1 2; do
		[ "$(status_of $k uc_paths4)" = 0 ] || fail "node $k, uc_paths4: exit status $(status_of $k uc_paths4): $(cat "$LOSSY/node$k/uc_paths4.log")"
		run cat "$LOSSY/node$k/uc_paths4.log"
		refute_output --partial 'error:'
		assert_line --regexp '^summary +: uc over 4 paths, 64 chunks of 1024 bytes: sent again 0 chunks \(0 bytes\), rounds [0-9]+, check right$'
		assert_line --regexp '^teardown +: every object released$'
	done
	# Node 1's QPs, from its log: the control QP's exchange first ("0"), then each path's, each
	# line "PATH LOCAL_QPN REMOTE_QPN".
	run awk '/^path +: [0-9]+ of [0-9]+: exchanging/ { k = $3 }
		/^local QP / { l = $5; sub(/,$/, "", l) }
		/^remote QP / { r = $5; sub(/,$/, "", r); print k + 0, l, r }' "$LOSSY/node1/uc_paths4.log"
	assert_success
	[ "${#lines[@]}" = 5 ] || fail "not the control QP and 4 paths in node 1's log: $output"
	read -r _ ctl_local ctl_remote <<<"${lines[0]}"
	ctl_port=$(udp_sport "$ctl_local" "$ctl_remote")
	# What node 1 put on the wire, by destination QP and UDP source port: "DESTQP PORT OPCODE PACKETS".
	flows=$(awk -F'\t' 'NR > 1 && $3 == "198.18.0.1" { n[$7 " " $5 " " $6]++ } END { for (f in n) print f, n[f] }' "$LOSSY/uc_paths4.tsv" | sort)
	declare -A seen
	writes=0
	for i in 1 2 3 4; do
		read -r path local remote <<<"${lines[i]}"
		[ "$path" = "$i" ] || fail "node 1's log: path $path where path $i was due: $output"
		want=$(udp_sport "$local" "$remote")
		# Every packet to this path's QP: UC WRITE Only with Immediate (43), all from one port.
		got=$(awk -v q="$remote" '$1 == q' <<<"$flows")
		[ -n "$got" ] || fail "path $i: no packet to QP $remote on the wire: $flows"
		[ "$(wc -l <<<"$got")" = 1 ] || fail "path $i: its packets to QP $remote from more than one port, or not all UC WRITEs: $got"
		read -r _ port opcode packets <<<"$got"
		[ "$opcode" = 43 ] || fail "path $i: opcode $opcode to QP $remote, not UC's WRITE Only with Immediate: $got"
		[ "$port" = "$want" ] || fail "path $i: QP $local to QP $remote from port $port, not rdma_get_udp_sport's $want"
		[ -z "${seen[$port]:-}" ] || fail "paths ${seen[$port]} and $i share UDP source port $port: the hash of their QP numbers collided"
		[ "$port" != "$ctl_port" ] || fail "path $i shares the control QP's UDP source port $port: the hash collided"
		seen[$port]=$i
		writes=$((writes + packets))
		echo "# uc_paths4: path $i: QP $local to QP $remote: $packets UC WRITEs, every one from UDP source port $port (rdma_get_udp_sport(0, $((local)), $((remote))))" >&3
	done
	[ "$writes" = 64 ] || fail "$writes UC WRITEs to the 4 paths' QPs on the wire, not the 64 chunks: $flows"
	# Nothing else left node 1 but the control QP's packets, from its own port.
	others=$(awk -v a="${lines[1]}" -v b="${lines[2]}" -v c="${lines[3]}" -v d="${lines[4]}" 'BEGIN { split(a " " b " " c " " d, w, " "); for (i = 3; i <= 12; i += 3) data[w[i]] = 1 }
		!($1 in data)' <<<"$flows")
	run awk -v q="$ctl_remote" -v p="$ctl_port" '$1 != q || $2 != p' <<<"$others"
	[ -z "$output" ] || fail "packets from node 1 neither to a path's QP nor the control QP's flow (QP $ctl_remote, port $ctl_port): $output"
	echo "# uc_paths4: the control QP $ctl_local to QP $ctl_remote from port $ctl_port: 5 flows on one wire (one bridge, no ECMP): 4 flows, not 4 paths" >&3
}

# Step 05's pipelined run and perftest's ib_write_bw (cases s05_* and bw_*): each one's client,
# node 2, sends its WRITEs to node 1 over RC.  "MESSAGES SIZE MTU" from node 2's own report.
client_run_of() { # CASE
	case $1 in
	s05_*)
		echo "$(sed -n 's/^results *: \([0-9]*\) x write of \([0-9]*\) bytes, .*/\1 \2/p' "$LOSSY/node2/$1.log")" \
			"$(sed -n 's/^ibv_modify_qp *: INIT -> RTR: path MTU \([0-9]*\) .*/\1/p' "$LOSSY/node2/$1.log")"
		;;
	bw_*)
		echo "$(awk '$1 ~ /^[0-9]+$/ && NF == 5 { print $2, $1 }' "$LOSSY/node2/$1.log")" \
			"$(sed -n 's/^ *Mtu *: \([0-9]*\)\[B\]$/\1/p' "$LOSSY/node2/$1.log")"
		;;
	esac
}

# The packets the data needs: each message in packets of the path MTU.
client_packets_of() { # CASE
	read -r messages size mtu <<<"$(client_run_of "$1")"
	echo $((messages * ((size + mtu - 1) / mtu)))
}

# The client's goodput, MB/s (10^6 bytes a second): step 05's bandwidth line, or perftest's BW
# average (MiB/s).
client_goodput_of() { # CASE
	case $1 in
	s05_*) sed -n 's/^bandwidth *: \([0-9.]*\) MB\/s, .*/\1/p' "$LOSSY/node2/$1.log" ;;
	bw_*) awk '$1 ~ /^[0-9]+$/ && NF == 5 { printf "%.2f\n", $4 * 1.048576 }' "$LOSSY/node2/$1.log" ;;
	esac
}

@test "lossy: step 05's pipelined WRITEs and ib_write_bw under the same loss: every run ends, its bytes checked; the sender's rxe sends the data's packets and every one netem dropped again, at 0% exactly the data's unless it went back (its ACK timer, or a NAK for packets the wire reordered), more at 1% and 5%; what crossed is node 1's capture" {
	for c in s05_0 s05_0.1 s05_1 s05_5 bw_0 bw_0.1 bw_1 bw_5; do
		for k in 1 2; do
			[ "$(status_of $k $c)" = 0 ] || fail "node $k, $c: exit status $(status_of $k $c): $(cat "$LOSSY/node$k/$c.log")"
		done
		if [[ $c == s05_* ]]; then
			run cat "$LOSSY/node2/$c.log"
			refute_output --partial 'error:'
			assert_line --regexp '^results +: 16 x write of 65536 bytes, up to 16 in flight$'
			assert_line --regexp '^completions +: [0-9]+, every one success'
			run cat "$LOSSY/node1/$c.log"
			refute_output --partial 'error:'
			assert_line --regexp '^data check +: the last of 16 writes left 65536 intact bytes$'
		else
			# perftest's result line: #bytes, #iterations, BW peak, BW average, MsgRate.
			run cat "$LOSSY/node2/$c.log"
			assert_line --regexp '^[[:space:]]*65536[[:space:]]+16[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]*$'
		fi
		[ -n "$(client_goodput_of $c)" ] || fail "$c: no goodput in node 2's report: $(cat "$LOSSY/node2/$c.log")"
		data=$(client_packets_of $c)
		[ "$data" = 1024 ] || fail "$c: the data needs $data packets, not 16 x 64 of 1024 bytes: $(client_run_of $c)"
		grep -qx '0 packets dropped by kernel' "$LOSSY/node1/$c.counters" || fail "$c: tcpdump dropped packets: $(cat "$LOSSY/node1/$c.counters")"
		sent=$(counter 2 $c sent_pkts)
		dropped=$(netem_of 2 $c dropped)
		# Node 2 sends WRITEs only (First, Middle, Last: opcodes 6 to 8), and what its netem passed
		# is what node 1's capture holds from it.
		run awk -F'\t' 'NR > 1 && $3 == "198.18.0.2" && ($6 < 6 || $6 > 8)' "$LOSSY/$c.tsv"
		[ -z "$output" ] || fail "$c: node 2 sent packets other than WRITEs: $output"
		[ "$(captured $c 2)" = $((sent - dropped)) ] || fail "$c: node 2's rxe sent $sent, its netem dropped $dropped, node 1 captured $(captured $c 2)"
		# Every packet of the data crossed, and every one netem dropped was sent again.
		[ "$sent" -ge $((data + dropped)) ] || fail "$c: $sent sent for $data packets of data, $dropped dropped"
		case $c in
		*_0)
			# Nothing lost: netem dropped nothing, and node 1 saw a gap in the PSNs only where its own
			# capture shows node 2's packets out of order on the wire (a .ci/run of d058065: step 05
			# at 0%, PSNs 512 to 514 arrived after 515 to 521; node 1 counted 3 out of sequence, NAKed,
			# and node 2 went back).  Then nothing is sent again but after such a NAK, or when rxe's
			# ACK timer (about 67 ms) fired while the receiver's ACK was late; completer_retry_err
			# counts both: under emulation on a busy host it can (a .ci/run of 350cb3e: step 05 at 0%,
			# one timer retry, 25 packets sent again).  Only that may add packets.
			gaps=$(counter 1 $c out_of_seq_request)
			[ "$gaps" = 0 ] || [ "$(gaps_in_capture $c 2)" -gt 0 ] ||
				fail "$c: at 0% node 1 counted $gaps packets out of sequence, and its capture shows node 2's in order: $(cat "$LOSSY/node1/$c.counters")"
			[ "$sent" = "$data" ] || [ "$(counter 2 $c completer_retry_err)" -gt 0 ] ||
				fail "$c: at 0% node 2's rxe sent $sent packets for $data, with no timer retry: $(cat "$LOSSY/node2/$c.counters")"
			;;
		*_1 | *_5)
			[ "$dropped" -gt 0 ] || fail "$c: netem on node 2 dropped nothing of $sent: $(cat "$LOSSY/node2/$c.counters")"
			[ "$sent" -gt "$data" ] || fail "$c: $sent packets sent for $data"
			[ "$(counter 1 $c out_of_seq_request)" -gt 0 ] || [ "$(counter 2 $c completer_retry_err)" -gt 0 ] ||
				fail "$c: packets lost, yet no gap at the receiver and no retry at the sender: $(cat "$LOSSY/node1/$c.counters" "$LOSSY/node2/$c.counters")"
			;;
		esac
	done
}

@test "lossy: RC at 100% loss ends with status 12 (retry exceeded) within its --qp-timeout's retries; UC at 100% finds every path silent in three timers; one error line each side" {
	# --qp-timeout 15: 4.096 us x 2^15, about 134 ms a try; stage 3's retry_cnt 7: 8 tries.
	run cat "$LOSSY/node1/rc_100.log"
	assert_line --regexp '^ibv_modify_qp +: RTR -> RTS: .*timeout 15 \(4.096 us \* 2\^15 = about 134 ms per try\), retry_cnt 6'
	assert_line --regexp '^error: completion of work request [0-9]+ failed: transport retry counter exceeded \(status 12, vendor error 0x[0-9a-f]+\)$'
	took=$(status_of 1 rc_100 3)
	awk -v t="$took" 'BEGIN { exit !(t >= 7 * 0.134 && t <= 8 * 0.134 + 15) }' || fail "rc_100: the sender took $took s"
	ends_together rc_100
	run cat "$LOSSY/node2/rc_100.log"
	assert_line --regexp '^error: round 1: the sender closed the side channel with 0 of [0-9]+ chunks in: it has stopped'
	run cat "$LOSSY/node1/uc_100.log"
	assert_line --regexp '^path cut +: round 3: path 0 silent for 3 answers in a row: '
	assert_line --regexp '^error: round 3: every path silent: for 3 answers in a row none of the WRITEs posted on the 1 data QP consumed a receive at the receiver \(0 of [0-9]+ chunks in\), while the asks and SACKs went through on the control QP: the data paths are cut$'
	run cat "$LOSSY/node2/uc_100.log"
	assert_line --regexp '^error: round [0-9]+: the sender closed the side channel with 0 of [0-9]+ chunks in: it has stopped'
	took=$(status_of 1 uc_100 3)
	awk -v t="$took" 'BEGIN { exit !(t <= 15) }' || fail "uc_100: the sender took $took s"
	ends_together uc_100
	# netem let the control QP's packets (RC) through and dropped every UC one.
	[ "$(captured uc_100 1 43)" = 0 ] || fail "uc_100: $(captured uc_100 1 43) UC WRITEs on the wire"
	[ "$(captured uc_100 1 4)" -ge 3 ] || fail "uc_100: not 3 asks on the wire"
}

@test "lossy: RC at 100% loss with retry_cnt 7 never ends on its own: rxe takes 7 as retry for ever; SIGTERM 8 s after connecting ends it, with no status 12" {
	run cat "$LOSSY/node1/rc_100_retry7.log"
	assert_line --regexp '^ibv_modify_qp +: RTR -> RTS: .*timeout 14 \(4.096 us \* 2\^14 = about 67 ms per try\), retry_cnt 7'
	assert_line --regexp '^error: stopped by SIGTERM: releasing what this program created, in reverse order$'
	refute_output --partial 'status 12'
	# It went on retrying all the while, and never gave up: more than the 8 tries retry_cnt 7 would give.
	[ "$(counter 1 rc_100_retry7 completer_retry_err)" -gt 8 ] || fail "rc_100_retry7: $(cat "$LOSSY/node1/rc_100_retry7.counters")"
	[ "$(counter 1 rc_100_retry7 retry_exceeded_err)" = 0 ] || fail "rc_100_retry7: $(cat "$LOSSY/node1/rc_100_retry7.counters")"
	run cat "$LOSSY/node2/rc_100_retry7.log"
	assert_line --regexp '^error: round 1: the sender closed the side channel with 0 of [0-9]+ chunks in: it has stopped'
	ends_together rc_100_retry7
	# With retry_cnt 6 it gave up once, with status 12.
	[ "$(counter 1 rc_100 retry_exceeded_err)" -ge 1 ] || fail "rc_100: $(cat "$LOSSY/node1/rc_100.counters")"
}

@test "lossy: the table and its plot: goodput and what was sent again, UC against RC, and step 05 and ib_write_bw over RC, at each loss, beside the model (UC a chunk a loss, RC a window of 128)" {
	{
		echo "case       goodput   WRITEs   beyond  model  again rounds seq_err retries  oo_seq    dups  netem"
		echo "           MB/s      sent     data           (UC)         (sender) (sender) (rcvr)  (rcvr)  dropped 1/2"
		for c in uc_0 rc_0 uc_0.1 rc_0.1 uc_1 rc_1 uc_5 rc_5 uc_reorder rc_reorder; do
			row $c
		done
		echo "step 05 (s05: -o write -s 64K -n 16 -D 16) and ib_write_bw (bw: -s 65536 -n 16), over RC; the sender is node 2"
		for c in s05_0 s05_0.1 s05_1 s05_5 bw_0 bw_0.1 bw_1 bw_5; do
			row_client $c
		done
	} >"$RDMA_STEPS_RESULTS/lossy/table.txt"
	sed 's/^/# /' "$RDMA_STEPS_RESULTS/lossy/table.txt" >&3
	[ "$(wc -l <"$RDMA_STEPS_RESULTS/lossy/table.txt")" = 21 ]
	run grep -cE '^[a-z0-9]+_[0-9a-z.]+ +[0-9.]+ +[0-9]+ +-?[0-9]+ +([0-9]+|-) ' "$RDMA_STEPS_RESULTS/lossy/table.txt"
	assert_output 18
	# The model's column: UC's p x 1024, RC's p x 1024 x 128, none under reordering.
	run awk '{ print $1, $5 }' "$RDMA_STEPS_RESULTS/lossy/table.txt"
	assert_line 'uc_5 51'
	assert_line 'rc_1 1311'
	assert_line 'bw_0.1 131'
	assert_line 's05_0 0'
	assert_line 'rc_reorder -'
	plot_of "$RDMA_STEPS_RESULTS/lossy/table.txt" >"$RDMA_STEPS_RESULTS/lossy/plot.txt"
	sed 's/^/# /' "$RDMA_STEPS_RESULTS/lossy/plot.txt" >&3
	# A title, a heading, and a line for each of the 18 rows.
	[ "$(wc -l <"$RDMA_STEPS_RESULTS/lossy/plot.txt")" = 20 ]
	run grep -cE '^[a-z0-9.%]* +(uc|rc|s05|bw) +#* +[0-9.]+ \| =* +[0-9]+ \| ~* +([0-9]+|-)$' "$RDMA_STEPS_RESULTS/lossy/plot.txt"
	assert_output 18
}

# What node K's program said of plane P at the end: the sender's "POSTED CONSUMED", the receiver's "TAKEN".
plane_of() { # K CASE P
	sed -n "s/^plane \{1,\}: $3 (rxe[0-9b]*): \([0-9]*\) WRITEs posted on its paths, \([0-9]*\) of them consumed a receive at the receiver.*/\1 \2/p; s/^plane \{1,\}: $3 (rxe[0-9b]*): \([0-9]*\) WRITEs with immediate taken on its paths$/\1/p" "$LOSSY/node$1/$2.log"
}

# What node K's netem on eth1 did over CASE (a cut case): "sent" or "dropped" packets.
netem1_of() { # K CASE sent|dropped
	sed -n "s/^netem: eth1 sent \([0-9]*\) packets, dropped \([0-9]*\)$/\1 \2/p" "$LOSSY/node$1/$2.counters" |
		awk -v w="$3" '{ print (w == "sent" ? $1 : $2) }'
}

# Both sides ended well, with every chunk in and checked, over 2 paths (one a plane), and released everything.
assert_planes_ran() { # CASE TYPE
	for k in 1 2; do
		[ "$(status_of $k "$1")" = 0 ] || fail "node $k, $1: exit status $(status_of $k "$1"): $(cat "$LOSSY/node$k/$1.log")"
		run cat "$LOSSY/node$k/$1.log"
		refute_output --partial 'error:'
		assert_line --regexp "^summary +: $2 over 2 paths, [0-9]+ chunks of 1024 bytes: sent again [0-9]+ chunks \([0-9]+ bytes\), rounds [0-9]+, check right$"
		assert_line --regexp '^teardown +: every object released$'
		# Each plane's QP on its own device: rxeK for plane 0, rxeKb for plane 1.
		assert_line --regexp "^planes +: 2: plane 0 is -d.s device rxe$k, with the control QP; "
		assert_line --regexp "^path +: 0: QP [0-9]+ on plane 0.s device rxe$k$"
		assert_line --regexp "^path +: 1: QP [0-9]+ on plane 1.s device rxe${k}b$"
		assert_line --regexp "^ibv_reg_mr +: plane 1: the same [0-9]+ bytes at 0x[0-9a-f]+ registered with rxe${k}b.s PD, "
	done
	[ "$(grep '^summary' "$LOSSY/node1/$1.log")" = "$(grep '^summary' "$LOSSY/node2/$1.log")" ] || fail "$1: the two summaries differ"
}

# The seconds from node 1's cut of plane 2 (CASE.cut) to the program's line that takes plane 1 as cut.
stall_of() { # CASE
	awk -v cut="$(cat "$LOSSY/node1/$1.cut")" '/^plane cut +: plane 1 / { match($0, /at [0-9]+\.[0-9]+ s on the clock/); t = substr($0, RSTART + 3, RLENGTH - 16); printf "%.3f\n", t - cut }' "$LOSSY/node1/$1.log"
}

@test "lossy: two planes: each plane's QP on its own device (the programs' lines, 'rdma resource show qp'), the chunks dealt over both (each plane's count, each device's sent_pkts), every byte right" {
	assert_planes_ran uc_planes uc
	read -r posted0 consumed0 <<<"$(plane_of 1 uc_planes 0)"
	read -r posted1 consumed1 <<<"$(plane_of 1 uc_planes 1)"
	chunks=$(chunks_of uc_planes)
	[ "$posted0" -gt 0 ] && [ "$posted1" -gt 0 ] || fail "a plane carried nothing: $(grep '^plane ' "$LOSSY/node1/uc_planes.log")"
	[ $((consumed0 + consumed1)) = "$chunks" ] && [ "$posted0" = "$consumed0" ] && [ "$posted1" = "$consumed1" ] ||
		fail "no loss, yet: $(grep '^plane ' "$LOSSY/node1/uc_planes.log")"
	# The receiver took on each plane what the sender posted there.
	[ "$(plane_of 2 uc_planes 0)" = "$consumed0" ] && [ "$(plane_of 2 uc_planes 1)" = "$consumed1" ] ||
		fail "the receiver: $(grep '^plane ' "$LOSSY/node2/uc_planes.log")"
	# rxe1b sent plane 1's UC WRITEs and nothing else (the control QP is on rxe1); rxe2b received them.
	[ "$(counter 1 uc_planes plane2_sent_pkts)" = "$posted1" ] || fail "rxe1b sent $(counter 1 uc_planes plane2_sent_pkts) packets, plane 1 posted $posted1"
	[ "$(counter 2 uc_planes plane2_rcvd_pkts)" = "$posted1" ] || fail "rxe2b received $(counter 2 uc_planes plane2_rcvd_pkts) packets, plane 1 posted $posted1"
	[ "$(counter 1 uc_planes sent_pkts)" -ge "$posted0" ] || fail "rxe1 sent $(counter 1 uc_planes sent_pkts) packets, plane 0 posted $posted0"
	# The kernel's view, read at the cut: each path's QP number on its own device.
	for c in cut_uc cut_rc; do
		qp0=$(sed -n 's/^path \{1,\}: 0: QP \([0-9]*\) on plane 0.s device rxe1$/\1/p' "$LOSSY/node1/$c.log")
		qp1=$(sed -n 's/^path \{1,\}: 1: QP \([0-9]*\) on plane 1.s device rxe1b$/\1/p' "$LOSSY/node1/$c.log")
		type=$(echo "${c#cut_}" | tr a-z A-Z)
		run cat "$LOSSY/node1/$c.qps"
		assert_line --regexp "^link rxe1/1 lqpn $qp0 rqpn [0-9]+ type $type .* comm 11_lossy *$"
		assert_line --regexp "^link rxe1b/1 lqpn $qp1 rqpn [0-9]+ type $type .* comm 11_lossy *$"
	done
}

@test "lossy: plane failover over RC: plane 2 cut mid-transfer, its QP ends with status 12 after --retry-cnt 6's tries of --qp-timeout 14, what it lost goes over plane 1, every byte right; the stall measured" {
	assert_planes_ran cut_rc rc
	run cat "$LOSSY/node1/cut_rc.log"
	assert_line --regexp '^ibv_modify_qp +: RTR -> RTS: .*timeout 14 \(4.096 us \* 2\^14 = about 67 ms per try\), retry_cnt 6'
	assert_line --regexp '^path cut +: round 1: a WRITE on path 1 completed with transport retry counter exceeded \(status 12, vendor error 0x[0-9a-f]+\), its last ACK [0-9]+ ms ago: '
	assert_line --regexp '^plane cut +: plane 1 \(rxe1b\): every path on it cut, [0-9]+ ms after its last sign of life '
	assert_line --regexp '^SACK +: round 1 asked once a path failed and answered: [0-9]+ of [0-9]+ chunks in; [1-9][0-9]* missing '
	assert_line --regexp '^round +: 2: [0-9]+ WRITEs posted over 2 RC paths, 1 of them cut, in '
	refute_line --regexp '^path cut +: .*path 0'
	# rxe's view: plane 2's device gave up once, plane 1's never.
	[ "$(counter 1 cut_rc plane2_retry_exceeded_err)" -ge 1 ] && [ "$(counter 1 cut_rc retry_exceeded_err)" = 0 ] ||
		fail "retry_exceeded_err: $(grep retry_exceeded "$LOSSY/node1/cut_rc.counters")"
	[ "$(netem1_of 1 cut_rc dropped)" -gt 0 ] || fail "netem on node 1's eth1 dropped nothing: $(cat "$LOSSY/node1/cut_rc.counters")"
	# Every chunk consumed a receive once; what plane 2 posted and never delivered is what was sent again.
	read -r posted0 consumed0 <<<"$(plane_of 1 cut_rc 0)"
	read -r posted1 consumed1 <<<"$(plane_of 1 cut_rc 1)"
	[ $((consumed0 + consumed1)) = "$(chunks_of cut_rc)" ] || fail "$(grep '^plane ' "$LOSSY/node1/cut_rc.log")"
	[ "$(again_of cut_rc)" = $((posted1 - consumed1)) ] && [ "$(again_of cut_rc)" -gt 0 ] ||
		fail "sent again $(again_of cut_rc), plane 2 lost $((posted1 - consumed1))"
	# The stall: from the cut to status 12, about 7 tries of 67 ms.
	stall=$(stall_of cut_rc)
	echo "# cut_rc: plane 2 cut at $(cat "$LOSSY/node1/cut_rc.cut") s; $(grep '^path cut' "$LOSSY/node1/cut_rc.log" | cut -c 23-130)...; taken as cut $stall s after the cut; $(again_of cut_rc) chunks sent again over plane 1; $(grep '^goodput' "$LOSSY/node1/cut_rc.log" | cut -c 23-)" >&3
	awk -v s="$stall" -v t="$TIME_SCALE" 'BEGIN { exit !(s >= 6 * 0.067 && s <= 8 * 0.067 + 5 * t) }' || fail "cut_rc: the stall was $stall s"
}

@test "lossy: plane failover over UC: plane 2 cut mid-transfer, the sender's answers find its path silent three times and take it as cut, no status 12; exactly what netem dropped is sent again, over plane 1; every byte right; the stall measured" {
	assert_planes_ran cut_uc uc
	run cat "$LOSSY/node1/cut_uc.log"
	assert_line --regexp '^path cut +: round [0-9]+: path 1 silent for 3 answers in a row: '
	assert_line --regexp '^plane cut +: plane 1 \(rxe1b\): every path on it cut, [0-9]+ ms after its last sign of life '
	refute_line --regexp '^path cut +: .*path 0'
	refute_output --partial 'status 12'
	dropped=$(netem1_of 1 cut_uc dropped)
	[ "$dropped" -gt 0 ] || fail "netem on node 1's eth1 dropped nothing: $(cat "$LOSSY/node1/cut_uc.counters")"
	# A receive consumed is an arrival, a duplicate (a WRITE the timer took for lost too early) included.
	dups=$(sed -n 's/^arrivals *: [0-9]* WRITEs with immediate taken: 0 taken as lost by the test, \([0-9]*\) duplicates; .*/\1/p' "$LOSSY/node2/cut_uc.log")
	[ -n "$dups" ] || fail "no arrivals line: $(cat "$LOSSY/node2/cut_uc.log")"
	read -r posted0 consumed0 <<<"$(plane_of 1 cut_uc 0)"
	read -r posted1 consumed1 <<<"$(plane_of 1 cut_uc 1)"
	[ $((consumed0 + consumed1)) = $(($(chunks_of cut_uc) + dups)) ] && [ "$posted0" = "$consumed0" ] ||
		fail "$dups duplicates; $(grep '^plane ' "$LOSSY/node1/cut_uc.log")"
	[ "$(again_of cut_uc)" = $((dropped + dups)) ] && [ $((posted1 - consumed1)) = "$dropped" ] ||
		fail "netem dropped $dropped, sent again $(again_of cut_uc) ($dups duplicates), plane 2 lost $((posted1 - consumed1))"
	[ "$(counter 1 cut_uc plane2_sent_pkts)" = "$posted1" ] || fail "rxe1b sent $(counter 1 cut_uc plane2_sent_pkts), plane 1 posted $posted1"
	stall=$(stall_of cut_uc)
	echo "# cut_uc: plane 2 cut at $(cat "$LOSSY/node1/cut_uc.cut") s; $(grep '^plane cut' "$LOSSY/node1/cut_uc.log" | cut -c 23-110)...; taken as cut $stall s after the cut; $(again_of cut_uc) chunks sent again over plane 1; $(grep '^goodput' "$LOSSY/node1/cut_uc.log" | cut -c 23-)" >&3
	awk -v s="$stall" -v t="$TIME_SCALE" 'BEGIN { exit !(s > 0 && s <= 30 * t) }' || fail "cut_uc: the stall was $stall s"
}

@test "lossy: planes the two sides do not agree on are refused in one line each side: a second plane on one side only, and the planes given in another order (the peer's plane 0 on this side's plane 1's network)" {
	for k in 1 2; do
		for c in planes_differ planes_swapped; do
			[ "$(status_of $k $c)" = 1 ] || fail "node $k, $c: exit status $(status_of $k $c), not 1: $(cat "$LOSSY/node$k/$c.log")"
			[ "$(grep -c '^error: ' "$LOSSY/node$k/$c.log")" = 1 ] || fail "node $k, $c: not one error line: $(cat "$LOSSY/node$k/$c.log")"
			grep -qE '^teardown +: every object released$' "$LOSSY/node$k/$c.log" || fail "node $k, $c: objects left: $(cat "$LOSSY/node$k/$c.log")"
			grep -q '^ibv_post_send' "$LOSSY/node$k/$c.log" && fail "node $k, $c: a WRITE was posted"
		done
	done
	run cat "$LOSSY/node1/planes_differ.log"
	assert_line 'error: peer: -s 1048576 --qp-type uc --paths 1; here: path 1 of 2, plane 0 of 2: give both sides the same options'
	run cat "$LOSSY/node2/planes_differ.log"
	assert_line 'error: peer: path 1 of 2, plane 0 of 2; here: -s 1048576 --qp-type uc --paths 1: give both sides the same options'
	run cat "$LOSSY/node1/planes_swapped.log"
	assert_line 'error: path 0: the peer'"'"'s plane 0 is at 198.18.1.2, not on the network of this side'"'"'s plane 0 (rxe1, 198.18.0.1/24 on eth0): give both sides their planes in the same order (-d, then each --plane)'
	run cat "$LOSSY/node2/planes_swapped.log"
	assert_line 'error: path 0: the peer'"'"'s plane 0 is at 198.18.0.1, not on the network of this side'"'"'s plane 0 (rxe2b, 198.18.1.2/24 on eth1): give both sides their planes in the same order (-d, then each --plane)'
}
