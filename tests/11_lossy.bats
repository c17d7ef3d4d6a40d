#!/usr/bin/env bats
# 11_lossy.bats: step 11 moves a buffer over UC QPs in chunks of one path MTU and resends only the chunks its receiver's bitmap lacks (chunks dropped on purpose), beside the same transfer over RC; bad input and a peer gone, each named once.

setup() {
	load lib/test_helper
}

# Fails unless FILE (srv or cli) has exactly one "error:" line, and it matches REGEX.
assert_one_error() { # NAME REGEX
	local errors
	errors=$(grep '^error: ' "$BATS_TEST_TMPDIR/$1.out" || true)
	[ "$(grep -c . <<<"$errors")" -eq 1 ] && [[ $errors =~ $2 ]] ||
		fail "$1: expected one error line matching '$2', got: ${errors:-none}; all: $(cat "$BATS_TEST_TMPDIR/$1.out")"
}

@test "11_lossy over UC on 2 paths, the sender at --tclass 106, chunks 3, 17 and 40 taken as lost on the first pass: the receiver's bitmap has those holes and no completion fails, exactly they are sent again, every byte right; the window read off max_cqe" {
	record_baseline
	# The device seen with a CQ of 33 entries (RDMA_STEPS_CAPS): a window of 32 receives a
	# path for 64 chunks a path, so they are posted again as they are taken.  A timer of 500 ms:
	# on a loaded machine a window can wait 50 ms for credit, and end its round early.
	# The sender's packets in the class NCCL_IB_TC 106 names, on the session's QP and on both
	# paths; the receiver gives none, and its own packets go in class 0 (each side sets its own).
	RDMA_STEPS_CAPS=max_cqe=33 run_two_sides 11_lossy "-s 128K --paths 2 --rto-ms 500 --tclass 106" "-s 128K --paths 2 --rto-ms 500 --drop-chunks 3,17,40"
	assert_both_succeeded
	use_output_of srv
	[ "$(grep -cE '^ibv_modify_qp .*INIT -> RTR( \(UC\))?: .*, traffic class 106 \(DSCP 26, ECN 2\), SL 0' <<<"$output")" -eq 3 ] ||
		fail "the sender's 3 QPs are not all in traffic class 106: $output"
	use_output_of cli
	[ "$(grep -cE '^ibv_modify_qp .*INIT -> RTR( \(UC\))?: .*, traffic class 0 \(DSCP 0, ECN 0\), SL 0' <<<"$output")" -eq 3 ] ||
		fail "the receiver's 3 QPs are not all in traffic class 0: $output"
	for side in srv cli; do
		use_output_of "$side"
		refute_output --partial 'error:'
		assert_line --regexp '^ibv_create_qp +: UC QP 0x[0-9a-f]+ in RESET: '
		assert_line --regexp '^ibv_modify_qp +: RTR -> RTS \(UC\): send PSN 0x[0-9a-f]+; no ACK timeout and no retries'
		assert_line 'summary             : uc over 2 paths, 128 chunks of 1024 bytes: sent again 3 chunks (3072 bytes), rounds 2, check right'
	done
	use_output_of cli
	assert_line --regexp '^receive window +: 32 receives posted ahead on each path \(1024 wanted; this device.s CQ holds at most max_cqe 33 completions'
	for chunk in 3 17 40; do
		assert_line "drop test           : chunk $chunk came and is taken as lost (--drop-chunks): its bit stays clear and its bytes are overwritten, as if the packet had never come"
	done
	# The UC rule: the chunks are missing, and nothing failed or said so.
	assert_line 'SACK                : answering round 1: 125 of 128 chunks in, 3 missing (3, 17, 40); no completion failed and nothing said a packet was lost: UC drops in silence'
	assert_in_order '^drop test .* chunk 40 ' '^SACK +: answering round 1: ' '^SACK +: every chunk in \(128 of 128\) in round 2: the final SACK$'
	assert_line 'arrivals            : 131 WRITEs with immediate taken: 3 taken as lost by the test, 0 duplicates; 1 asks answered'
	use_output_of srv
	assert_line 'window              : the receiver keeps 32 receives posted on each path: at most that many WRITEs unconsumed a path'
	assert_line --regexp '^round +: 1: 128 WRITEs posted over 2 UC paths in [0-9.]+ ms, every one completed here: UC.s completion says a packet left this NIC, not that it arrived$'
	assert_line 'SACK                : round 1 asked after the 500 ms timer and answered: 125 of 128 chunks in; 3 missing (3, 17, 40): round 2 sends only them again'
	assert_line --regexp '^ibv_post_send +: round 2, path 0: a chain of 3 WRITEs with immediate from chunk 3 on, '
	assert_line --regexp '^round +: 2: 3 WRITEs posted over 2 UC paths in '
	assert_back_to_baseline
}

@test "11_lossy over RC on 3 paths: one round, nothing sent again, every byte right" {
	record_baseline
	run_server_client 11_lossy -s 128K --qp-type rc --paths 3
	assert_both_succeeded "rc"
	for side in srv cli; do
		use_output_of "$side"
		[ "$(grep -c '^ibv_create_qp .*: RC QP ' <<<"$output")" -eq 4 ] || fail "$side: not 4 RC QPs (the control QP and 3 data QPs): $output"
		refute_line --regexp '^ibv_create_qp .*: UC QP '
		refute_output --partial 'asked after'
		assert_line 'summary             : rc over 3 paths, 128 chunks of 1024 bytes: sent again 0 chunks (0 bytes), rounds 1, check right'
	done
	use_output_of srv
	assert_line --regexp '^round +: 1: 128 WRITEs posted over 3 RC paths in [0-9.]+ ms, every one completed here: RC.s completion comes with the receiver.s ACK$'
	assert_back_to_baseline
}

