#!/usr/bin/env bats
# 08_kv_transfer.bats: step 08 moves a request's KV cache from the prefiller's paged pool to the decoder's, pulled and pushed, over several QPs, counted in and checked byte by byte.

setup() {
	load lib/test_helper
	load lib/kv
}

@test "08_kv_transfer pull over 2 QPs, adjacent blocks merged: both requests' blocks scattered on both sides, every byte right, the prefiller's CPU idle, all freed; with a smaller prefiller (RDMA_STEPS_CAPS), both sides agree on the READs in flight" {
	record_baseline
	run_server_client 08_kv_transfer --mode pull --qps 2 --run 2 --merge
	assert_both_succeeded
	assert_moved 2 16 2
	# Merged: runs of 2 on both sides make 8 WRs of 2 blocks each.
	assert_line --regexp '^request +: 0: 16 blocks in 8 WRs \(8 adjacent pairs merged\), 1048576 bytes in '
	# 128 is rxe's max_qp_rd_atom and max_qp_init_rd_atom (rxe_param.h); a ConnectX reports its firmware's.
	if on_rxe; then
		assert_line --regexp '^rd_atomic +: 128 RDMA READs in flight on each QP, as the device allows \(max_qp_init_rd_atom 128 as initiator, max_qp_rd_atom 128 as responder\)'
	fi
	refute_line --regexp '^rd_atomic +: 1 RDMA READs'
	assert_line --regexp '^ibv_post_send +: QP 1: a chain of [0-9]+ RDMA READs?, one doorbell, the last signalled'
	mapfile -t dec0 < <(table_of 0)
	mapfile -t dec1 < <(table_of 1)
	use_output_of srv
	assert_line --regexp "^request +: 1: 4 layers computed and announced on the side channel in [0-9.]+ ms: the decoder READ the 16 blocks, and this side posted no WR$"
	refute_output --partial 'ibv_post_send'
	mapfile -t pre0 < <(table_of 0)
	mapfile -t pre1 < <(table_of 1)
	[ "${#dec0[@]}" -eq 16 ] && [ "${#pre0[@]}" -eq 16 ] && [ "${#dec1[@]}" -eq 16 ] || fail "tables of ${#dec0[@]}, ${#pre0[@]} and ${#dec1[@]} entries"
	# The two sides hold the same request in other blocks, and the second request in blocks the first left.
	[ "${dec0[*]}" != "${pre0[*]}" ] || fail "both sides chose the same blocks: ${dec0[*]}"
	for side in dec pre; do
		first=${side}0[@]
		second=${side}1[@]
		common=$(comm -12 <(printf '%s\n' "${!first}" | sort) <(printf '%s\n' "${!second}" | sort))
		[ -z "$common" ] || fail "$side: request 1 reuses request 0's blocks: $common"
	done
	# Two NICs that serve different numbers of READs: the prefiller's device seen smaller by the
	# test aid RDMA_STEPS_CAPS. Each side offers and accepts in stage 3's exchange, both agree
	# on the least, every QP of both, and the pull runs.
	port=$(pick_port)
	RDMA_STEPS_CAPS=max_qp_rd_atom=4 start_step srv 08_kv_transfer -d "$DEV" -p "$port" -t 20 --mode pull --qps 2
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 08_kv_transfer -d "$DEV" -p "$port" -t 20 --mode pull --qps 2 127.0.0.1
	cli_status=0 srv_status=0
	wait "$cli_pid" || cli_status=$?
	wait "$srv_pid" || srv_status=$?
	assert_both_succeeded "RDMA_STEPS_CAPS=max_qp_rd_atom=4 on the prefiller"
	assert_moved 2 16 2
	# The figure each side offers unlowered is rxe's 128 (rxe_param.h), exactly; a ConnectX
	# offers its firmware's (a grep pattern for any figure there).
	rd=128
	on_rxe || rd='[0-9][0-9]*'
	[ "$(grep -c '^rd_atomic .*agreed with the peer: 4 of ours in flight (we offer '"$rd"', it serves up to 4), 4 of its served (it offers 4, we serve up to '"$rd"')$' <<<"$output")" -eq 2 ] ||
		fail "the decoder did not agree to 4 READs in flight on both QPs: $output"
	use_output_of srv
	if on_rxe; then
		assert_line "RDMA_STEPS_CAPS     : a test aid: this run sees max_qp_rd_atom 4 where rxe0 has 128, as a smaller NIC would"
	else
		assert_line --regexp "^RDMA_STEPS_CAPS +: a test aid: this run sees max_qp_rd_atom 4 where $DEV has [0-9]+, as a smaller NIC would$"
	fi
	[ "$(grep -c '^rd_atomic .*agreed with the peer: 4 of ours in flight (we offer 4, it serves up to '"$rd"'), 4 of its served (it offers '"$rd"', we serve up to 4)$' <<<"$output")" -eq 2 ] ||
		fail "the prefiller did not agree to serve 4 READs on both QPs: $output"
	# The aid only lowers, and names the limits it knows.
	RDMA_STEPS_CAPS=max_qp_rd_atom=999 run_step 01_open_pd -d "$DEV"
	assert_failure
	if on_rxe; then
		assert_output --partial "error: RDMA_STEPS_CAPS: max_qp_rd_atom=999 is above $DEV's 128: the aid only lowers a limit"
	else
		assert_output --regexp "error: RDMA_STEPS_CAPS: max_qp_rd_atom=999 is above $DEV's [0-9]+: the aid only lowers a limit"
	fi
	RDMA_STEPS_CAPS=max_qp=4 run_step 01_open_pd -d "$DEV"
	assert_failure
	assert_output --partial "error: RDMA_STEPS_CAPS: 'max_qp=4' is not NAME=N with a limit it knows; write it as max_qp_wr=64,max_qp_rd_atom=4, with NAME one of max_qp_wr, max_sge, max_cqe, max_mw, max_qp_rd_atom, max_qp_init_rd_atom, max_mr_size, atomic_cap, mem_window_type_2, max_msg_sz (or unset it)"
	assert_back_to_baseline
}

