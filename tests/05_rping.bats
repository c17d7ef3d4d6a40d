#!/usr/bin/env bats
# 05_rping.bats: 05_poll_destroy --peer=rping talks to rdma-core's rping through rdma_cm, in both roles, each side checking the data.

setup() {
	load lib/test_helper
	CM_ADDR=$(rdma_cm_addr)
	CM_PORT=$(pick_port)
}

# rping's own lines "PREFIXping data: rdma-ping-N: ..." for N = 0 .. COUNT-1, in its output file.
assert_rping_pings() {
	local prefix=$1 count=$2 n
	[ "$rping_status" -eq 0 ] || fail "rping failed ($rping_status): $(cat "$BATS_TEST_TMPDIR/rping.out")"
	for ((n = 0; n < count; n++)); do
		grep -qE "^${prefix}ping data: rdma-ping-$n: [A-Za-z]" "$BATS_TEST_TMPDIR/rping.out" || fail "rping printed no ping $n: $(cat "$BATS_TEST_TMPDIR/rping.out")"
	done
	[ "$(grep -c "ping data: rdma-ping-" "$BATS_TEST_TMPDIR/rping.out")" -eq "$count" ] || fail "rping did not make exactly $count pings: $(cat "$BATS_TEST_TMPDIR/rping.out")"
	! grep -q 'data mismatch' "$BATS_TEST_TMPDIR/rping.out" || fail "rping -V found a mismatch"
}

# Waits until rping's server listens (rdma_cm's own view), for at most 4 s times TIME_SCALE.
wait_for_rping_listen() {
	for _ in $(seq 1 $((40 * TIME_SCALE))); do
		rdma resource show cm_id | grep -q "state LISTEN ps TCP .*comm rping" && return 0
		nap 0.1
	done
	fail "rping's server did not listen within $((4 * TIME_SCALE)) s: $(cat "$BATS_TEST_TMPDIR/rping.out")"
}

@test "05_poll_destroy --peer=rping serves rping -c -V, and is the client of rping -s -V: 5 pings each, every byte checked on both sides, at rping's default size when neither side is given one" {
	record_baseline
	# Our server, rping's client: we RDMA READ its pings and check each byte, it checks what we WRITE back.
	# Neither side is given a size: both take rping's default, 64 bytes.
	start_step srv 05_poll_destroy --peer=rping -n 5 -p "$CM_PORT" -t 10
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	rping_status=0
	timeout -k 2 "$STEP_TIMEOUT" rping -c -v -V -C 5 -p "$CM_PORT" -a "$CM_ADDR" >"$BATS_TEST_TMPDIR/rping.out" 2>&1 || rping_status=$?
	finish_step srv "$srv_pid"
	assert_success
	assert_rping_pings "" 5
	assert_line --regexp '^rdma_accept +: rdma_cm moved the QP to RTR and RTS, then sent the REP with 0 bytes of private data$'
	assert_line --regexp '^rping message +: ping 0: read 64 bytes at 0x[0-9a-f]+, rkey 0x[0-9a-f]+$'
	assert_line --regexp '^server ping data +: rdma-ping-4: EFGHIJ'
	assert_line --regexp '^data check +: 5 pings of 64 bytes, each read from rping.s client and checked byte by byte'
	assert_in_order '^ibv_post_recv +: receive posted: up to 16 bytes' '^rdma_accept' 'ESTABLISHED' 'opcode RDMA_READ, status success, 64 bytes' \
		'opcode RDMA_WRITE, status success, 64 bytes' '^data check' 'DISCONNECTED' '^rdma_disconnect +: DREP sent'
	# Stage 4's READ and WRITE go where rping's messages said, not to an address of the exchange.
	read -r addr rkey < <(sed -nE 's/^rping message +: ping 0: read 64 bytes at (0x[0-9a-f]+), rkey (0x[0-9a-f]+)$/\1 \2/p' <<<"$output")
	assert_line "ibv_post_send       : RDMA READ of 64 bytes posted: remote addr $addr, rkey $rkey"
	read -r addr rkey < <(sed -nE 's/^rping message +: ping 0: write 64 bytes at (0x[0-9a-f]+), rkey (0x[0-9a-f]+)$/\1 \2/p' <<<"$output")
	assert_line "ibv_post_send       : RDMA WRITE of 64 bytes posted: remote addr $addr, rkey $rkey"
	# rping's server, our client: it READs our pings and WRITEs them back; we compare, as its -V does.
	timeout -k 2 "$STEP_TIMEOUT" rping -s -v -V -C 5 -p "$CM_PORT" >"$BATS_TEST_TMPDIR/rping.out" 2>&1 &
	rping_pid=$!
	wait_for_rping_listen
	run_step 05_poll_destroy --peer=rping -n 5 -p "$CM_PORT" -t 10 "$CM_ADDR"
	rping_status=0
	wait "$rping_pid" || rping_status=$?
	assert_success
	assert_rping_pings "server " 5
	assert_line --regexp '^access +: remote_read: the ping rping.s server reads: remote_read only$'
	assert_line --regexp '^access +: local_write,remote_write: rping.s sink: its server RDMA WRITEs each ping back here$'
	assert_line --regexp '^ping data +: rdma-ping-4: EFGHIJ'
	assert_line --regexp '^data check +: 5 pings of 64 bytes, each read by the server, written back and compared here'
	assert_line --regexp '^rdma_disconnect +: DREQ sent'
	assert_back_to_baseline
}

