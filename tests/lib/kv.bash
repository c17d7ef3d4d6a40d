# kv.bash: what step 08's tests check of a transfer: the block tables printed, and a decoder's cache moved whole ('load kv').

# The pool blocks of request R on the side whose output is selected, one per line.
table_of() { # R
	sed -nE "s/^block table +: request $1: [0-9]+ blocks, [0-9]+ next to the one before in a layer; pool blocks ([0-9 ]+)\$/\\1/p" <<<"$output" | tr ' ' '\n'
}

# Checks the decoder's lines for REQUESTS requests of BLOCKS blocks over QPS QPs: every byte right, every QP used.
assert_moved() { # REQUESTS BLOCKS QPS
	local requests=$1 blocks=$2 qps=$3 r sum k
	local -a per_qp
	use_output_of cli
	assert_line --regexp "^check +: right: $requests requests, every byte of every block at this side's own block addresses is the prefiller's"
	for ((r = 0; r < requests; r++)); do
		assert_line --regexp "^counting +: request $r handed over at $blocks of $blocks blocks"
	done
	# Every QP carried a share, and the shares add up to the request.
	read -ra per_qp < <(sed -nE 's/^bytes per QP +: ([0-9 ]+)$/\1/p' <<<"$output" | head -n 1)
	[ "${#per_qp[@]}" -eq "$qps" ] || fail "expected $qps QPs' bytes: ${per_qp[*]}"
	sum=0
	for k in "${per_qp[@]}"; do
		[ "$k" -gt 0 ] || fail "a QP carried nothing: ${per_qp[*]}"
		sum=$((sum + k))
	done
	request_bytes=$(sed -nE 's/^request +: 0: [0-9]+ blocks in [0-9]+ WRs .* ([0-9]+) bytes in .*/\1/p' <<<"$output")
	[ "$sum" -eq "$request_bytes" ] || fail "the QPs' bytes add up to $sum, not $request_bytes"
	# The device saw the packets, and no receive was ever missing: no RNR NAK either way.  rxe's
	# hw_counters (sent_pkts, rcvd_pkts, send_rnr_err, rcvd_rnr_err): a hardware NIC names its own.
	if on_rxe; then
		assert_line --regexp '^device counters +: rxe[0-9]*: sent_pkts \+[1-9][0-9]*, rcvd_pkts \+[1-9][0-9]* while the requests moved \(every process on this port adds to them\)$'
		assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: (no WR of ours consumes a receive \(the decoder READs\)|every WRITE with immediate found its receive posted)$'
	fi
}

# Checks the selected side's output: one error line, matching REGEX, and a teardown that released everything.
# A mismatch names the error lines first, so that a failure's first lines (what CI
# keeps) say what this side said instead; the whole output follows.
assert_one_error() { # REGEX [WHAT]
	local errors count
	errors=$(grep '^error: ' <<<"$output")
	count=$(grep -c '^error: ' <<<"$output")
	[ "$count" -eq 1 ] || fail "${2:+$2: }$count error lines, not one: ${errors:-none}
the whole output: $output"
	[[ $errors =~ $1 ]] || fail "${2:+$2: }its error line does not match $1: $errors
the whole output: $output"
	assert_line --regexp '^teardown +: every object released$'
}