@test "08_kv_transfer push over 2 QPs with QP 0 held back: the last WRITE with immediate comes before the cache is whole, and counting waits for every block; a device's MR size and CQ, and the memlock limit, at their boundary" {
	record_baseline
	# Devices whose MRs hold the 4 MiB pool and whose CQs hold the decoder's 64 sends and 8
	# receives a QP, no more (the test aid), and processes that may pin 4 MiB and have no
	# CAP_IPC_LOCK: all three at the boundary, and the kernel pins the pool.
	STEP_PREFIX=$(memlock_prefix 4194304) \
		RDMA_STEPS_CAPS=max_mr_size=4M,max_cqe=72 run_server_client 08_kv_transfer --mode push --qps 2 --requests 1 --delay-qp 0:300
	assert_both_succeeded
	assert_moved 1 16 2
	assert_line --regexp '^ibv_post_recv +: 8 receives posted in one call'
	assert_line --regexp '^VmPin +: 0 kB before, 4096 kB after: 4096 kB pinned$'
	# The request's last block travels on QP 1; QP 0's 8 blocks were still to come.
	assert_line "last-message rule   : the request's last block came (QP 1) with 8 of 16 blocks in: a decoder that took it as the end would have read an incomplete cache"
	use_output_of srv
	assert_line --regexp "^--delay-qp +: QP 0's 4 layer\(s\) held back 300 ms"
	assert_line --regexp '^ibv_post_send +: QP 1: a chain of [0-9]+ RDMA WRITEs with immediate, one doorbell, the last signalled'
	assert_back_to_baseline
}

# The decoder's lines for the one small request of the --post ex test: every byte right, both QPs used.
assert_ex_moved() {
	use_output_of cli
	assert_line --regexp "^check +: right: 1 requests, every byte of every block at this side's own block addresses is the prefiller's"
	assert_line --regexp '^counting +: request 0 handed over at 8 of 8 blocks'
	assert_line 'bytes per QP        : 16384 16384'
}

