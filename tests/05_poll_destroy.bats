#!/usr/bin/env bats
# 05_poll_destroy.bats: step 05 moves many messages, by busy polling and by events, reports perftest-style numbers, and frees it all.

setup() {
	load lib/test_helper
}

# Fails unless the latency line's min <= median <= p99 and all are positive numbers.
assert_latency_ordered() {
	local line
	line=$(grep -E '^latency \(us\) +: ' <<<"$output") || fail "no latency line"
	awk '{ gsub(/,/, ""); for (i = 1; i <= NF; i++) v[$i] = $(i + 1)
	       exit !(v["min"] > 0 && v["min"] <= v["median"] && v["median"] <= v["p99"] && v["average"] >= v["min"]) }' \
		<<<"$line" || fail "latency figures out of order: $line"
}

@test "05_poll_destroy: a SEND ping-pong by busy polling checks every message, reports latency and bandwidth, and frees all" {
	record_baseline
	run_server_client 05_poll_destroy -n 200
	assert_both_succeeded
	use_output_of cli
	# Each side: 200 receives, and its SENDs of messages 0, 32, ..., 192 and 199, the
	# only ones that ask for a completion: 208.
	assert_line --regexp '^results +: 200 x send of 4096 bytes$'
	assert_line --regexp '^latency \(us\) +: min [0-9.]+, median [0-9.]+, average [0-9.]+, p99 [0-9.]+ \(half the round trip\)$'
	assert_latency_ordered
	assert_line --regexp '^bandwidth +: [0-9.]+ MB/s, [0-9]+ messages/s$'
	assert_line --regexp '^completions +: 208, every one success \(busy polling: no events; ibv_poll_cq makes no system call\)$'
	assert_line --regexp '^iterations +: the first shown above; 199 more run quietly$'
	use_output_of srv
	assert_line --regexp '^data check +: 200 messages of 4096 bytes, every one arrived intact$'
	assert_line --regexp '^completions +: 208, every one success'
	assert_in_order '^ibv_destroy_qp ' '^ibv_destroy_cq ' '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_close_device ' '^teardown +: every object released$'
	assert_back_to_baseline
}

@test "05_poll_destroy --recover: a QP in ERR goes back through RESET, INIT, a new exchange, RTR and RTS, and carries on" {
	record_baseline
	run_server_client 05_poll_destroy -R -o write_imm -n 50
	assert_both_succeeded
	use_output_of cli
	assert_line --regexp '^ibv_post_send +: RDMA WRITE of 1 bytes posted, inline: remote addr 0x[0-9a-f]+, rkey 0x[0-9a-f]+$'
	assert_line --regexp '^ibv_poll_cq +: completion of work request 2 \(send-queue operation\): status remote access error \(10\), '
	for side in cli srv; do
		use_output_of "$side"
		assert_in_order '^ibv_modify_qp +: RTR -> RTS' '^== recovery drill' '^ibv_query_qp +: state ERR: ' \
			'^ibv_get_async_event +: ' '^ibv_modify_qp +: ERR -> RESET: ' '^ibv_modify_qp +: RESET -> INIT: ' \
			'^side channel +: exchanging again: the same QPN, a new PSN$' '^ibv_modify_qp +: INIT -> RTR: ' \
			'^ibv_modify_qp +: RTR -> RTS: ' '^ibv_query_qp +: state RTS' '^== stages 4 and 5'
		# The second exchange carries the same QPN and a new PSN, which the peer then uses.
		f=$BATS_TEST_TMPDIR/$side.out
		grep -E '^local QP ' "$f" | sed -E 's/.*QPN (0x[0-9a-f]+), PSN (0x[0-9a-f]+).*/\1 \2/' >"$BATS_TEST_TMPDIR/$side.local"
		mapfile -t local_qp <"$BATS_TEST_TMPDIR/$side.local"
		[ "${#local_qp[@]}" -eq 2 ] || fail "$side showed ${#local_qp[@]} local QP lines, not 2"
		[ "${local_qp[0]% *}" = "${local_qp[1]% *}" ] || fail "$side: the QPN changed: ${local_qp[*]}"
		[ "${local_qp[0]#* }" != "${local_qp[1]#* }" ] || fail "$side: the PSN did not change: ${local_qp[*]}"
	done
	use_output_of cli
	assert_line --regexp '^results +: 50 x write_imm of 4096 bytes$'
	use_output_of srv
	assert_line --regexp '^data check +: immediate values 0 to 49 arrived in order; the last message.s 4096 bytes are intact$'
	assert_back_to_baseline
	run_step 05_poll_destroy -R --peer=rc_pingpong
	assert_failure 2
	assert_output "error: --recover needs an rdma-steps peer: ibv_rc_pingpong cannot exchange addresses a second time"
}

