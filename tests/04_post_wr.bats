#!/usr/bin/env bats
# 04_post_wr.bats: step 04 moves the right bytes with each operation; one-sided ones leave the target's CQ empty.

setup() {
	load test_helper
}

@test "04_post_wr: SEND lands in the receive the target posted first; a small SEND goes inline" {
	record_baseline
	run_server_client 04_post_wr -o send
	[ "$srv_status" -eq 0 ] && [ "$cli_status" -eq 0 ] || fail "server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	use_output_of srv
	assert_line --regexp '^operation +: send, we are the target$'
	# Least privilege: SEND/RECV needs no remote access on either side, so no rkey is sent.
	assert_line --regexp '^access +: local_write: the NIC writes received messages here; no peer may reach this buffer$'
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access none '
	assert_line --regexp '^local buffer +: .*, rkey 0x0$'
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RECV, status success, 4096 bytes$'
	assert_line --regexp '^data check +: 4096 bytes arrived intact$'
	assert_in_order '^ibv_post_recv ' '^ibv_poll_cq .*RECV' '^data check '
	use_output_of cli
	assert_line --regexp '^ibv_post_send +: SEND of 4096 bytes posted: '
	assert_line --regexp '^ibv_poll_cq +: completion: opcode SEND, status success'
	run_server_client 04_post_wr -o send -s 32
	[ "$srv_status" -eq 0 ] && [ "$cli_status" -eq 0 ] || fail "inline run: server $srv_status, client $cli_status"
	use_output_of cli
	assert_line --regexp '^ibv_post_send +: SEND of 32 bytes posted, inline: '
	use_output_of srv
	assert_line --regexp '^data check +: 32 bytes arrived intact$'
	assert_back_to_baseline
}

@test "04_post_wr: RDMA WRITE gives the target no completion; WRITE with immediate gives it one carrying the value" {
	record_baseline
	run_server_client 04_post_wr -o write
	[ "$srv_status" -eq 0 ] && [ "$cli_status" -eq 0 ] || fail "write: server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	use_output_of srv
	assert_line --regexp '^access +: local_write,remote_write: the target of RDMA WRITE: the peer writes into this buffer$'
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access remote_write '
	refute_line --partial 'ibv_post_recv'
	refute_line --regexp '^ibv_poll_cq '
	assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided WRITE does not involve the target.s CPU$'
	assert_line --regexp '^data check +: 4096 bytes arrived intact$'
	use_output_of cli
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RDMA_WRITE, status success'
	run_server_client 04_post_wr -o write_imm --imm 0xdeadbeef
	[ "$srv_status" -eq 0 ] && [ "$cli_status" -eq 0 ] || fail "write_imm: server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	use_output_of srv
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RECV_RDMA_WITH_IMM, status success, 4096 bytes, immediate 0xdeadbeef$'
	assert_line --regexp '^data check +: 4096 bytes arrived intact$'
	# The immediate value belongs to the receiver's completion only, whatever rxe flags on the sender's.
	use_output_of cli
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RDMA_WRITE, status success, 4096 bytes$'
	assert_back_to_baseline
}

@test "04_post_wr: RDMA READ fetches the target's bytes without a completion on the target" {
	record_baseline
	run_server_client 04_post_wr -o read -s 64K
	[ "$srv_status" -eq 0 ] && [ "$cli_status" -eq 0 ] || fail "server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	use_output_of cli
	assert_line --regexp '^access +: local_write: the initiator of RDMA READ: our NIC writes the fetched bytes here; no peer may reach this buffer$'
	assert_line --regexp '^remote buffer +: .*, rkey 0x[0-9a-f]*[1-9a-f][0-9a-f]*$'
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RDMA_READ, status success, 65536 bytes$'
	assert_line --regexp '^data check +: 65536 bytes arrived intact$'
	use_output_of srv
	assert_line --regexp '^access +: remote_read: the target of RDMA READ: the peer reads this buffer, and nothing writes it$'
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access remote_read '
	assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided READ does not involve the target.s CPU$'
	refute_line --regexp '^data check '
	assert_back_to_baseline
}

@test "04_post_wr: a WRITE to a target that did not allow remote_write fails with the completion status saying so" {
	record_baseline
	port=$(pick_port)
	start_step srv 04_post_wr -d "$DEV" -p "$port" -t 20 -o write -a local_write
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	run_step 04_post_wr -d "$DEV" -p "$port" -t 20 -o write 127.0.0.1
	assert_failure 1
	# The target's MR has no rkey (0x0) and its QP takes no remote writes: the responder refuses the request.
	assert_line --regexp '^remote buffer +: addr 0x[0-9a-f]+, length 4096, rkey 0x0$'
	assert_output --partial 'error: completion of work request 2 failed: remote invalid request error (status 9'
	assert_in_order '^ibv_post_send ' '^ibv_destroy_qp ' '^ibv_dereg_mr ' '^ibv_close_device '
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_output --partial 'error: the peer closed the side channel early'
	refute_line --regexp '^data check '
	assert_back_to_baseline
}

@test "04_post_wr: sides given a different -s or -o both stop before posting, naming both" {
	record_baseline
	# Unchecked, a 4096-byte SEND into a 1024-byte receive fails as 'local QP operation error'.
	assert_options_refused 04_post_wr "-o send -s 1K" "-o send -s 1024" "-o send" "-o send -s 4096"
	# Unchecked, a target waiting for a SEND would wait for the client's WRITE until its timeout.
	assert_options_refused 04_post_wr "-o send" "-o send -s 4096" "-o write" "-o write -s 4096"
	assert_back_to_baseline
}

@test "04_post_wr rejects an unknown operation, --events it would not use, and a size no message can carry" {
	run_step 04_post_wr --op=fetch_add
	assert_failure 2
	assert_output "error: --op: unknown operation 'fetch_add'; use send, write, write_imm or read"
	# One SGE's length is 32 bits and the port caps a message: -s 4G would post zero-length work requests.
	record_baseline
	max=$(ibv_devinfo -v -d "$DEV" | awk '$1 == "max_msg_sz:" { print $2 }')
	[ -n "$max" ] || fail "ibv_devinfo -v printed no max_msg_sz for $DEV"
	limit=$((max < 4294967295 ? max : 4294967295))
	run_step 04_post_wr -d "$DEV" -s 4G
	assert_failure 1
	assert_output --partial "error: --size: 4294967296 bytes is more than one message can carry here (port 1's max_msg_sz is $((max)), and a scatter-gather entry's length is 32 bits): give -s at most $limit"
	refute_output --partial 'ibv_reg_mr'
	assert_line --regexp '^ibv_close_device +: '
	assert_back_to_baseline
	run_step 04_post_wr --help
	assert_success
	assert_output --partial "send, write, write_imm or read"
	# Step 04 busy-polls its one completion: a completion channel would be created and never used.
	refute_output --partial -- '--events'
	run_step 04_post_wr -e
	assert_failure 2
	assert_output "error: unknown option '-e'; see 04_post_wr --help"
}