@test "08_kv_transfer --post ex: chains built with the extended API (ibv_wr_start ... ibv_wr_complete) on QPs from ibv_create_qp_ex, pulled over 2 QPs, and pushed to a decoder that posts the classic way: the API is each side's own choice" {
	shape="--qps 2 --requests 1 --layers 2 --blocks 4 --block-bytes 4K"
	record_baseline
	run_server_client 08_kv_transfer --mode pull $shape --post ex
	assert_both_succeeded pull
	# Not assert_moved: a request this small may end within the 10 ms the kernel keeps the device's
	# counters it last read (RDMA_HW_STATS_DEFAULT_LIFESPAN), which then show +0.
	assert_ex_moved
	assert_line --regexp '^ibv_create_qp_ex +: RC QP 0x[0-9a-f]{6} in RESET: send queue [0-9]+ WRs, receive queue [0-9]+ WRs, inline up to [0-9]+ bytes; send ops RDMA_READ$'
	assert_line --regexp '^ibv_wr_complete +: QP 1: a chain of 2 RDMA READs, one doorbell, the last signalled: 8192 bytes, first to remote addr 0x[0-9a-f]+, rkey 0x[0-9a-f]+$'
	refute_output --partial 'ibv_post_send'
	# Push: the prefiller posts with the extended API, the decoder (receives only) made its QPs the classic way.
	run_two_sides 08_kv_transfer "--mode push $shape --post ex" "--mode push $shape"
	assert_both_succeeded push
	assert_ex_moved
	assert_line --regexp '^ibv_create_qp +: RC QP 0x[0-9a-f]{6} in RESET: send queue [0-9]+ WRs, receive queue [0-9]+ WRs, inline up to [0-9]+ bytes$'
	use_output_of srv
	assert_line --regexp '^ibv_create_qp_ex +: RC QP 0x[0-9a-f]{6} in RESET: .*; send ops RDMA_WRITE_WITH_IMM$'
	assert_line --regexp '^ibv_wr_complete +: QP 0: a chain of 2 RDMA WRITEs with immediate, one doorbell, the last signalled: 8192 bytes, first to remote addr 0x[0-9a-f]+, rkey 0x[0-9a-f]+$'
	assert_back_to_baseline
}

