#!/usr/bin/env bats
# kv.bats: step 08 at wider sizes, over 1 and 4 QPs, both modes and both post APIs, and every way a transfer fails mid-way ('make test-kv').

setup() {
	load ../lib/test_helper
	load ../lib/kv
	# A failed completion's vendor error: rxe's is 0x0, asserted exactly; a hardware NIC
	# puts a syndrome of its own there (the verbs leave vendor_err to the device).
	vendor_err=0x0
	on_rxe || vendor_err='0x[0-9a-f]+'
}

@test "kv: blocks of 4 KiB, 256 KiB and 1 MiB, pulled and pushed over 1 and 4 QPs, classic and extended posts; 2 MiB WRs of merged blocks: every byte right, all freed" {
	record_baseline
	shapes=("--block-bytes 4K --layers 4 --blocks 16:2:64"
		"--block-bytes 256K --layers 2 --blocks 4 --pool 2:2:8"
		"--block-bytes 1M --layers 2 --blocks 2 --pool 1 --requests 1:1:4")
	for mode in pull push; do
		for qps in 1 4; do
			post=classic
			[ "$qps" = 4 ] && post=ex
			for shape in "${shapes[@]}"; do
				IFS=: read -r opts requests blocks <<<"$shape"
				run_server_client 08_kv_transfer --mode "$mode" --qps "$qps" --post "$post" $opts
				assert_both_succeeded "--mode $mode --qps $qps --post $post $opts"
				assert_moved "$requests" "$blocks" "$qps"
				# The initiator posts: the decoder when pulling, the prefiller when pushing.
				[ "$mode" = pull ] || use_output_of srv
				[ "$post" = classic ] || assert_line --regexp '^ibv_wr_complete +: QP [0-9]+: a chain of '
			done
		done
	done
	# 1 MiB blocks adjacent in pairs on both sides, merged: 2 MiB WRs, within the device's max_msg_sz.
	run_server_client 08_kv_transfer --mode pull --block-bytes 1M --layers 2 --blocks 2 --pool 1 --requests 1 --run 2 --merge
	assert_both_succeeded
	use_output_of cli
	assert_line --regexp '^request +: 0: 4 blocks in 2 WRs \(2 adjacent pairs merged\), 4194304 bytes in '
	assert_back_to_baseline
}

@test "kv: pushed requests of 65,535, 65,536 and 65,790 segments of 64 B over 3 to 8 QPs: the immediate names every segment (24 bits; 16 wrapped segment 65,536 into request 1), every block counted in, every byte right" {
	record_baseline
	# 255 layers of 257 blocks: 65,535 segments, numbered 0 to 65,534.
	run_server_client 08_kv_transfer --mode push --requests 1 --pool 1 --block-bytes 64 --qps 3 --layers 255 --blocks 257
	assert_both_succeeded "65,535 segments"
	assert_moved 1 65535 3
	# 16 layers of 4,096 blocks: 65,536 segments, the last numbered 65,535, the most 16 bits hold.
	run_server_client 08_kv_transfer --mode push --requests 1 --pool 1 --block-bytes 64 --qps 4 --layers 16 --blocks 4096
	assert_both_succeeded "65,536 segments"
	assert_moved 1 65536 4
	# 255 layers of 258 blocks: 65,790, past 16 bits; with 16 each, segment 65,536 read as
	# request 1's segment 0 and the decoder refused the plan.
	run_server_client 08_kv_transfer --mode push --requests 1 --pool 1 --block-bytes 64 --qps 8 --layers 255 --blocks 258
	assert_both_succeeded "65,790 segments"
	assert_moved 1 65790 8
	refute_output --partial "names no segment"
	assert_back_to_baseline
}

# Starts both sides with ARGS, lets the prefiller compute a layer or two (--layer-ms), then kills SIDE (srv or cli).
kill_mid_transfer() { # SIDE ARGS...
	local side=$1
	shift
	port=$(pick_port)
	start_step srv 08_kv_transfer -d "$DEV" -p "$port" -t 3 --layer-ms 300 "$@"
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 08_kv_transfer -d "$DEV" -p "$port" -t 3 --layer-ms 300 "$@" 127.0.0.1
	wait_for_line "$BATS_TEST_TMPDIR/cli.out" '^block table '
	# Four layers of 300 ms: half a second in, the prefiller is computing its second.
	nap 0.5
	local pid=${side}_pid
	pkill -KILL -P "${!pid}"
	wait "${!pid}" || true # killed on purpose: its status is the kill's
}

@test "kv: a prefiller killed mid-transfer, pulled and pushed: the decoder names it in one line, with the blocks it had, within -t, and frees everything" {
	for mode in pull push; do
		record_baseline
		kill_mid_transfer srv --mode "$mode"
		start=$SECONDS
		finish_step cli "$cli_pid"
		[ $((SECONDS - start)) -le $((8 * TIME_SCALE)) ] || fail "$mode: the decoder took $((SECONDS - start)) s to end"
		assert_failure 1
		assert_one_error '^error: request 0: the prefiller closed the side channel with [0-9]+ of 16 blocks in: it has stopped \(killed, or it failed: see its output\)$' "$mode"
		assert_back_to_baseline
	done
}