@test "05_poll_destroy: event mode completes the same transfers, arming and acknowledging every event, with no RNR NAK" {
	record_baseline
	! on_rxe || rnr_before=$(rnr_naks)
	run_server_client 05_poll_destroy -n 200 --events
	assert_both_succeeded
	# A sleeping target still posts its next receive before it replies: no SEND is refused.
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks): a SEND found no receive posted"
	# Each side shows its first sleep: its arming, then its waking, in the shown round or,
	# if a poll found that round's completions before or just after the arming, after the
	# quiet loop, naming the completion it slept for (poller.c's show_quiet_first_sleep):
	# the loop itself prints nothing.  The event counts say both slept.
	for side in cli srv; do
		use_output_of "$side"
		assert_line --regexp '^completions +: 208, every one success; [1-9][0-9]* completion events, each acknowledged$'
		assert_in_order '^ibv_create_comp_channel *:' '^ibv_req_notify_cq +: CQ armed' '^ibv_get_cq_event +: ' '^ibv_destroy_cq ' '^ibv_destroy_comp_channel *:' '^ibv_close_device '
		after_loop=$(grep -A1 '^iterations ' <<<"$output" | tail -n 1)
		[[ $after_loop =~ ^(memory|results|data\ check)\  ]] || fail "the quiet loop printed: $after_loop"
	done
	use_output_of srv
	assert_line --regexp '^data check +: 200 messages of 4096 bytes, every one arrived intact$'
	use_output_of cli
	assert_latency_ordered
	assert_back_to_baseline
}

@test "05_poll_destroy: WRITE with immediate numbers every message; WRITE and READ leave the target's CQ empty" {
	record_baseline
	# The kernel's count of RNR NAKs: a WRITE that found no receive posted and had to be retried.
	! on_rxe || rnr_before=$(rnr_naks)
	run_server_client 05_poll_destroy -n 100 -o write_imm --events
	assert_both_succeeded "write_imm"
	use_output_of srv
	assert_line --regexp "^data check +: immediate values 0 to 99 arrived in order; the last message's 4096 bytes are intact$"
	assert_line --regexp '^completions +: 100, every one success; '
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks): a WRITE with immediate found no receive posted"
	assert_line --regexp '^ibv_post_recv +: 64 receives posted in one call, a chain of work requests: each up to 4096 bytes into '
	# A target whose device holds 16 WRs a queue (the test aid), the initiator's 64: stage 3
	# sizes the target's queues to its device, the target posts 16 receives and sends that
	# count first, and the initiator never sends past it: 16, 32 and the last, 40.
	port=$(pick_port)
	RDMA_STEPS_CAPS=max_qp_wr=16 start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 20 -n 40 -o write_imm
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 05_poll_destroy -d "$DEV" -p "$port" -t 20 -n 40 -o write_imm 127.0.0.1
	finish_step cli "$cli_pid"
	assert_success
	assert_line --regexp '^credits +: 3 count\(s\) read from the target, the last 40; the longest wait for one [0-9.]+ ms$'
	finish_step srv "$srv_pid"
	assert_success
	assert_line "queues              : 16 WRs each way, not stage 3's 64: $DEV allows 16 (max_qp_wr)"
	assert_line --regexp '^ibv_post_recv +: 16 receives posted in one call, '
	assert_line --regexp "^data check +: immediate values 0 to 39 arrived in order; the last message's 4096 bytes are intact$"
	assert_line --regexp '^credits +: 3 count\(s\) sent to the initiator, the last 40: '
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks): a WRITE with immediate found no receive posted on the smaller target"
	run_server_client 05_poll_destroy -n 100 -o write -s 1K
	assert_both_succeeded "write"
	use_output_of srv
	assert_line --regexp '^target CQ +: 0 completion\(s\) after 100 one-sided operations$'
	assert_line --regexp '^data check +: the last of 100 writes left 1024 intact bytes$'
	use_output_of cli
	assert_line --regexp '^results +: 100 x write of 1024 bytes$'
	assert_line --regexp '^completions +: 100, every one success'
	run_server_client 05_poll_destroy -n 100 -o read
	assert_both_succeeded "read"
	use_output_of srv
	assert_line --regexp '^target CQ +: 0 completion\(s\) after 100 one-sided operations$'
	use_output_of cli
	assert_line --regexp '^latency \(us\) +: .* \(post to completion\)$'
	assert_back_to_baseline
}