@test "08_kv_transfer refuses shapes it cannot move, shapes the device or the memlock limit cannot hold, and sides given different shapes, naming the option" {
	run_step 08_kv_transfer --qps 17
	assert_failure 2
	run_step 08_kv_transfer --layers 1 --blocks 2 --qps 3
	assert_failure 2
	assert_output "error: --qps 3 is more than the 2 blocks of a request (--layers 1 x --blocks 2): some QPs would carry nothing; give at most 2"
	run_step 08_kv_transfer --blocks 3 --run 2
	assert_failure 2
	assert_output "error: --run 2 does not divide --blocks 3: the allocator hands out whole runs of a layer's blocks"
	run_step 08_kv_transfer --blocks 0
	assert_failure 2
	assert_output "error: --blocks: '0' is not a whole number from 1 to 4096"
	run_step 08_kv_transfer --chain 0
	assert_failure 2
	assert_output "error: --chain: '0' is not a whole number from 1 to 1024"
	run_step 08_kv_transfer --mode fetch
	assert_failure 2
	assert_output --partial "error: --mode: unknown mode 'fetch'"
	run_step 08_kv_transfer --violate revoked
	assert_failure 2
	assert_output "error: --violate revoked takes back memory windows: give --windows too"
	run_step 08_kv_transfer --violate past_window
	assert_failure 2
	assert_output "error: --violate past_window reaches past a memory window's end: give --windows too"
	run_step 08_kv_transfer --violate rkey --windows
	assert_failure 2
	assert_output "error: --violate rkey breaks the pool's rkey, which --windows never sends: give --violate revoked with --windows"
	# What the device cannot hold is refused after stage 1 has read its limits, before anything
	# is registered, naming the limit and the option: the decoder's CQ for 65,790 receives on
	# one QP (rxe's max_cqe is 32,767); a pool past RLIMIT_MEMLOCK without CAP_IPC_LOCK (it is
	# read, not assumed: at the limit the pool is pinned, in the push test); a pool past
	# max_mr_size; windows on a device that binds none, or more than its max_mw (the test aid).
	record_baseline
	# 32,767 is rxe's max_cqe; a ConnectX's is its firmware's, (1 << log_max_cq_sz) - 1 (book/real-nic.md).
	if on_rxe; then
		run_step 08_kv_transfer -d "$DEV" --mode push --requests 1 --pool 1 --layers 255 --blocks 258 --block-bytes 64 --qps 1 127.0.0.1
		assert_failure 1
		assert_output --partial "error: --layers 255 --blocks 258 --qps 1 asks for 65854 CQ entries a QP (its send WRs' and its receives'), but $DEV allows 32767 (max_cqe); use --qps 3 or more"
		refute_output --partial 'ibv_reg_mr'
	fi
	STEP_PREFIX=$(memlock_prefix 4190208) run_step 08_kv_transfer -d "$DEV" 127.0.0.1
	assert_failure 1
	assert_output --partial "error: --pool 4 --layers 4 --blocks 4 --block-bytes 65536 asks to pin 4194304 bytes, but RLIMIT_MEMLOCK allows 4190208 (0 pinned already), and this process has no CAP_IPC_LOCK to pass it: raise it with 'ulimit -l' (KiB, or unlimited) or 'memlock' in /etc/security/limits.conf, run with CAP_IPC_LOCK (root has it), or give fewer --pool, --layers, --blocks or --block-bytes"
	refute_output --partial 'ibv_reg_mr'
	RDMA_STEPS_CAPS=max_mr_size=4194303 run_step 08_kv_transfer -d "$DEV" 127.0.0.1
	assert_failure 1
	assert_output --partial "error: --pool 4 --layers 4 --blocks 4 --block-bytes 65536 asks for 4194304 bytes in one MR, but $DEV allows 4194303 (max_mr_size); give fewer --pool, --layers, --blocks or --block-bytes"
	# A block is one message, or with --merge a layer's blocks: each against the port's largest.
	RDMA_STEPS_CAPS=max_msg_sz=32768 run_step 08_kv_transfer -d "$DEV" 127.0.0.1
	assert_failure 1
	assert_line "error: --block-bytes 65536 asks for 65536 bytes in one message (a block), but $DEV allows 32768 (max_msg_sz of port 1); use --block-bytes 32768 or less"
	RDMA_STEPS_CAPS=max_msg_sz=131072 run_step 08_kv_transfer -d "$DEV" --merge 127.0.0.1
	assert_failure 1
	assert_line "error: --block-bytes 65536 asks for 262144 bytes in one message (with --merge, a layer's --blocks adjacent blocks), but $DEV allows 131072 (max_msg_sz of port 1); use --block-bytes 32768 or less"
	refute_output --partial 'ibv_reg_mr'
	RDMA_STEPS_CAPS=mem_window_type_2=0 run_step 08_kv_transfer -d "$DEV" --windows
	assert_failure 1
	assert_output --partial "error: --windows asks for type 2 memory windows, but $DEV binds none (its device_cap_flags has neither MEM_WINDOW_TYPE_2A nor MEM_WINDOW_TYPE_2B, see ibv_devinfo -v); leave --windows out"
	RDMA_STEPS_CAPS=max_mw=15 run_step 08_kv_transfer -d "$DEV" --windows
	assert_failure 1
	assert_output --partial "error: --windows --layers 4 --blocks 4 asks for 16 memory windows at once, but $DEV allows 15 (max_mw); leave --windows out, or give fewer --layers or --blocks"
	refute_output --partial 'ibv_reg_mr'
	# Push: a receive a QP for each block it carries. The fix the refusal names is enough: with
	# it, the decoder passes every limit and goes on to connect (to no prefiller here).
	RDMA_STEPS_CAPS=max_qp_wr=64 run_step 08_kv_transfer -d "$DEV" --mode push --layers 16 --blocks 16 127.0.0.1
	assert_failure 1
	assert_output --partial "error: --layers 16 --blocks 16 --qps 1 asks for 256 receive WRs a QP (one for each WRITE with immediate its blocks bring), but $DEV allows 64 (max_qp_wr); use --qps 4 or more"
	refute_output --partial 'ibv_reg_mr'
	RDMA_STEPS_CAPS=max_qp_wr=64 run_step 08_kv_transfer -d "$DEV" -t 1 --mode push --layers 16 --blocks 16 --qps 4 127.0.0.1
	assert_failure 1
	assert_output --partial "error: could not connect to 127.0.0.1 port "
	# Pull: the prefiller serves the decoder's READs, so its device must hold them in flight.
	RDMA_STEPS_CAPS=max_qp_rd_atom=0 run_step 08_kv_transfer -d "$DEV" -t 1 --mode pull
	assert_failure 1
	assert_output --partial "error: --mode pull asks for 1 RDMA READ or atomic served a QP, but $DEV allows 0 (max_qp_rd_atom); use --mode push"
	refute_output --partial 'ibv_reg_mr'
	run_two_sides 08_kv_transfer "--layers 4" "--layers 2"
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "server $srv_status, client $cli_status"
	use_output_of srv
	assert_line "error: the peer was given --layers 2, this side 4: give both sides the same options"
	use_output_of cli
	assert_line "error: the peer was given --layers 4, this side 2: give both sides the same options"
	assert_line --regexp '^teardown +: every object released$'
	assert_back_to_baseline
}

