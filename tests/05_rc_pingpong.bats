#!/usr/bin/env bats
# 05_rc_pingpong.bats: 05_poll_destroy --peer=rc_pingpong talks to rdma-core's ibv_rc_pingpong, in both roles.

setup() {
	load lib/test_helper
	GIDX=$(sysfs_ipv4_mapped_gid_index "$DEV")
	[ -n "$GIDX" ] || fail "no IPv4-mapped RoCE v2 GID on $DEV for ibv_rc_pingpong's -g"
}

# Runs our 05_poll_destroy server and ibv_rc_pingpong as its client, with the same ARGS.
# With STOP_PEER_MID_RUN set, ibv_rc_pingpong is stopped for a while mid-run (stop_peer_mid_run).
ours_serve_rc_pingpong() {
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 20 --peer=rc_pingpong "$@"
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	timeout -k 2 "$STEP_TIMEOUT" ibv_rc_pingpong -d "$DEV" -g "$GIDX" -p "$port" "$@" 127.0.0.1 \
		>"$BATS_TEST_TMPDIR/rc.out" 2>&1 &
	rc_pid=$!
	[ -z "${STOP_PEER_MID_RUN:-}" ] || stop_peer_mid_run srv "$rc_pid"
	rc_status=0
	wait "$rc_pid" || rc_status=$?
	finish_step srv "$srv_pid"
}

# Runs ibv_rc_pingpong as the server and our 05_poll_destroy as its client, with the same ARGS.
# With STOP_PEER_MID_RUN set, ibv_rc_pingpong is stopped for a while mid-run (stop_peer_mid_run).
rc_pingpong_serves_ours() {
	port=$(pick_port)
	timeout -k 2 "$STEP_TIMEOUT" ibv_rc_pingpong -d "$DEV" -g "$GIDX" -p "$port" "$@" \
		>"$BATS_TEST_TMPDIR/rc.out" 2>&1 &
	rc_pid=$!
	start_step cli 05_poll_destroy -d "$DEV" -p "$port" -t 20 --peer=rc_pingpong "$@" 127.0.0.1
	[ -z "${STOP_PEER_MID_RUN:-}" ] || stop_peer_mid_run cli "$rc_pid"
	finish_step cli "$cli_pid"
	rc_status=0
	wait "$rc_pid" || rc_status=$?
}

# Stops ibv_rc_pingpong (the child of PEER_PID, a timeout) for half a second as soon as OURS has
# its connection line, before the first message.  Our CQ is then surely empty for a while, so an
# event-driven run must arm it and sleep until an event.  Without the stop, on a loaded machine,
# each reply may already be in the CQ when we look (a .ci/run here saw "53, every one success;
# 0 completion events"); a stop at our "iterations" line came after the whole run had ended.
stop_peer_mid_run() { # OURS PEER_PID
	wait_for_line "$BATS_TEST_TMPDIR/$1.out" '^received line +: '
	pkill -STOP -P "$2" || fail "ibv_rc_pingpong had ended before it could be stopped: $(cat "$BATS_TEST_TMPDIR/rc.out")"
	nap 0.5
	pkill -CONT -P "$2"
}

# ibv_rc_pingpong's own report: it ran ITERS iterations, and its peer was the QPN we printed as ours.
assert_rc_pingpong_agrees() {
	local iters=$1 our_qpn=$2 rc_out
	rc_out=$(cat "$BATS_TEST_TMPDIR/rc.out")
	[ "$rc_status" -eq 0 ] || fail "ibv_rc_pingpong failed ($rc_status): $rc_out"
	grep -qE "^$iters iters in [0-9.]+ seconds" <<<"$rc_out" || fail "ibv_rc_pingpong did not report $iters iterations: $rc_out"
	grep -qE "remote address: +LID 0x[0-9a-f]+, QPN $our_qpn," <<<"$rc_out" || fail "ibv_rc_pingpong's peer is not our QP $our_qpn: $rc_out"
}

@test "05_poll_destroy --peer=rc_pingpong serves ibv_rc_pingpong: 4096 bytes busy-polled, 1024 bytes event-driven" {
	record_baseline
	ours_serve_rc_pingpong -n 50
	assert_success
	assert_line --regexp '^received line +: "[0-9a-f]{4}:[0-9a-f]{6}:[0-9a-f]{6}:[0-9a-f]{32}"$'
	assert_line --regexp '^data check +: 50 messages of 4096 bytes each; '
	assert_line --regexp '^completions +: 53, every one success \(busy polling'
	assert_rc_pingpong_agrees 50 "$(field_of "$BATS_TEST_TMPDIR/srv.out" '^local QP' QPN)"
	STOP_PEER_MID_RUN=1 ours_serve_rc_pingpong -n 2000 -s 1024 -e
	assert_success
	assert_line --regexp '^data check +: 2000 messages of 1024 bytes each; '
	assert_line --regexp '^completions +: 2064, every one success; [1-9][0-9]* completion events, each acknowledged$'
	assert_rc_pingpong_agrees 2000 "$(field_of "$BATS_TEST_TMPDIR/srv.out" '^local QP' QPN)"
	assert_back_to_baseline
}