# Kills DEAD's program (not the timeout that runs it) once the pair is in its loop; SURVIVOR
# must then end within 5 s, having found the side channel closed.
assert_peer_found_gone() { # DEAD SURVIVOR
	local dead_pid=${1}_pid survivor_pid=${2}_pid start
	wait_for_line "$BATS_TEST_TMPDIR/$2.out" '^iterations +: '
	pkill -KILL -P "${!dead_pid}"
	start=$SECONDS
	finish_step "$2" "${!survivor_pid}"
	assert_failure 1
	assert_line 'error: the peer closed the side channel during the run: it has stopped, and no completion will come'
	[ $((SECONDS - start)) -lt $((5 * TIME_SCALE)) ] || fail "$2 took $((SECONDS - start)) s to give up (the 10 s limit, not the side channel)"
	assert_line --regexp '^teardown +: every object released$'
}

@test "05_poll_destroy: a peer that dies mid-run is found gone through the side channel, busy-polled or event-driven" {
	record_baseline
	# The client dies; the server, busy polling, is waiting for its next message.
	start_long_run
	assert_peer_found_gone cli srv
	# The server dies; the client, asleep on its completion channel, is waiting for a reply.
	start_long_run -e
	assert_peer_found_gone srv cli
	assert_back_to_baseline
}

@test "05_poll_destroy: SIGTERM mid-run, or a failure in stage 2, still releases every object in order" {
	record_baseline
	# remote_write without local_write: ibv_reg_mr refuses it, and stage 1 is released with the closing line.
	run_step 05_poll_destroy -d "$DEV" -a remote_write
	assert_failure 1
	assert_output --partial 'error: ibv_reg_mr failed: Invalid argument (errno 22)'
	assert_in_order '^ibv_alloc_pd ' '^ibv_dealloc_pd ' '^ibv_close_device ' '^teardown +: every object released$'

	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 20 -n 1000000 -e
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 05_poll_destroy -d "$DEV" -p "$port" -t 20 -n 1000000 127.0.0.1
	wait_for_line "$BATS_TEST_TMPDIR/cli.out" '^iterations +: '
	# Signal the programs themselves, not the timeouts that run them, both in one go: a side
	# signalled later could find its peer already gone through the side channel, and end first.
	pkill -TERM -P "$cli_pid,$srv_pid"
	for side in cli srv; do
		pid_var=${side}_pid
		finish_step "$side" "${!pid_var}"
		assert_failure 1
		assert_output --partial "error: stopped by SIGTERM: releasing what this program created, in reverse order"
		assert_in_order '^ibv_destroy_qp ' '^ibv_destroy_cq ' '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_close_device ' '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "05_poll_destroy: sides given a different -n stop before posting, naming both" {
	record_baseline
	assert_options_refused 05_poll_destroy "-n 100" "-o send -s 4096 -n 100" "-n 200" "-o send -s 4096 -n 200"
	assert_back_to_baseline
}