# Runs one request of step 08 in MODE (pull or push) with ARGS, a --violate that fails both
# sides (status 1 each, or the test fails), and names the sides for what follows: the initiator
# posts the WRs (the decoder when pulling, the prefiller when pushing) and OP is theirs; the
# target is the side whose pool they reach, and whose windows they use with --windows.
run_violation() { # MODE ARGS...
	local mode=$1
	shift
	run_server_client 08_kv_transfer --mode "$mode" --requests 1 "$@"
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "$mode: server $srv_status, client $cli_status"
	initiator=cli target=srv op='RDMA READ'
	if [ "$mode" = push ]; then
		initiator=srv target=cli op='RDMA WRITE with immediate'
	fi
}

@test "kv: --violate rkey, pulled and pushed: the initiator's first WR completes with remote access error (10), the other side names what it saw, one line each, all freed" {
	for mode in pull push; do
		record_baseline
		run_violation "$mode" --violate rkey
		use_output_of "$initiator"
		assert_line --regexp "^--violate +: request 0: using rkey (0x[0-9a-f]+), the peer's pool rkey 0x[0-9a-f]+ plus one, which the peer never handed out$"
		assert_one_error "^error: QP 0: $op of request 0 completed with status remote access error \(10\), vendor error $vendor_err: the peer refused the address or rkey \(see its block table\)$" "$mode"
		use_output_of "$target"
		# Pulled: the decoder left mid-way through the announcements, or after the last, as the
		# prefiller waits for the end.  Pushed: the NAK put the decoder's QP in ERR, and its
		# receives were flushed.
		seen='^error: (request 0: the decoder closed the side channel with [1-4] of 4 layers announced: it has stopped \(killed, or it failed: see its output\)|the peer closed the side channel early \(did it fail\? see its output\))$'
		[ "$mode" = push ] && seen="^error: QP 0: a receive of request 0 completed with status Work Request Flushed Error \\(5\\), vendor error $vendor_err: this QP went to ERR before a WRITE with immediate took it"
		assert_one_error "$seen" "$mode"
		assert_back_to_baseline
	done
}

@test "kv: --violate revoked --windows, pulled and pushed: windows taken back before the go-ahead refuse the first WR with remote access error (10), all freed" {
	for mode in pull push; do
		record_baseline
		run_violation "$mode" --windows --violate revoked
		# The target grants the windows: the prefiller when pulling.
		use_output_of "$target"
		assert_in_order '^--violate +: request 0: this side takes its 16 windows back before the go-ahead: the rkeys it granted name nothing now$' \
			'^IBV_WR_LOCAL_INV +: 16 of 16 windows invalidated, then freed \(ibv_dealloc_mw\)' '^error: '
		assert_one_error '^error: ' "$mode"
		use_output_of "$initiator"
		assert_line --regexp "^windows +: request 0: 16 windows granted by the peer, one per segment"
		assert_one_error "^error: QP 0: $op of request 0 completed with status remote access error \(10\), vendor error $vendor_err: the peer refused the address or rkey" "$mode"
		assert_back_to_baseline
	done
}

# rxe checks a window's rkey, its QP and its access, and then only the range of the MR
# beneath it (check_rkey in rxe_resp.c): a WR past the window's end, inside the MR, goes
# through, on Linux 6.1 and 7.3 alike (both run), so nothing here is gated by kernel.
@test "kv: --violate past_window --windows, pulled and pushed: the initiator's first WR reaches one block past its window, inside the pool's MR, and rxe lets it through: the initiator says the window did not confine it, all freed" {
	rxe_behaviour "rxe checks a window's rkey, QP and access but not its bounds (check_rkey in rxe_resp.c), so a WR past its end goes through; a window is bound to a range, and a device that checks it refuses the WR"
	for mode in pull push; do
		record_baseline
		run_violation "$mode" --windows --violate past_window
		use_output_of "$initiator"
		assert_line --regexp "^windows +: request 0: 16 windows granted by the peer, one per segment"
		assert_line --regexp "^--violate +: request 0: the first $op moves one block on in the peer's pool: its window ends at pool block [0-9]+, and the WR now ends at block [0-9]+, past the window's end, inside the peer's pool MR$"
		ends=$(sed -nE 's/^--violate +: .* its window ends at pool block ([0-9]+), and the WR now ends at block ([0-9]+),.*/\1 \2/p' <<<"$output")
		read -r window_end wr_end <<<"$ends"
		[ "$wr_end" -eq $((window_end + 1)) ] && [ "$wr_end" -lt 64 ] || fail "$mode: the WR ends at block $wr_end, the window at $window_end (pool of 64 blocks)"
		assert_one_error "^error: request 0: the $op that reached one block past the end of its window completed successfully: this device checked the window's rkey, QP and access but not its bounds, so the window did not confine it$" "$mode"
		use_output_of "$target"
		# The window overrun is the one the target bound to its first block, as its table says.
		granted=$(table_of 0 | head -n 1)
		[ "$granted" = "$window_end" ] || fail "$mode: the initiator's window ends at block $window_end, the granting side's first block is '$granted'"
		assert_line 'IBV_WR_LOCAL_INV    : 16 of 16 windows invalidated, then freed (ibv_dealloc_mw): their rkeys open nothing now'
		assert_one_error '^error: ' "$mode"
		assert_back_to_baseline
	done
}
