#!/usr/bin/env bats
# 09_moe.bats: step 09's MoE dispatch and combine: 3 ranks on one rxe, signalled by FETCH_ADD and by WRITE with immediate, and over TCP beside it, every token checked at home, the signals counted, all freed; an option refused.

bats_require_minimum_version 1.5.0

setup() {
	load lib/test_helper
	load lib/ring
}

@test "09_moe: 3 ranks dispatch 32 tokens each to their top-4 of 12 experts and combine them back: the layout, one post per peer, N - 1 signals per phase, each on its sender's own word, every token right, all freed" {
	record_baseline
	# Devices that do atomics as rxe does (IBV_ATOMIC_HCA), named by the test aid: FETCH_ADD runs.
	RDMA_STEPS_CAPS=atomic_cap=hca RING_STEP=09_moe run_ring 3 -t 10 --tokens 32 --hidden 256 --experts 4 --topk 4 --seed 7
	assert_ring_success
	use_output_of r0
	assert_line '#       size         count      type     phase       time   algbw   busbw #wrong'
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +dispatch +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +combine +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp '^rendezvous +: rank 0 handed on 6 QPs; the 2 made for us came back$'
	for k in 0 1 2; do
		use_output_of "r$k"
		assert_line --regexp "^launcher +: none: rank $k of 3, from --rank and --world-size$"
		assert_line --regexp '^QPs +: 2 here, 6 in the job: N x \(N - 1\) for N = 3$'
		assert_line --regexp '^layout in +: records [0-9]+ from 0 at 0, [0-9]+ from 1 at [0-9]+, [0-9]+ from 2 at [0-9]+ '
		for phase in layout dispatch combine; do
			assert_line "signal              : our 2 $phase words (one per sender) each read 1: every peer's data is here"
		done
		assert_line "signal kind         : fadd (the default): each chain to a peer ends with a FETCH_ADD +1 on the peer's word of the phase for the sender (a word per sender); no receive is posted, the peer polls its N - 1 words"
		assert_line --regexp "^ibv_post_send +: dispatch to rank [0-2]: [0-9]+ WRITEs? of [0-9]+ B in all at its offset [0-9]+, unsignalled, then FETCH_ADD \\+1 on its dispatch word for rank $k, signalled: one post\$"
		# Our word at each peer is ours alone: one exchange of a phase finds it at 0.
		for p in 0 1 2; do
			[ "$p" = "$k" ] || assert_line "completion          : rank $p: FETCH_ADD done, the old value of our word there was 0"
		done
		assert_line --regexp '^posts +: dispatch: 2 ibv_post_send calls \(one per peer; on rxe each is one write\(\) system call\), [1-9][0-9]* WRITEs and 2 FETCH_ADDs, [1-9][0-9]* B$'
		assert_line "signals             : 2 FETCH_ADDs came in each of our 3 exchanges (layout, dispatch, combine): 6 words, one per sender and phase, each read 1; we sent 6"
		# rxe's doorbell is a write(); a hardware NIC's is a store to a mapped page: no system call
		if on_rxe; then
			assert_line --regexp "^system calls +: dispatch: 2 write\\(\\) by its 2 ibv_post_send calls \\(syscw of /proc/self/io, read around each post: rxe.s doorbell\\), none by ibv_poll_cq; [0-9]+ $(wait_call 3)\\(\\) in its waits "
		fi
		assert_waits_line 3
		# rxe's hw_counters names (sent_pkts, send_rnr_err...): a hardware NIC has others, and the line says not readable
		if on_rxe; then
			assert_line --regexp '^device counters +: rxe[0-9]*: sent_pkts \+[1-9][0-9]*, rcvd_pkts \+[1-9][0-9]* over the three phases'
			assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: no WR of ours consumes a receive$'
		fi
		assert_line "check               : right: all 32 of our tokens, every word the weighted sum of its 4 experts' outputs (CPU reference)"
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

# The line of rank P's signal of exchange SEQ (phase PH, numbered NAME) as rank K took it.
assert_imm_taken() { # P SEQ PH NAME
	local imm
	imm=$(printf '0x%04x%02x%02x' "$2" "$3" "$1")
	assert_line --regexp "^signal +: rank $1's WRITE with immediate $imm: exchange $2, $4, from rank $1( \\(the next exchange's, early: kept for it\\))?\$"
}

@test "09_moe --signal imm: 3 ranks, each chain's last WRITE with immediate, receives posted before the go-ahead: N - 1 receive completions per phase, each naming its sender, phase and exchange; every token right, no RNR NAK, all freed" {
	record_baseline
	RING_STEP=09_moe run_ring 3 -t 10 --tokens 32 --hidden 256 --experts 4 --topk 4 --seed 7 --signal imm
	assert_ring_success
	use_output_of r0
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +dispatch +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +combine +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	for k in 0 1 2; do
		use_output_of "r$k"
		assert_line --regexp '^signal kind +: imm: each chain to a peer ends with a WRITE with immediate'
		assert_line "receives            : 16 on each of our 2 QPs, before the go-ahead: a WRITE with immediate that found none would be refused with an RNR NAK and retried"
		assert_in_order '^receives +: 16 on each' '^== stage 9, layout'
		phases=(layout dispatch combine)
		for seq in 0 1 2; do
			phase=${phases[seq]}
			assert_line "signal              : 2 WRITEs with immediate of our $phase came = N - 1: every peer's data is here"
			for p in 0 1 2; do
				[ "$p" = "$k" ] || assert_imm_taken "$p" "$seq" "$seq" "$phase"
			done
			assert_line --regexp "^ibv_post_send +: $phase to rank [0-2]: [0-9]+ WRITEs? of [0-9]+ B in all at its offset [0-9]+, the last with immediate 0x000${seq}0${seq}0$k \\(exchange $seq, $phase, from rank $k\\), signalled: one post\$"
		done
		assert_line --regexp '^ibv_poll_cq +: completion: opcode RECV_RDMA_WITH_IMM, status success, [0-9]+ bytes, immediate 0x0001010[0-2]$'
		refute_line --regexp 'FETCH_ADD'
		assert_line --regexp '^posts +: dispatch: 2 ibv_post_send calls \(one per peer; on rxe each is one write\(\) system call\), [1-9][0-9]* WRITEs, the last to each peer with immediate, [1-9][0-9]* B; 0 ibv_post_recv calls \(16 receives a QP were posted before the go-ahead\)$'
		assert_line "signals             : 2 WRITEs with immediate came in each of our 3 exchanges (layout, dispatch, combine): 6 receive completions, each naming its sender, phase and exchange; we sent 6"
		# rxe's doorbell is a write(); a hardware NIC's is a store to a mapped page: no system call
		if on_rxe; then
			assert_line --regexp "^system calls +: dispatch: 2 write\\(\\) by its 2 ibv_post_send calls \\(syscw of /proc/self/io, read around each post: rxe.s doorbell\\), none by ibv_poll_cq; [0-9]+ $(wait_call 3)\\(\\) in its waits "
		fi
		assert_waits_line 3
		assert_line --regexp '^access +: local_write,remote_write: peers WRITE counts, tokens and results into it, the last WRITE to us with immediate$'
		# rxe's hw_counters names (sent_pkts, send_rnr_err...): a hardware NIC has others, and the line says not readable
		if on_rxe; then
			assert_line --regexp '^device counters +: rxe[0-9]*: sent_pkts \+[1-9][0-9]*, rcvd_pkts \+[1-9][0-9]* over the three phases \(per device: every rank on it adds to them\)$'
			assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: every WRITE with immediate found its receive posted$'
		fi
		assert_line "check               : right: all 32 of our tokens, every word the weighted sum of its 4 experts' outputs (CPU reference)"
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

# Rank 0's table rows of PHASE, one a size: their size column.
row_sizes() { # PHASE
	sed -nE "s/^ +([0-9]+) +[0-9]+ +uint32 +$1 +.*/\\1/p" <<<"$output"
}

@test "09_moe sweep (step 07's -b, --maxbytes, -f, -n, -w, -c): 8, 16 and 32 tokens a rank, each row its own layout, warm-up, timed pairs and a checked pair on cleared buffers; with FETCH_ADD and with WRITE with immediate (27 exchanges, the receives topped up); every row's #wrong 0, every token right" {
	record_baseline
	for signal in fadd imm; do
		RING_STEP=09_moe run_ring 3 -t 10 --hidden 256 --experts 4 --topk 4 --seed 7 --signal "$signal" -b 2K --maxbytes 8K -f 2 -n 2 -w 1
		assert_ring_success
		use_output_of r0
		assert_line "# MoE all-to-all over RDMA (verbs): 3 ranks, 8 to 32 tokens of 256 B a rank, top-4 of 12 experts"
		[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +uint32 +(dispatch|combine) ' <<<"$output")" -eq 6 ] || fail "not 6 rows: $output"
		[ "$(grep -cE '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +(dispatch|combine) +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$output")" -eq 6 ] || fail "a row with #wrong not 0: $output"
		mapfile -t sizes < <(row_sizes dispatch)
		# A record is 40 B of header (token, K, 4 pairs) and 256 B of payload.
		for i in 0 1 2; do
			[ $((sizes[i] % 296)) -eq 0 ] || fail "dispatch size ${sizes[i]} is not whole 296-byte records"
		done
		[ "${sizes[0]}" -lt "${sizes[1]}" ] && [ "${sizes[1]}" -lt "${sizes[2]}" ] || fail "dispatch sizes do not grow: ${sizes[*]}"
		# Each row's pairs line: 6 pairs a phase, and the most a rank dispatched to its peers is the row's size.
		run awk '/^pairs [0-9]+ B/ { size = $2; sub(/^[^:]*: B from rank s to rank d \(s>d\), dispatch: /, "")
			split($0, ph, "; combine: "); n = split(ph[1], e, ", "); delete out; most = 0
			for (i = 1; i <= n; i++) { split(e[i], f, "[> ]"); out[f[1]] += f[3] }
			for (r in out) if (out[r] > most) most = out[r]
			print size, most, n, split(ph[2], e, ", ") }' <<<"$output"
		assert_output "$(printf '%s %s 6 6\n' "${sizes[0]}" "${sizes[0]}" "${sizes[1]}" "${sizes[1]}" "${sizes[2]}" "${sizes[2]}")"
		for k in 0 1 2; do
			use_output_of "r$k"
			assert_line "sweep               : -b 2048 to --maxbytes 8192 B of tokens a rank, x 2 a row: 8 to 32 tokens of 256 B (--tokens unused); each row a layout, 1 warm-up and 2 timed dispatch and combine pairs, then one on cleared buffers, every token checked"
			assert_in_order "^check +: right: all 8 of our tokens" "^check +: right: all 16 of our tokens" "^check +: right: all 32 of our tokens"
			# rxe's hw_counters names (sent_pkts, send_rnr_err...): a hardware NIC has others, and the line says not readable
			if on_rxe; then
				assert_line --regexp '^device counters +: rxe[0-9]*: sent_pkts \+[1-9][0-9]*, rcvd_pkts \+[1-9][0-9]* over the three phases'
				assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: '
			fi
			refute_line --regexp '^ibv_post_send '
			refute_line --regexp '^system calls '
			assert_line --regexp '^teardown +: every object released$'
		done
	done
	assert_back_to_baseline
}

@test "09_moe --transport both: the same dispatch and combine over verbs, then over a TCP socket per pair of ranks: every token checked both ways, both tables, RDMA's time over TCP's, all freed; the QPs at step 07's --qp-timeout 20 and stage 3's --tclass 106" {
	record_baseline
	RING_STEP=09_moe run_ring 3 -t 10 --tokens 32 --hidden 256 --experts 4 --topk 4 --seed 7 --transport both --qp-timeout 20 --tclass 106
	assert_ring_success
	use_output_of r0
	assert_line "# MoE all-to-all over RDMA (verbs): 3 ranks, 32 tokens of 256 B a rank, top-4 of 12 experts"
	assert_line "# MoE all-to-all over TCP: 3 ranks, 32 tokens of 256 B a rank, top-4 of 12 experts"
	assert_in_order '^# MoE all-to-all over RDMA' '^# MoE all-to-all over TCP' '^rdma/tcp '
	[ "$(grep -cE '^ +[1-9][0-9]* +[1-9][0-9]* +uint32 +(dispatch|combine) +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' <<<"$output")" -eq 4 ] || fail "not 4 rows with #wrong 0: $output"
	# The same gate and layout: both tables' dispatch rows have the same size.
	mapfile -t sizes < <(sed -nE 's/^ +([0-9]+) +[0-9]+ +uint32 +dispatch .*/\1/p' <<<"$output")
	[ "${#sizes[@]}" -eq 2 ] && [ "${sizes[0]}" = "${sizes[1]}" ] || fail "dispatch sizes differ: ${sizes[*]}"
	assert_line --regexp "^rdma/tcp ${sizes[0]} B +: dispatch [0-9.]+ / [0-9.]+ us = [0-9]+\.[0-9]{2}; combine [0-9.]+ / [0-9.]+ us = [0-9]+\.[0-9]{2}\$"
	for k in 0 1 2; do
		use_output_of "r$k"
		assert_line --regexp "^tcp mesh +: connected: 2 sockets here, 3 in the job, one per pair: we dialled the $k lower ranks, the $((2 - k)) higher ones dialled us\$"
		[ "$(grep -c "^check               : right: all 32 of our tokens, every word the weighted sum of its 4 experts' outputs (CPU reference)\$" <<<"$output")" -eq 2 ] || fail "rank $k did not check its tokens both ways: $output"
		assert_in_order '^check +: right: all 32' '^== stage 9 over TCP, layout' '^== stage 9 over TCP, dispatch' '^== stage 9 over TCP, combine' '^check +: right: all 32'
		assert_line --regexp '^tcp +: dispatch: [1-9][0-9]* B sent to our 2 peers, [1-9][0-9]* B came, in [1-9][0-9]* send\(\), [1-9][0-9]* recv\(\) and [1-9][0-9]* poll\(\) calls$'
		assert_line --regexp '^system calls +: dispatch over TCP: [1-9][0-9]* send\(\) and [1-9][0-9]* recv\(\) for [1-9][0-9]* B out and [1-9][0-9]* B in, [1-9][0-9]* poll\(\): '
		assert_line --regexp '^posts +: dispatch: 2 ibv_post_send calls '
		[ "$(grep -cE '^ibv_modify_qp +: RTR -> RTS: send PSN 0x[0-9a-f]{6}, timeout 20 \(4\.096 us \* 2\^20 = about ' <<<"$output")" -eq 2 ] ||
			fail "rank $k: not both QPs at timeout 20: $(grep 'RTR -> RTS' <<<"$output")"
		[ "$(grep -cE '^ibv_modify_qp +: INIT -> RTR: .*, traffic class 106 \(DSCP 26, ECN 2\), SL 0, ' <<<"$output")" -eq 2 ] ||
			fail "rank $k: not both QPs at traffic class 106: $(grep 'INIT -> RTR' <<<"$output")"
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "09_moe refuses a top-k larger than the experts there are, FETCH_ADD on a device without atomics, queues and CQs the device cannot hold, and a WRITE longer than the port allows, naming the options" {
	run_step 09_moe --rank 0 --world-size 2 --experts 4 --topk 9
	assert_failure 2
	assert_line "error: --topk 9 is more than the 8 experts of 2 ranks x 4 (--experts): a token's top-k experts are distinct; lower --topk or raise --experts"
	# A RANK:MS pair's numbers are read whole: one past int's range is refused, not wrapped
	# (sscanf's %d made 4294967299 rank 3).
	run_step 09_moe --rank 0 --world-size 2 --hold 4294967299:5
	assert_failure 2
	assert_output "error: --hold: '4294967299:5' is not RANK:MS, a rank and milliseconds"
	# A device without atomics (the test aid): every rank refuses --signal fadd before it
	# registers anything, and names the signal that needs none.
	record_baseline
	RDMA_STEPS_CAPS=atomic_cap=none RING_STEP=09_moe run_ring 2 -t 5 --tokens 8 --hidden 64
	assert_all_refused "error: --signal fadd asks for remote atomics, but $DEV does none (atomic_cap IBV_ATOMIC_NONE, see ibv_devinfo -v); use --signal imm"
	# Every rank serves its peers' FETCH_ADDs: a device that serves none in flight (the
	# exchange would agree 0, and the atomic would never go) is refused as well.
	RDMA_STEPS_CAPS=max_qp_rd_atom=0 RING_STEP=09_moe run_ring 2 -t 5 --tokens 8 --hidden 64
	assert_all_refused "error: --signal fadd asks for 1 RDMA READ or atomic served a QP, but $DEV allows 0 (max_qp_rd_atom); use --signal imm"
	# Each signal's queues against the device's (the test aid): WRITE with immediate keeps
	# receives ahead for the peer's signals; FETCH_ADD needs a CQ entry for each WR each way.
	RDMA_STEPS_CAPS=max_qp_wr=8 RING_STEP=09_moe run_ring 2 -t 5 --tokens 8 --hidden 64 --signal imm
	assert_all_refused "error: --signal imm asks for 16 receive WRs a QP (the peer's signals ahead), but $DEV allows 8 (max_qp_wr); use --signal fadd"
	RDMA_STEPS_CAPS=max_cqe=3 RING_STEP=09_moe run_ring 2 -t 5 --tokens 8 --hidden 64
	assert_all_refused "error: --signal fadd asks for 4 CQ entries a QP (as many for each queue), but $DEV allows 3 (max_cqe); use --signal imm"
	# A port whose messages are shorter than a phase's tokens for one peer in one WRITE.
	RDMA_STEPS_CAPS=max_msg_sz=4096 RING_STEP=09_moe run_ring 2 -t 5 --tokens 64 --hidden 64
	assert_all_refused "error: --tokens 64 --hidden 64 asks for 8704 bytes in one WRITE (a phase's tokens for one peer, cut to fit the send queue), but $DEV allows 4096 (max_msg_sz of port 1); give fewer --tokens or a smaller --hidden"
	assert_back_to_baseline
}

@test "09_moe failures: other options on rank 1, another --signal on rank 2, a count past its bound in rank 1's row, then rank 1 killed between dispatch and combine: every rank names the rank within the bound, nothing written past a part, all freed" {
	record_baseline
	RANK_ARGS_1="--seed 2" RING_STEP=09_moe run_ring 3 -t 5 --tokens 8 --hidden 64
	assert_all_name 1 "it was given other options than rank 0: --tokens 8 --hidden 64 --experts 8 --topk 8 --seed 2; rank 0: --tokens 8 --hidden 64 --experts 8 --topk 8 --seed 1; the first that differs: its --seed 2, rank 0's --seed 1\$" 15
	RANK_ARGS_2="--signal imm" RING_STEP=09_moe run_ring 3 -t 5 --tokens 8 --hidden 64
	assert_all_name 2 "it was given other options than rank 0: --tokens 8 --hidden 64 --experts 8 --topk 8 --seed 1 --signal imm; rank 0: --tokens 8 --hidden 64 --experts 8 --topk 8 --seed 1; the first that differs: its --signal imm, rank 0's none\$" 15
	# A count past its bound in the row rank 1 WRITEs: every rank refuses the matrix before
	# taking an offset from it, and no guard word after a part it indexes was touched.
	RING_STEP=09_moe run_ring 3 -t 5 --tokens 8 --hidden 64 --plant-count 1:1000
	assert_all_name 1 "its counts row says 1000 tokens for rank 2, more than the 8 a rank holds \\(a token goes once to a rank at most\\): refused before any offset was taken from it\$" 15
	for k in 0 1 2; do
		use_output_of "r$k"
		assert_line "guards              : intact: nothing was written past the send, recv, comb_out or comb_in part (64 B of guard words after each)"
		refute_line --regexp '^ibv_post_send +: dispatch'
	done
	use_output_of r1
	assert_line "plant               : rank 1 WRITEs 1000 as its count for rank 2 (--plant-count): every rank must refuse it"
	RING_STEP=09_moe start_ring 3 -t 5 --tokens 8 --hidden 64 --hold 1:20000
	wait_for_line "$BATS_TEST_TMPDIR/r1.out" '^hold ' 30
	kill_rank_and_assert_named 1 11
}
