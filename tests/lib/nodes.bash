# nodes.bash: reading what the nodes of make test-nodes and make test-nodes8 left (each rank's log, status.tsv, node 1's decoded capture); loaded by tests/slow/nodes.bats and nodes8.bats, with NODES naming the harness's output folder.

# Node K's exit status of CASE, from its status.tsv ("-" if it did not run it).
status_of() { # K CASE
	awk -F'\t' -v c="$2" '$1 == c { s = $2 } END { print (s == "" ? "-" : s) }' "$NODES/node$1/status.tsv"
}

# The value after "result crc32 : " in FILE, one line per transport (or process) that
# printed one; torchrun's --tee puts "[defaultK]:" before each line.
crcs_in() { sed -n 's/^\(\[default[0-9]*\]:\)\{0,1\}result crc32 *: \(0x[0-9a-f]*\):.*/\2/p' "$1"; }

# Per ordered pair of nodes in CASE's capture, "SRC DST PAYLOAD FRAMES RETRANSMITTED":
# the bytes of data that RDMA WRITEs carried (the UDP length less the UDP header (8),
# BTH (12), ICRC (4), RETH (16) on WRITE First and Only (6, 10, 11), ImmDt (4) on
# Last and Only with Immediate (9, 11)), the whole frames' bytes, and the packets
# sent again (a source, destination QP, PSN and opcode seen before), left out of both.
write_bytes_of() { # CASE
	awk -F'\t' 'NR > 1 && $6 >= 6 && $6 <= 11 {
		pair = $2 " " $3
		if (seen[pair, $7, $8, $6]++) { again[pair]++; next }
		p = $4 - 8 - 12 - 4
		if ($6 == 6 || $6 == 10 || $6 == 11) p -= 16
		if ($6 == 9 || $6 == 11) p -= 4
		data[pair] += p; frames[pair] += $5
	}
	END { for (pair in data) print pair, data[pair], frames[pair], again[pair] + 0 }' "$NODES/$1.tsv" | sort
}

# Rank K's log of CASE: rank K runs on node K + 1.
moe_log() { # K CASE
	echo "$NODES/node$(($1 + 1))/$2.log"
}