@test "11_lossy refuses bad input before any WR: an unknown --qp-type, --paths 0, --retry-cnt 8, --qp-timeout 0, --drop-chunks over RC or past the last chunk, --plane without -d, twice, as -d, over 8 paths or not here, other options on the two sides" {
	record_baseline
	run_step 11_lossy -d "$DEV" --qp-type xx
	assert_failure 2
	assert_output "error: --qp-type: unknown QP type 'xx'; use uc or rc"
	run_step 11_lossy -d "$DEV" --paths 0
	assert_failure 2
	assert_output "error: --paths: '0' is not a whole number from 1 to 8"
	run_step 11_lossy -d "$DEV" --retry-cnt 8
	assert_failure 2
	assert_output "error: --retry-cnt: '8' is not a whole number from 0 to 7"
	run_step 11_lossy -d "$DEV" --qp-timeout 0
	assert_failure 2
	assert_output "error: --qp-timeout: '0' is not a whole number from 1 to 31"
	run_step 11_lossy -d "$DEV" --qp-type rc --drop-chunks 3
	assert_failure 2
	assert_output "error: --drop-chunks stands for packets a UC QP loses; over RC the transport resends a lost packet itself and the program never sees a hole: leave --drop-chunks out, or use --qp-type uc"
	run_step 11_lossy -d "$DEV" --drop-chunks 3,x
	assert_failure 2
	assert_output "error: --drop-chunks: '3,x' is not a list of chunk numbers such as 3,17,40"
	# Planes: -d names plane 0; each --plane a device of its own; every plane's paths fit.
	run_step 11_lossy --plane "$DEV"
	assert_failure 2
	assert_output "error: --plane $DEV: give -d too, the device of plane 0 (where the control QP goes): with planes, which device is which must be said on both sides"
	run_step 11_lossy -d "$DEV" --plane "$DEV"
	assert_failure 2
	assert_output "error: --plane $DEV: that device is plane 0's already (-d): each plane needs a device of its own, on a network of its own ('rdma link show' lists them)"
	run_step 11_lossy -d "$DEV" --plane rxe_b --plane rxe_b
	assert_failure 2
	assert_output "error: --plane rxe_b: that device is plane 1's already: each plane needs a device of its own, on a network of its own ('rdma link show' lists them)"
	run_step 11_lossy -d "$DEV" --plane rxe_b --paths 5
	assert_failure 2
	assert_output "error: --paths 5 on each of 2 planes is 10 data QPs; at most 8: give a smaller --paths"
	# A device that is not here is found when the plane is opened: after stage 3, before any connection.
	run_step 11_lossy -d "$DEV" --plane rxe_nosuch
	assert_failure 1
	[ "$(grep -c '^error: ' <<<"$output")" = 1 ] || fail "not one error line: $output"
	assert_line --regexp "^error: --plane rxe_nosuch: no RDMA device of that name; devices present: .*$DEV.*\. Give --plane the device on that plane's network \('rdma link show' lists each with its netdev\)$"
	refute_line --regexp '^listening '
	assert_line --regexp '^teardown +: every object released$'
	# A chunk past the last is known once the path MTU is: the receiver stops, the sender finds it gone.
	run_two_sides 11_lossy "-s 64K" "-s 64K --drop-chunks 64"
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	assert_one_error cli '^error: --drop-chunks: chunk 64 is past the last chunk, 63: the buffer holds chunks 0 to 63$'
	assert_one_error srv '^error: the peer closed the side channel early'
	for side in srv cli; do
		use_output_of "$side"
		refute_output --partial 'ibv_post_'
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_options_refused 11_lossy "--paths 1" "-s 1048576 --qp-type uc --paths 1" "--paths 2" "-s 1048576 --qp-type uc --paths 2"
	assert_back_to_baseline
}

# Starts a transfer whose round 1 loses chunk 3 and whose timer is 10 s, and waits until
# the sender is in that timer: a peer killed then is killed mid-transfer.
start_in_timer() {
	local port
	port=$(pick_port)
	start_step srv 11_lossy -d "$DEV" -p "$port" -t 20 -s 64K --rto-ms 10000
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 11_lossy -d "$DEV" -p "$port" -t 20 -s 64K --rto-ms 10000 --drop-chunks 3 127.0.0.1
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^round +: 1: '
	wait_for_line "$BATS_TEST_TMPDIR/cli.out" '^drop test '
}

# Kills DEAD's program (not the timeout that runs it); SURVIVOR must end within 3 s, in one line naming it.
assert_peer_gone() { # DEAD SURVIVOR REGEX
	local dead_pid=${1}_pid survivor_pid=${2}_pid start
	pkill -KILL -P "${!dead_pid}"
	wait "${!dead_pid}" || true # killed on purpose: its status is the kill's
	start=$SECONDS
	finish_step "$2" "${!survivor_pid}"
	[ $((SECONDS - start)) -le $((3 * TIME_SCALE)) ] || fail "$2 took $((SECONDS - start)) s to end"
	assert_failure 1
	assert_one_error "$2" "$3"
	assert_line --regexp '^teardown +: every object released$'
}

@test "11_lossy: a peer killed mid-transfer, either side, is named by the other in one line within 3 s, and nothing is leaked" {
	record_baseline
	start_in_timer
	# 64 chunks are fewer than a quarter of the window: no credit SACK came before the kill.
	assert_peer_gone cli srv '^error: round 1: the receiver closed the side channel with 0 of 64 chunks in \(it had sent no SACK yet\): it has stopped \(killed, or it failed: see its output\)$'
	start_in_timer
	assert_peer_gone srv cli '^error: round 1: the sender closed the side channel with 63 of 64 chunks in: it has stopped \(killed, or it failed: see its output\)$'
	assert_back_to_baseline
}