@test "05_poll_destroy --peer=rping: a size mismatch, an rdma-steps peer on either side and options rping has no use for end in bounded time, clearly" {
	record_baseline
	# rping's client advertises 100 bytes to our 64-byte server: named, and both end.
	start_step srv 05_poll_destroy --peer=rping -n 5 -s 64 -p "$CM_PORT" -t 10
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	# rping's client is refused by our server, so its own status is that refusal's: the test is of
	# our side's message, below.
	timeout -k 2 "$STEP_TIMEOUT" rping -c -V -C 5 -S 100 -p "$CM_PORT" -a "$CM_ADDR" >"$BATS_TEST_TMPDIR/rping.out" 2>&1 || true
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_output --partial "error: rping advertises 100 bytes where this side has 64: give both sides the same size (-s here, -S to rping)"
	# Our client advertises 4096 bytes to rping's server of the default 64: the likely cause is named.
	timeout -k 2 "$STEP_TIMEOUT" rping -s -C 5 -p "$CM_PORT" >"$BATS_TEST_TMPDIR/rping.out" 2>&1 &
	rping_pid=$!
	wait_for_rping_listen
	run_step 05_poll_destroy --peer=rping -n 5 -s 4096 -p "$CM_PORT" -t 10 "$CM_ADDR"
	# rping's server is reaped, whatever it exits with: the test is of our side's message,
	# and rping's own status for a connection it cut is rping's business.
	wait "$rping_pid" || true
	assert_failure 1
	assert_output --partial "error: rping's server ends the connection when the buffer this side advertises is larger than its own: this side has 4096 bytes (-s), rping has 64 unless given -S; give both the same size"
	# An rdma-steps --cm client at an rping server, and rping's client at an rdma-steps --cm server.
	start_step srv 05_poll_destroy --peer=rping -n 5 -s 64 -p "$CM_PORT" -t 10
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	run_step 04_post_wr --cm -p "$CM_PORT" -t 5 "$CM_ADDR"
	assert_failure 1
	assert_output --partial "error: the server rejected the connection (REJ reason 28, its program's own): this server speaks rping's protocol (--peer=rping): run the client with --peer=rping, or rping -c"
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_output --partial "error: the client sent rdma-steps private data: it is an rdma-steps --cm program, not rping: start this side without --peer=rping"
	start_step srv 03_cq_qp_rts --cm -p "$CM_PORT" -t 10
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	rping_status=0
	timeout -k 2 "$STEP_TIMEOUT" rping -c -C 1 -p "$CM_PORT" -a "$CM_ADDR" >"$BATS_TEST_TMPDIR/rping.out" 2>&1 || rping_status=$?
	[ "$rping_status" -ne 0 ] && grep -q 'RDMA_CM_EVENT_REJECTED, error 28' "$BATS_TEST_TMPDIR/rping.out" || fail "rping was not rejected: $(cat "$BATS_TEST_TMPDIR/rping.out")"
	finish_step srv "$srv_pid"
	assert_failure 1
	# Step 03 knows no later step, so it names no option of step 05's that would speak to rping.
	assert_line 'error: the client'"'"'s private data: no rdma-steps private data (it does not start with "RDCM"): is the peer an rdma-steps program run with --cm?; rejected, with the reason in the REJ'
	# Options rping has no use for, and sizes it cannot take: refused before any device is opened.
	run_step 05_poll_destroy --peer=rping -o write "$CM_ADDR"
	assert_failure 2
	assert_output --partial "error: -o does not go with --peer=rping: rping's protocol is its own"
	run_step 05_poll_destroy --peer=rping -e
	assert_failure 2
	assert_output --partial "error: --events does not go with --peer=rping"
	run_step 05_poll_destroy --peer=rping -s 16
	assert_failure 2
	assert_output --partial "error: --size: rping's buffers are 26 to 65535 bytes (its -S), not 16"
	run_step 05_poll_destroy --peer=rpong
	assert_failure 2
	assert_output --partial "error: --peer: 'rpong' is not a peer this program can speak to; the choices are rc_pingpong and rping"
	assert_back_to_baseline
}