@test "08_kv_transfer: a decoder killed mid-transfer is named by the prefiller within -t, in one line, and nothing is leaked" {
	record_baseline
	port=$(pick_port)
	start_step srv 08_kv_transfer -d "$DEV" -p "$port" -t 3 --mode push --layer-ms 500
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 08_kv_transfer -d "$DEV" -p "$port" -t 3 --mode push --layer-ms 500 127.0.0.1
	wait_for_line "$BATS_TEST_TMPDIR/cli.out" '^ibv_post_recv '
	pkill -KILL -P "$cli_pid"
	wait "$cli_pid" || true # killed on purpose: its status is the kill's
	start=$SECONDS
	finish_step srv "$srv_pid"
	[ $((SECONDS - start)) -le $((8 * TIME_SCALE)) ] || fail "the prefiller took $((SECONDS - start)) s to end"
	assert_failure 1
	# Killed before the go-ahead, or while the prefiller computed or posted: either way one line names it.
	# The kill lands in request 0 (of 2 s), or on a loaded machine, where it can come late, in request 1.
	assert_one_error '^error: (the peer closed the side channel early \(did it fail\? see its output\)|request [01]: the decoder closed the side channel with [0-9]+ of [0-9]+ chains completed: it has stopped)'
	assert_back_to_baseline
}

@test "08_kv_transfer --windows: each request's segments granted through memory windows on their own QPs, the pool's rkey never sent, and a READ and a WRITE with a revoked rkey refused" {
	record_baseline
	for mode in pull push; do
		# Devices of 16 memory windows (the test aid): a request's 16 at the boundary.
		RDMA_STEPS_CAPS=max_mw=16 run_server_client 08_kv_transfer --mode "$mode" --qps 2 --windows
		assert_both_succeeded "$mode"
		assert_moved 2 16 2
		# The granting side: the prefiller in pull mode, the decoder in push mode.
		[ "$mode" = pull ] && granting=srv initiator=cli op="RDMA READ" || granting=cli initiator=srv op="RDMA WRITE with immediate"
		use_output_of "$granting"
		assert_line --regexp '^access +: .*mw_bind'
		assert_line --regexp '^ibv_alloc_mw +: request 1: 16 type 2 windows, one per segment, each bound \(IBV_WR_BIND_MW\) on its segment.s QP to just its blocks; the first has rkey 0x[0-9a-f]+, on QP 0$'
		assert_line 'IBV_WR_LOCAL_INV    : 16 of 16 windows invalidated, then freed (ibv_dealloc_mw): their rkeys open nothing now'
		assert_line --regexp "^revoked +: QP 0 is in ERR: the peer's RDMA (READ|WRITE) with a revoked rkey was refused here$"
		use_output_of "$initiator"
		# The pool's rkey stayed home: stage 3's exchange carried none, and the WRs used the windows'.
		assert_line --regexp '^remote buffer +: addr 0x[0-9a-f]+, length 4194304, rkey 0x0$'
		first=$(sed -nE 's/^windows +: request 1: 16 windows granted by the peer, one per segment, the first rkey (0x[0-9a-f]+); the peer.s pool rkey was never sent$/\1/p' <<<"$output")
		[ -n "$first" ] || fail "$mode: no grant line for request 1: $output"
		assert_line --regexp "^ibv_post_send +: QP 0: a chain of [0-9]+ ${op}s?, one doorbell, the last signalled: [0-9]+ bytes, first to remote addr 0x[0-9a-f]+, rkey $first$"
		assert_line "revoked             : the $op with request 1's window rkey $first, after the peer invalidated it, completed with status remote access error (10), as it must: a leaked rkey opens nothing once its window is invalidated, and the error has moved both QPs to ERR"
	done
	assert_back_to_baseline
}