# Step 09's layout as every rank of CASE printed it, checked against itself: each rank's
# "layout in" (its column of the counts) against the others' "layout out" (their rows),
# each row's "at its" offsets against the prefix sums of the other rows, and each
# ibv_post_send's length and offset against them: rank A's row at COUNTS + A x 8N; A's
# records for B at RECV + (column B's sum over the ranks before A) x REC; B's results of
# them back at CIN + (row A's sum over the ranks before B) x CREC.  COUNTS, RECV, REC,
# CIN and CREC are read from the first post that shows each, never assumed, and must
# then hold for every post.  Prints "bad ..." for each disagreement, then "posts P".
moe_layout_check() { # CASE N
	local k logs=()
	for ((k = 0; k < $2; k++)); do logs+=("$(moe_log "$k" "$1")"); done
	awk -v n="$2" '
		function bad(what) { print "bad: " what }
		# One unknown of the layout: set by its first use, the same at every later one.
		function solve(name, v, where) { if (!(name in known)) known[name] = v; else if (known[name] != v) bad(name " is " known[name] " by the first post, " v " by " where) }
		BEGIN { r = -1 }
		FNR == 1 { r++ }
		/^layout out +: records / || /^layout in +: records / {
			s = $0; out = $2 == "out"
			sub(/^layout (in|out) +: records /, "", s); sub(/ \(.*$/, "", s)
			m = split(s, part, ", ")
			if (m != n) bad("rank " r ": " m " entries on its layout " $2 " line, not " n)
			for (i = 1; i <= m; i++) {
				split(part[i], w, " ")	# "C to D at its Y", or "C from S at X"
				if (out) { cnt[r, w[3]] = w[1]; at[r, w[3]] = w[6] } else { incnt[r, w[3]] = w[1]; inat[r, w[3]] = w[5] }
			}
		}
		/^ibv_post_send +: [a-z]+ to rank [0-9]+: [0-9]+ WRITEs? of [0-9]+ B in all at its offset [0-9]+,/ {
			peer = $6; sub(/:$/, "", peer); off = $17; sub(/,$/, "", off)
			if ((r, $3, peer) in len) bad("rank " r ": two " $3 " posts to rank " peer)
			len[r, $3, peer] = $10; at_off[r, $3, peer] = off; posts++
		}
		END {
			for (a = 0; a < n; a++) for (b = 0; b < n; b++) {
				if (!((a, b) in cnt) || !((b, a) in incnt)) { bad("no layout line for rank " a " to rank " b); continue }
				if (incnt[b, a] != cnt[a, b] || inat[b, a] != at[a, b])
					bad("rank " b " has " incnt[b, a] " records from rank " a " at " inat[b, a] ", rank " a " says " cnt[a, b] " at its " at[a, b])
				sum = 0
				for (s = 0; s < a; s++) sum += cnt[s, b]
				if (at[a, b] != sum) bad("rank " a "\047s records land at " at[a, b] " in rank " b ", not at the sum of its column before it, " sum)
			}
			for (a = 0; a < n; a++) for (b = 0; b < n; b++) {
				if (a == b) continue
				if (!((a, "layout", b) in len) || !((a, "dispatch", b) in len) || !((b, "combine", a) in len)) {
					bad("rank " a " and rank " b ": a post missing"); continue
				}
				if (len[a, "layout", b] != 8 * n) bad("rank " a "\047s row to rank " b " is " len[a, "layout", b] " B, not 8 x " n)
				solve("COUNTS", at_off[a, "layout", b] - 8 * n * a, "rank " a "\047s layout post to rank " b)
				if (cnt[a, b] > 0) {
					solve("REC", len[a, "dispatch", b] / cnt[a, b], "rank " a "\047s dispatch post to rank " b)
					solve("CREC", len[b, "combine", a] / cnt[a, b], "rank " b "\047s combine post to rank " a)
				} else if (len[a, "dispatch", b] != 0 || len[b, "combine", a] != 0) {
					bad("rank " a " sends rank " b " no record, yet " len[a, "dispatch", b] " B go and " len[b, "combine", a] " B come back")
				}
			}
			for (a = 0; a < n; a++) for (b = 0; b < n; b++) {
				if (a == b || !((a, "dispatch", b) in len) || !((b, "combine", a) in len)) continue
				if (len[a, "dispatch", b] != cnt[a, b] * known["REC"]) bad("rank " a " dispatches " len[a, "dispatch", b] " B to rank " b ", not " cnt[a, b] " records of " known["REC"])
				if (len[b, "combine", a] != cnt[a, b] * known["CREC"]) bad("rank " b " combines " len[b, "combine", a] " B to rank " a ", not " cnt[a, b] " results of " known["CREC"])
				solve("RECV", at_off[a, "dispatch", b] - at[a, b] * known["REC"], "rank " a "\047s dispatch post to rank " b)
				sum = 0
				for (d = 0; d < b; d++) sum += cnt[a, d]
				solve("CIN", at_off[b, "combine", a] - sum * known["CREC"], "rank " b "\047s combine post to rank " a)
			}
			print "posts " posts + 0
		}' "${logs[@]}"
}

# The plan of CASE's capture, from what its N ranks printed, one line per ordered pair
# of ranks A to B: "pair SRC DST QPN PSN BASE RKEY BELOW", where SRC and DST are their
# nodes' addresses, QPN B's QP for A (A printed it), PSN A's first (B printed it), BASE
# B's buffer (B registered it, and A was told the same), RKEY B's rkey, BELOW the lowest
# offset any WRITE to B lands at; then a line per phase, "phase SRC DST PHASE WRITES
# BYTES OFFSET", from A's ibv_post_send.  PSN and BASE in decimal.  "bad ..." for a
# value missing, or told otherwise than registered.
moe_plan() { # CASE N
	local a b la lb qpn psn base told rkey own below ph w
	for ((b = 0; b < $2; b++)); do
		lb=$(moe_log "$b" "$1")
		base=$(field_of "$lb" '^ibv_reg_mr' addr)
		own=$(sed -n 's/^rkey  *: \(0x[0-9a-f]*\) .*/\1/p' "$lb")
		below=$(for ((a = 0; a < $2; a++)); do
			sed -n "s/^ibv_post_send  *: [a-z]* to rank $b: [0-9]* WRITEs\\{0,1\\} of [0-9]* B in all at its offset \\([0-9]*\\),.*/\\1/p" "$(moe_log "$a" "$1")"
		done | sort -n | head -n 1)
		[ -n "$base" ] && [ -n "$own" ] && [ -n "$below" ] || echo "bad: rank $b: buffer '$base', rkey '$own', lowest offset '$below'"
		for ((a = 0; a < $2; a++)); do
			[ "$a" != "$b" ] || continue
			la=$(moe_log "$a" "$1")
			qpn=$(field_of "$la" "^rank $b's QP" QPN)
			psn=$(field_of "$lb" "^rank $a's QP" PSN)
			told=$(field_of "$la" "^rank $b's buffer" addr)
			rkey=$(field_of "$la" "^rank $b's buffer" rkey)
			[ -n "$qpn" ] && [ -n "$psn" ] || echo "bad: rank $a printed no QPN for rank $b ('$qpn'), or rank $b no PSN for rank $a ('$psn')"
			[ "$told" = "$base" ] && [ "$rkey" = "$own" ] ||
				echo "bad: rank $a was told rank $b's buffer is at '$told', rkey '$rkey'; rank $b registered it at '$base', rkey '$own'"
			echo "pair 198.18.0.$((a + 1)) 198.18.0.$((b + 1)) $qpn $((psn)) $((base)) $rkey $below"
			for ph in layout dispatch combine; do
				w=$(sed -n "s/^ibv_post_send  *: $ph to rank $b: \\([0-9]*\\) WRITEs\\{0,1\\} of \\([0-9]*\\) B in all at its offset \\([0-9]*\\),.*/\\1 \\2 \\3/p" "$la")
				[ -n "$w" ] || echo "bad: rank $a printed no $ph post to rank $b"
				echo "phase 198.18.0.$((a + 1)) 198.18.0.$((b + 1)) $ph $w"
			done
		done
	done
}

# CASE's capture against PLAN (moe_plan's lines).  Each packet from node A to node B
# must go to B's QP for A, A's requests starting at A's PSN; retransmissions (a source,
# destination, opcode and PSN seen before) are counted and left out: step 09 keeps stage
# 3's ACK timeout (about 67 ms a try), and one run sent 107 and 108 packets again on two
# of the 12 pairs (nodes 1 and 4, both ways), none on the others.  Per ordered pair,
# the requests in order must be, phase by phase, the WRITEs that phase's post named,
# the first at B's buffer + the post's offset and each next where the one before ended,
# each carrying the bytes of its DMA length, with B's rkey, as many and as long in all
# as the post said; then one FETCH_ADD +1, with B's rkey, on an 8-byte word of B's
# buffer below every WRITE's landing place, each phase's its own.  Prints a line per pair, "pair SRC DST
# WRITES BYTES OFFSETS SIGNALS AGAIN", then "into DST FETCH_ADDS" per node, "naks RNR
# OTHER", and "bad ..." for every packet or message off the plan.
moe_capture_check() { # CASE PLAN
	awk -F'\t' '
		function hex(s,   i, v) { s = tolower(s); sub(/^0x/, "", s); v = 0
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v }
		function bad(what) { print "bad: " what }
		FNR == NR { split($0, f, " ")
			p = f[2] " " f[3]
			if (f[1] == "pair") { qpn[p] = hex(f[4]); psn0[p] = f[5]; base[p] = f[6]; rkey[p] = hex(f[7]); below[p] = f[8]; order[++pairs] = p }
			else { k = ++phases[p]; phname[p, k] = f[4]; pw[p, k] = f[5]; pl[p, k] = f[6]; po[p, k] = f[7] }
			next }
		FNR == 1 { next }
		{
			p = $2 " " $3; op = $6 + 0
			if (!(p in qpn)) { bad("frame " $1 ": from " $2 " to " $3 ", no pair of the mesh"); next }
			if (hex($7) != qpn[p]) { bad("frame " $1 ": from " $2 " to " $3 " to QP " $7 ", not " sprintf("0x%06x", qpn[p])); next }
			if (seen[p, op, $8]++) { again[p]++; next }
			if (op == 17) { s = $13 + 0; if (s >= 32 && s < 64) rnr++; else if (s >= 96) nak++; next }
			if (op == 18) next
			if (!started[p]++ && $8 + 0 != psn0[p] + 0) bad(p ": the first request has PSN " $8 ", not " psn0[p])
			data = $4 - 8 - 12 - 4
			if (op == 6 || op == 10 || op == 11) data -= 16
			if (op == 9 || op == 11) data -= 4
			if (op == 6 || op == 10 || op == 11) {
				m = ++msgs[p]; kind[p, m] = "WRITE"; va[p, m] = hex($9); rk[p, m] = hex($10); dmalen[p, m] = $11 + 0; carried[p, m] = data
			} else if (op >= 7 && op <= 9) {
				if (kind[p, msgs[p]] != "WRITE") bad("frame " $1 ": a WRITE continued, none begun")
				carried[p, msgs[p]] += data
			} else if (op == 20) {
				m = ++msgs[p]; kind[p, m] = "FETCH_ADD"; va[p, m] = hex($9); rk[p, m] = hex($10); add[p, m] = $12
				fadds[$3]++
			} else bad("frame " $1 ": opcode " op " from " $2 " to " $3)
		}
		END {
			for (i = 1; i <= pairs; i++) {
				p = order[i]; m = 0; writes = 0; bytes = 0; offs = ""; sigs = ""
				for (k = 1; k <= phases[p]; k++) {
					want = base[p] + po[p, k]; total = 0
					for (w = 1; w <= pw[p, k]; w++) {
						if (kind[p, ++m] != "WRITE") { bad(p " " phname[p, k] ": message " m " is a " kind[p, m] ", not WRITE " w " of " pw[p, k]); continue }
						if (va[p, m] != want) bad(p " " phname[p, k] ": WRITE " w " lands at buffer + " sprintf("%.0f", va[p, m] - base[p]) ", not + " sprintf("%.0f", want - base[p]))
						if (rk[p, m] != rkey[p]) bad(p " " phname[p, k] ": WRITE " w " with rkey " sprintf("0x%x", rk[p, m]))
						if (carried[p, m] != dmalen[p, m]) bad(p " " phname[p, k] ": WRITE " w " carried " carried[p, m] " B, its DMA length " dmalen[p, m])
						want = va[p, m] + dmalen[p, m]; total += dmalen[p, m]
					}
					if (total != pl[p, k]) bad(p " " phname[p, k] ": " total " B written, the post said " pl[p, k])
					writes += pw[p, k]; bytes += total; offs = offs (k > 1 ? "," : "") po[p, k]
					if (kind[p, ++m] != "FETCH_ADD") { bad(p " " phname[p, k] ": message " m " is a " kind[p, m] ", not its FETCH_ADD"); continue }
					sig = va[p, m] - base[p]
					if (sig < 0 || sig >= below[p] || sig % 8) bad(p " " phname[p, k] ": FETCH_ADD on buffer + " sprintf("%.0f", sig) ", not a word below + " below[p])
					if (rk[p, m] != rkey[p] || add[p, m] != 1) bad(p " " phname[p, k] ": FETCH_ADD +" add[p, m] " with rkey " sprintf("0x%x", rk[p, m]))
					if (word[p, sig]++) bad(p " " phname[p, k] ": FETCH_ADD on the word of an earlier phase, + " sprintf("%.0f", sig))
					sigs = sigs (k > 1 ? "," : "") sprintf("%.0f", sig)
				}
				if (msgs[p] != m) bad(p ": " msgs[p] + 0 " messages, the layout accounts for " m)
				print "pair", p, writes, bytes, offs, sigs, again[p] + 0
			}
			for (i = 1; i <= pairs; i++) { split(order[i], ends, " "); if (!(ends[2] in done)) { done[ends[2]]; print "into", ends[2], fadds[ends[2]] + 0 } }
			print "naks", rnr + 0, nak + 0
		}' "$2" "$NODES/$1.tsv"
}

# Fails unless CASE's decoded capture (N nodes) holds RDMA WRITE (opcodes 6 to 11) only
# from each node to the next, credits (5, SEND Only with Immediate) only back to the one
# before, ACKs (17) only between neighbours, and no other opcode.
assert_ring_schedule() { # N CASE
	run awk -F'\t' -v n="$1" 'NR > 1 {
		split($2, s, "."); split($3, d, ".")
		next_of = s[4] % n + 1; prev_of = (s[4] + n - 2) % n + 1
		if ($6 >= 6 && $6 <= 11 && d[4] != next_of) print "WRITE", $2, $3
		else if ($6 == 5 && d[4] != prev_of) print "credit", $2, $3
		else if ($6 == 17 && d[4] != next_of && d[4] != prev_of) print "ACK", $2, $3
		else if ($6 != 17 && $6 != 5 && ($6 < 6 || $6 > 11)) print "opcode " $6, $2, $3
	}' "$NODES/$2.tsv"
	[ -z "$output" ] || fail "$2: packets off the ring's schedule: $(sort <<<"$output" | uniq -c)"
}