@test "05_poll_destroy --depth: WRs stay in flight, one in every N/2 signalled, no other completion, the data intact" {
	record_baseline
	! on_rxe || rnr_before=$(rnr_naks)
	run_server_client 05_poll_destroy -o write -s 64K -n 200 -D 16
	assert_both_succeeded "write"
	use_output_of cli
	assert_line --regexp '^pipeline +: up to 16 work requests in flight; a completion asked for once in every 8 and on the last, the rest unsignalled$'
	assert_line --regexp '^results +: 200 x write of 65536 bytes, up to 16 in flight$'
	assert_line --regexp '^signalling +: 25 completions for 200 work requests: '
	assert_line --regexp '^bandwidth +: [0-9.]+ MB/s, [0-9]+ messages/s$'
	assert_line --regexp '^initiator CQ +: 0 completion\(s\) left after the last signalled one'
	assert_line --regexp '^completions +: 25, every one success'
	refute_line --regexp '^latency '
	use_output_of srv
	assert_line --regexp '^data check +: the last of 200 writes left 65536 intact bytes$'
	# An odd depth, the last WR signalled on its own, a SEND stream the target takes without
	# answering, and 64 in flight (the whole send queue) of inline WRITEs with immediate.
	run_server_client 05_poll_destroy -o send -s 2K -n 101 -D 3 --events
	assert_both_succeeded "send"
	use_output_of cli
	assert_line --regexp '^signalling +: 51 completions for 101 work requests: '
	use_output_of srv
	assert_line --regexp "^data check +: 101 messages of 2048 bytes arrived; the last one's bytes are intact$"
	assert_line --regexp '^completions +: 101, every one success; '
	# Devices of 64 WRs a queue and a CQ of 128 (the test aid): --depth 64 at the boundary.
	RDMA_STEPS_CAPS=max_qp_wr=64,max_cqe=128 run_server_client 05_poll_destroy -o write_imm -s 32 -n 1000 -D 64
	assert_both_succeeded "write_imm"
	use_output_of cli
	assert_line --regexp '^ibv_post_send +: RDMA WRITE of 32 bytes posted, inline: '
	assert_line --regexp '^signalling +: 32 completions for 1000 work requests: '
	# 64 receives first, their count sent first, then 936 more, counted to the initiator 16 at
	# a time and at the last.
	assert_line --regexp '^credits +: 60 count\(s\) read from the target, the last 1000; the longest wait for one [0-9.]+ ms$'
	use_output_of srv
	assert_line --regexp "^data check +: immediate values 0 to 999 arrived in order; the last message's 32 bytes are intact$"
	assert_line --regexp '^credits +: 60 count\(s\) sent to the initiator, the last 1000: '
	run_server_client 05_poll_destroy -o read -s 8K -n 50 -D 4
	assert_both_succeeded "read"
	use_output_of cli
	assert_line --regexp '^signalling +: 25 completions for 50 work requests: '
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks): a message found no receive posted"
	assert_back_to_baseline
}

@test "05_poll_destroy --depth: a target stopped mid-run meets no message without a receive: the initiator waits for its credits" {
	record_baseline
	! on_rxe || rnr_before=$(rnr_naks)
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 20 -o send -s 64 -n 20000 -D 64
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 05_poll_destroy -d "$DEV" -p "$port" -t 20 -o send -s 64 -n 20000 -D 64 127.0.0.1
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^iterations '
	# Stopped, the target replaces no receive: its 64 are used up within 64 messages, and then
	# only the credits keep the initiator from sending into an RNR NAK.
	pkill -STOP -P "$srv_pid"
	nap 1
	pkill -CONT -P "$srv_pid"
	finish_step cli "$cli_pid"
	assert_success
	assert_line --regexp '^credits +: 1247 count\(s\) read from the target, the last 20000; the longest wait for one ([0-9]+)\.[0-9] ms$'
	[[ $output =~ longest\ wait\ for\ one\ ([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 500 ] ||
		fail "the initiator never waited half a second for a credit while the target was stopped for 1 s"
	finish_step srv "$srv_pid"
	assert_success
	assert_line --regexp '^credits +: 1247 count\(s\) sent to the initiator, the last 20000: '
	assert_line --regexp "^data check +: 20000 messages of 64 bytes arrived; the last one's bytes are intact$"
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks): a message found no receive posted"
	assert_back_to_baseline
}

@test "05_poll_destroy --depth: out of range, or with ibv_rc_pingpong, is refused before any verb; past the device's queue or CQ, before anything is registered" {
	run "$BIN/05_poll_destroy" -D 65
	assert_failure 2
	assert_output --partial '--depth'
	assert_output --partial '65'
	run "$BIN/05_poll_destroy" -D 0
	assert_failure 2
	run "$BIN/05_poll_destroy" -D 4 --peer=rc_pingpong
	assert_failure 2
	assert_output 'error: --depth goes with an rdma-steps peer: ibv_rc_pingpong answers each message before the next, one at a time'
	# More in flight than the device's queue, or than its CQ can complete (the test aid): refused
	# after stage 1 has read the limits, before anything is registered, never shrunk.
	record_baseline
	RDMA_STEPS_CAPS=max_qp_wr=32 run_step 05_poll_destroy -d "$DEV" -D 64 127.0.0.1
	assert_failure 1
	assert_output --partial "error: --depth 64 asks for 64 send WRs a QP, but $DEV allows 32 (max_qp_wr); use --depth 32 or less"
	refute_output --partial 'ibv_reg_mr'
	RDMA_STEPS_CAPS=max_cqe=127 run_step 05_poll_destroy -d "$DEV" -D 64 127.0.0.1
	assert_failure 1
	assert_output --partial "error: --depth 64 asks for 128 CQ entries (a completion for each of its send WRs and as many receives), but $DEV allows 127 (max_cqe); use --depth 63 or less"
	assert_back_to_baseline
}