@test "08_kv_transfer --layer-ms: the decoder waits for the compute and says how long the last byte came after it, with the overlap and without; a side without --no-overlap is refused" {
	for overlap in "" --no-overlap; do
		run_server_client 08_kv_transfer --mode push --requests 1 --layer-ms 10 $overlap
		assert_both_succeeded "${overlap:-with the overlap}"
		use_output_of cli
		[ -z "$overlap" ] && state=on predicted="the last layer.s transfer alone is predicted" || state="off \(--no-overlap\)" predicted="every layer.s transfer is predicted"
		# Pushed to, the decoder cannot see the compute end: it counts the compute from the go-ahead.
		assert_line --regexp "^overlap +: $state: 4 layers x 10 ms of compute = 40 ms; the last byte came [0-9.]+ ms after it \(counted from the go-ahead\), where $predicted"
		# The request cannot end before the compute has.
		ms=$(sed -nE 's/^request +: 0: .* bytes in ([0-9]+)\.[0-9] ms, .*/\1/p' <<<"$output")
		[ "$ms" -ge 40 ] || fail "the request took $ms ms, less than its 40 ms of compute"
	done
	# Pulling, the prefiller's notices show the decoder when the compute ended.
	run_server_client 08_kv_transfer --mode pull --requests 1 --layer-ms 10
	assert_both_succeeded "pulled"
	use_output_of cli
	assert_line --regexp "^overlap +: on: 4 layers x 10 ms of compute = 40 ms; the last byte came [0-9.]+ ms after it \(as the prefiller.s notices showed it\), where the last layer.s transfer alone is predicted"
	run_two_sides 08_kv_transfer "--layer-ms 10 --no-overlap" "--layer-ms 10"
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "server $srv_status, client $cli_status"
	use_output_of cli
	assert_line "error: the peer was given --no-overlap (1: given) 1, this side 0: give both sides the same options"
}

@test "08_kv_transfer --chain longer than the send queue: ibv_post_send refuses it with ENOMEM, the decoder names the WR bad_wr points at and the queue's real size, and the prefiller names the decoder gone" {
	record_baseline
	run_server_client 08_kv_transfer --layers 1 --blocks 256 --block-bytes 4K --requests 1 --pool 1 --chain 200
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	use_output_of cli
	send=$(sed -nE "s/^ibv_query_qp +: QP 0's queues as the provider made them: send ([0-9]+) WRs \(asked 64\).*/\1/p" <<<"$output")
	[ -n "$send" ] && [ "$send" -lt 200 ] || fail "the send queue holds '$send' WRs: $output"
	assert_line "error: ibv_post_send failed: Cannot allocate memory (errno 12): QP 0 refused WR $send of a chain of 200 (bad_wr), the WRs before it posted: its send queue holds $send WRs (64 asked), and 0 were in flight: give --chain at most what the queue holds less what is in flight, and signal often enough to retire them"
	[ "$(grep -c '^error: ' <<<"$output")" -eq 1 ] || fail "more than one error line: $output"
	assert_line --regexp '^teardown +: every object released$'
	use_output_of srv
	assert_line --regexp '^error: (the peer closed the side channel early|request 0: the decoder closed the side channel)'
	assert_back_to_baseline
}