@test "05_poll_destroy --peer=rc_pingpong as the client of ibv_rc_pingpong: 4096 bytes busy-polled, 64 bytes event-driven" {
	record_baseline
	rc_pingpong_serves_ours -n 50
	assert_success
	assert_line --regexp '^results +: 50 x send of 4096 bytes$'
	assert_line --regexp '^completions +: 53, every one success \(busy polling'
	assert_rc_pingpong_agrees 50 "$(sed -nE 's/^local QP +: QPN (0x[0-9a-f]+),.*/\1/p' <<<"$output")"
	STOP_PEER_MID_RUN=1 rc_pingpong_serves_ours -n 2000 -s 64 -e
	assert_success
	assert_line --regexp '^ibv_post_send +: SEND of 64 bytes posted, inline: '
	assert_line --regexp '^results +: 2000 x send of 64 bytes$'
	assert_line --regexp '^completions +: 2064, every one success; [1-9][0-9]* completion events'
	assert_rc_pingpong_agrees 2000 "$(sed -nE 's/^local QP +: QPN (0x[0-9a-f]+),.*/\1/p' <<<"$output")"
	assert_back_to_baseline
}

@test "05_poll_destroy --peer=rc_pingpong: a size or MTU mismatch or a malformed line ends in bounded time, clearly" {
	record_baseline
	# ibv_rc_pingpong sends 2048 bytes into our 4096-byte receives: we say so and stop.
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 20 --peer=rc_pingpong -n 20
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	timeout -k 2 "$STEP_TIMEOUT" ibv_rc_pingpong -d "$DEV" -g "$GIDX" -p "$port" -n 20 -s 2048 127.0.0.1 \
		>"$BATS_TEST_TMPDIR/rc.out" 2>&1 &
	rc_pid=$!
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_output --partial "error: the peer sent 2048 bytes where this side expects 4096: give both sides the same -s"
	assert_line --regexp '^teardown +: every object released$'
	# Left without a peer, ibv_rc_pingpong would wait until its timeout: stop it now.
	stop_background "$rc_pid"
	# Different -m: the line carries no MTU, so neither side can tell. rxe on 6.1 accepts
	# the larger packets and the run ends normally; from Linux 6.2 rxe checks each packet
	# against the path MTU (689c5421bfe0 "RDMA/rxe: Fix incorrect responder length checking")
	# and refuses the first 2048-byte SEND: our receive completes with remote invalid
	# request (9), and ibv_rc_pingpong fails. Either way our side states its path MTU.
	# What happens to the larger packets is rxe's (each kernel's) answer: a hardware NIC
	# drops them or refuses them with a vendor error of its own, so only rxe's is asserted.
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 20 --peer=rc_pingpong -n 20 -m 1024
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	rc_status=0
	timeout -k 2 "$STEP_TIMEOUT" ibv_rc_pingpong -d "$DEV" -g "$GIDX" -p "$port" -n 20 -m 2048 127.0.0.1 \
		>"$BATS_TEST_TMPDIR/rc.out" 2>&1 || rc_status=$?
	finish_step srv "$srv_pid"
	if on_rxe && kernel_at_least 6 2; then
		assert_failure 1
		assert_line 'error: completion of work request 1 failed: remote invalid request error (status 9, vendor error 0x0)'
		[ "$rc_status" -ne 0 ] || fail "ibv_rc_pingpong -m 2048 succeeded against -m 1024 on $(uname -r): $(cat "$BATS_TEST_TMPDIR/rc.out")"
	elif on_rxe; then
		assert_success
	fi
	assert_line --regexp '^path MTU +: 1024, from -m: ibv_rc_pingpong does not send its MTU, so give both sides the same -m$'
	assert_line --regexp '^remote QP +: QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID [0-9a-f:.]+, LID 0x0000, MTU not sent$'
	assert_line --regexp '^ibv_modify_qp +: INIT -> RTR: path MTU 1024 \(ours: the peer sent none\), '
	assert_line --regexp '^ibv_query_qp +: state RTS, path MTU 1024, '
	! on_rxe || kernel_at_least 6 2 || [ "$rc_status" -eq 0 ] || fail "ibv_rc_pingpong -m 2048 failed ($rc_status): $(cat "$BATS_TEST_TMPDIR/rc.out")"
	# A line that is not ibv_rc_pingpong's.
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 10 --peer=rc_pingpong
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	exec 5<>"/dev/tcp/127.0.0.1/$port"
	# 51 characters and a NUL: the right length, the wrong content.
	printf '%-51s\0' 'lid:qpn:psn:this-is-not-a-gid-at-all-just-words' >&5
	finish_step srv "$srv_pid"
	exec 5>&-
	assert_failure 1
	assert_output --partial "error: the peer's line is not in ibv_rc_pingpong's format LLLL:QQQQQQ:PPPPPP:<32 hex digits of GID>"
	assert_output --partial '"lid:qpn:psn:this-is-not-a-gid-at-all-just-words'
	# 52 bytes with no NUL, and a terminal escape: never read past the line, never echoed raw.
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 10 --peer=rc_pingpong
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	exec 5<>"/dev/tcp/127.0.0.1/$port"
	printf '\033[31m%047d' 0 >&5
	finish_step srv "$srv_pid"
	exec 5>&-
	assert_failure 1
	assert_line --regexp '^received line +: "\?\[31m0{46}"$'
	assert_output --partial "error: the peer's line is not in ibv_rc_pingpong's format"
	refute_output --partial $'\033'
	# Our own exchange, sent to a server that expects ibv_rc_pingpong's line.
	run_two_sides 05_poll_destroy "--peer=rc_pingpong" ""
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	use_output_of srv
	assert_output --regexp "error: the peer's line is not in ibv_rc_pingpong's format .*; got \"RDST\?\?\": that is our own exchange; start this side without --peer=rc_pingpong"
	# ibv_rc_pingpong without -g sends LID 0 and an all-zero GID: no address at all on RoCE.
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 10 --peer=rc_pingpong
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	rc_status=0
	timeout -k 2 $((10 * TIME_SCALE)) ibv_rc_pingpong -d "$DEV" -p "$port" 127.0.0.1 >"$BATS_TEST_TMPDIR/rc.out" 2>&1 || rc_status=$?
	[ "$rc_status" -ne 0 ] || fail "ibv_rc_pingpong without -g ran: $(cat "$BATS_TEST_TMPDIR/rc.out")"
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_output --partial "error: the peer's line gives LID 0 and an all-zero GID, nothing to reach it by: run ibv_rc_pingpong with -g INDEX"
	refute_output --partial 'INIT -> RTR'
	# ibv_rc_pingpong's client against our server started without --peer=rc_pingpong.
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 10
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	timeout -k 2 "$STEP_TIMEOUT" ibv_rc_pingpong -d "$DEV" -g "$GIDX" -p "$port" 127.0.0.1 \
		>"$BATS_TEST_TMPDIR/rc.out" 2>&1 &
	rc_pid=$!
	finish_step srv "$srv_pid"
	# ibv_rc_pingpong reads the first 52 bytes of our message as its line, connects its QP to
	# nonsense and then waits for ever (it has no timeout): stop it once our side has ended.
	stop_background "$rc_pid"
	grep -q ' iters in ' "$BATS_TEST_TMPDIR/rc.out" && fail "ibv_rc_pingpong completed against our exchange message: $(cat "$BATS_TEST_TMPDIR/rc.out")"
	assert_failure 1
	assert_output --partial "error: the peer's exchange message does not start with \"RDST\": it is ibv_rc_pingpong's line (LLLL:QQQQQQ:...): start 05_poll_destroy with --peer=rc_pingpong to speak to it"
	assert_back_to_baseline
}

@test "05_poll_destroy --peer=rc_pingpong refuses what ibv_rc_pingpong cannot do" {
	run_step 05_poll_destroy --peer=rc_pingpong -o write
	assert_failure 2
	assert_output "error: --peer=rc_pingpong speaks SEND/RECV only: ibv_rc_pingpong sends no address or rkey, so it never does one-sided operations"
	run_step 05_poll_destroy --peer=perftest
	assert_failure 2
	assert_output --partial "error: --peer: 'perftest' is not a peer this program can speak to"
	run_step 05_poll_destroy -m 1024
	assert_failure 2
	assert_output --partial "error: --mtu goes with --peer=rc_pingpong only"
	run_step 05_poll_destroy --peer=rc_pingpong -m 1000
	assert_failure 2
	assert_output "error: --mtu: 1000 is not an RDMA MTU; use 256, 512, 1024, 2048 or 4096"
}
