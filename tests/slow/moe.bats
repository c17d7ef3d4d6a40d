#!/usr/bin/env bats
# moe.bats: step 09 beyond make test: 8 ranks on one rxe with either signal (sleeping between looks, since they outnumber the CPUs), a skewed gate whose incast on the hot rank the per-rank lines show, and a rank that stays alive but never signals, named with either signal and over TCP ('make test-moe').

bats_require_minimum_version 1.5.0

setup() {
	load ../lib/test_helper
	load ../lib/ring
}

@test "moe: 8 ranks, every rank to every rank (56 QPs): every token right on every rank, all freed" {
	record_baseline
	RING_STEP=09_moe run_ring 8 -t 30 --tokens 16 --hidden 256 --experts 2 --topk 4
	assert_ring_success
	for ((k = 0; k < 8; k++)); do
		use_output_of "r$k"
		assert_line --regexp '^QPs +: 7 here, 56 in the job: N x \(N - 1\) for N = 8$'
		# 8 ranks in the test VM's 2 vCPUs: they sleep between looks, and say so.
		assert_waits_line 8
		for phase in layout dispatch combine; do
			assert_line "signal              : our 7 $phase words (one per sender) each read 1: every peer's data is here"
		done
		assert_line "signals             : 7 FETCH_ADDs came in each of our 3 exchanges (layout, dispatch, combine): 21 words, one per sender and phase, each read 1; we sent 21"
		# rxe's doorbell is a write(); a hardware NIC's is a store to a mapped page: no system call
		if on_rxe; then
			assert_line --regexp "^system calls +: dispatch: 7 write\\(\\) by its 7 ibv_post_send calls \\(syscw of /proc/self/io, read around each post: rxe.s doorbell\\), none by ibv_poll_cq; [0-9]+ $(wait_call 8)\\(\\) in its waits "
		fi
		assert_line "check               : right: all 16 of our tokens, every word the weighted sum of its 4 experts' outputs (CPU reference)"
	done
	assert_back_to_baseline
}

@test "moe: 8 ranks with --signal imm: 7 receive completions per phase on every rank, each naming its sender; every token right, no RNR NAK, all freed" {
	record_baseline
	RING_STEP=09_moe run_ring 8 -t 30 --tokens 16 --hidden 256 --experts 2 --topk 4 --signal imm
	assert_ring_success
	for ((k = 0; k < 8; k++)); do
		use_output_of "r$k"
		for phase in layout dispatch combine; do
			assert_line "signal              : 7 WRITEs with immediate of our $phase came = N - 1: every peer's data is here"
		done
		assert_line "signals             : 7 WRITEs with immediate came in each of our 3 exchanges (layout, dispatch, combine): 21 receive completions, each naming its sender, phase and exchange; we sent 21"
		# rxe's hw_counters names (sent_pkts, send_rnr_err...): a hardware NIC has others, and the line says not readable
		if on_rxe; then
			assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: every WRITE with immediate found its receive posted$'
		fi
		assert_line "check               : right: all 16 of our tokens, every word the weighted sum of its 4 experts' outputs (CPU reference)"
	done
	assert_back_to_baseline
}

# The records rank D received in dispatch, from rank 0's per-rank line.
received() { # D
	sed -nE "s/^per rank +: rank $1: dispatch received ([0-9]+) records, .*/\\1/p" <<<"$output"
}

@test "moe: --skew 90 on 4 ranks with top-2: rank 0, the hot rank, receives from every peer nearly every token, the others far fewer; every token still right" {
	record_baseline
	RING_STEP=09_moe run_ring 4 -t 30 --tokens 64 --hidden 256 --experts 4 --topk 2 --skew 90
	assert_ring_success
	use_output_of r0
	assert_line --regexp '^--skew +: 90%: each of a token.s experts is one of rank 0.s with that chance'
	hot=$(received 0)
	[ -n "$hot" ] || fail "no per-rank line for rank 0: $output"
	for d in 1 2 3; do
		cold=$(received "$d")
		# 3 peers x 64 tokens, about 99% of them with an expert on rank 0 (1 - 0.1 x 0.1);
		# a cold rank gets a token only through its second expert, 1 time in 3 or so.
		[ "$hot" -gt $((2 * cold)) ] || fail "rank 0 received $hot records, rank $d $cold: no incast"
	done
	[ "$hot" -ge 180 ] || fail "rank 0 received only $hot of 192 records"
	for k in 0 1 2 3; do
		use_output_of "r$k"
		assert_line "check               : right: all 64 of our tokens, every word the weighted sum of its 2 experts' outputs (CPU reference)"
	done
	# The same gate without --skew spreads the records evenly.
	RING_STEP=09_moe run_ring 4 -t 30 --tokens 64 --hidden 256 --experts 4 --topk 2
	assert_ring_success
	use_output_of r0
	for d in 0 1 2 3; do
		n=$(received "$d")
		[ "$n" -lt 150 ] || fail "without --skew, rank $d received $n records"
	done
	assert_back_to_baseline
}

# Starts 3 ranks with rank 1 held before combine for a minute, ARGS... added; waits for ranks
# 0 and 2, then kills rank 1, and checks that ranks 0 and 2 named rank 1 (CAUSE) within -t
# of the hold and 5 s more for their teardown.
assert_held_rank_named() { # CAUSE ARGS...
	local cause=$1
	shift
	RING_STEP=09_moe start_ring 3 -t 2 --tokens 8 --hidden 64 --hold 1:60000 "$@"
	wait_for_line "$BATS_TEST_TMPDIR/r1.out" '^hold ' 60
	RING_START=$SECONDS
	SKIP_RANK=1 finish_ring
	pkill -KILL -P "$r1_pid"
	wait "$r1_pid" || true # killed on purpose: its status is the kill's
	SKIP_RANK=1 assert_all_name 1 "$cause" $((2 + 5))
}

@test "moe: a rank that stays alive but never signals its combine (--hold 1:60000): ranks 0 and 2 name rank 1 within -t: with FETCH_ADD (the default), rank 1, whose word stayed behind; with --signal imm, rank 1, whose receive completion never came; over TCP (--transport tcp), rank 1, whose bytes never came; all freed" {
	record_baseline
	assert_held_rank_named "its combine signal did not come within 2 s \\(1 of 2 peers signalled\\): alive or not, it did not send it\$"
	assert_held_rank_named "its combine signal did not come within 2 s \\(1 of 2 peers signalled\\): alive or not, it did not send it\$" --signal imm
	assert_held_rank_named "nothing moved on its TCP connection for 2 s: 0 of [0-9]+ B came from it\$" --transport tcp
}
