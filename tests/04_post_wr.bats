#!/usr/bin/env bats
# 04_post_wr.bats: step 04 moves the right bytes with each operation; one-sided ones leave the target's CQ empty.

setup() {
	load lib/test_helper
}

@test "04_post_wr: SEND lands in the receive the target posted first; a small SEND goes inline" {
	record_baseline
	run_server_client 04_post_wr -o send
	assert_both_succeeded
	use_output_of srv
	assert_line --regexp '^operation +: send, we are the target$'
	# Least privilege: SEND/RECV needs no remote access on either side, so no rkey is sent;
	# the receiver's NIC writes its buffer, and the sender's only reads its own, which needs no right.
	assert_line --regexp '^access +: local_write: the target of SEND: our NIC writes the received message here; no peer may reach this buffer$'
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access none '
	assert_line --regexp '^local buffer +: .*, rkey 0x0$'
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RECV, status success, 4096 bytes$'
	assert_line --regexp '^data check +: 4096 bytes arrived intact$'
	assert_in_order '^ibv_post_recv ' '^ibv_poll_cq .*RECV' '^data check '
	use_output_of cli
	assert_line --regexp '^access +: none: the initiator of SEND: our NIC only reads this buffer, which needs no right; no peer may reach it$'
	assert_line --regexp '^ibv_reg_mr +: memory region registered: .*, access none$'
	assert_line --regexp '^ibv_post_send +: SEND of 4096 bytes posted: '
	assert_line --regexp '^ibv_poll_cq +: completion: opcode SEND, status success'
	run_server_client 04_post_wr -o send -s 32
	assert_both_succeeded "inline run"
	use_output_of cli
	assert_line --regexp '^ibv_post_send +: SEND of 32 bytes posted, inline: '
	use_output_of srv
	assert_line --regexp '^data check +: 32 bytes arrived intact$'
	assert_back_to_baseline
}

@test "04_post_wr: RDMA WRITE gives the target no completion; WRITE with immediate gives it one carrying the value; --tclass reaches each side's QP" {
	record_baseline
	# Both devices carry a message of 4096 bytes, no more (the test aid): -s 4096 at the boundary.
	RDMA_STEPS_CAPS=max_msg_sz=4096 run_server_client 04_post_wr -o write --tclass 106
	assert_both_succeeded "write"
	for side in srv cli; do
		use_output_of $side
		assert_line --regexp '^ibv_modify_qp +: INIT -> RTR: .*, traffic class 106 \(DSCP 26, ECN 2\), SL 0, '
		assert_line --regexp '^ibv_query_qp +: state RTS, .*, SL 0, traffic class 106$'
	done
	use_output_of srv
	assert_line --regexp '^access +: local_write,remote_write: the target of RDMA WRITE: the peer writes into this buffer$'
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access remote_write '
	refute_line --partial 'ibv_post_recv'
	refute_line --regexp '^ibv_poll_cq '
	assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided WRITE does not involve the target.s CPU$'
	assert_line --regexp '^data check +: 4096 bytes arrived intact$'
	use_output_of cli
	assert_line --regexp '^access +: none: the initiator of RDMA WRITE: our NIC only reads this buffer, which needs no right; no peer may reach it$'
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RDMA_WRITE, status success'
	run_server_client 04_post_wr -o write_imm --imm 0xdeadbeef
	assert_both_succeeded "write_imm"
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
	assert_both_succeeded
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

@test "04_post_wr: fetch_add and cmp_swap change the target's 8-byte word in one step and bring its old value back" {
	record_baseline
	# A device that does atomics as rxe does (IBV_ATOMIC_HCA), named by the test aid: they run.
	RDMA_STEPS_CAPS=atomic_cap=hca run_server_client 04_post_wr -o fetch_add
	assert_both_succeeded "fetch_add"
	use_output_of srv
	assert_line --regexp '^access +: local_write,remote_atomic: the target of an atomic: '
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access remote_atomic '
	assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided atomic does not involve the target.s CPU$'
	assert_line --regexp '^atomic check +: the 8 bytes at 0x[0-9a-f]+ went from 0x1000 to 0x1024: '
	use_output_of cli
	assert_line --regexp '^ibv_post_send +: ATOMIC fetch_add posted: add 0x24 to the 8 bytes at remote addr 0x[0-9a-f]+, rkey 0x[0-9a-f]*[1-9a-f][0-9a-f]*; '
	assert_line --regexp '^ibv_poll_cq +: completion: opcode FETCH_ADD, status success, 8 bytes$'
	assert_line --regexp '^atomic check +: the old value 0x1000 came back into our buffer$'
	run_server_client 04_post_wr -o cmp_swap -s 8
	assert_both_succeeded "cmp_swap"
	use_output_of srv
	assert_line --regexp '^atomic check +: the 8 bytes at 0x[0-9a-f]+ went from 0x1000 to 0xcafe: '
	use_output_of cli
	assert_line --regexp '^ibv_poll_cq +: completion: opcode COMP_SWAP, status success, 8 bytes$'
	assert_line --regexp '^atomic check +: the old value 0x1000 came back into our buffer$'
	assert_back_to_baseline
	run_step 04_post_wr -d "$DEV" -o fetch_add -s 4
	assert_failure 1
	assert_output --partial "error: --size: an atomic works on 8 bytes, more than the 4 registered: give -s 8 or more"
	run_step 04_post_wr -o atomic_write --cm
	assert_failure 2
	assert_output "error: -o atomic_write is posted through the extended API, on a QP from ibv_create_qp_ex, and rdma_cm makes its own QP: drop --cm"
	run_step 04_post_wr -o write --placement persistent
	assert_failure 2
	assert_output "error: --placement goes with -o flush only: it is the FLUSH's placement type"
	run_step 04_post_wr -o cmp_swap -V rkey
	assert_failure 2
	assert_output "error: --violate works with -o send, write, write_imm or read, not with the atomics or flush"
	run_step 05_poll_destroy -o fetch_add
	assert_failure 2
	assert_output "error: --op: step 05 loops send, write, write_imm or read; the atomics and flush are step 04's"
	assert_back_to_baseline
}

@test "04_post_wr -o atomic_write: refused unless bit 40 of device_cap_flags_ex says the device can; where it can, the target's 8 bytes take the value in one write" {
	record_baseline
	# rxe does ATOMIC WRITE from Linux 6.2: the v6.2 merge window's RDMA pull (2022-12-13)
	# brought Xiao Yang's series, ending in 4cd9f1d320f9 "RDMA/rxe: Enable atomic write
	# capability for rxe device". In the source Debian's linux-source packages ship,
	# drivers/infiniband/sw/rxe/rxe_param.h: 6.12.117's RXE_DEVICE_CAP_FLAGS has
	# IB_DEVICE_ATOMIC_WRITE (bit 40) on 64-bit builds, 6.1.192's has no such flag.
	if kernel_at_least 6 2; then
		run_server_client 04_post_wr -o atomic_write
		assert_both_succeeded
		use_output_of srv
		assert_line --regexp '^device_cap_flags_ex +: 0x[0-9a-f]+: bit 40 \(IB_DEVICE_ATOMIC_WRITE\) set, '
		assert_line --regexp '^access +: local_write,remote_write: the target of ATOMIC WRITE: '
		assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided atomic does not involve the target.s CPU$'
		assert_line --regexp '^atomic check +: the 8 bytes at 0x[0-9a-f]+ went from 0x1000 to 0x1122334455667788: the peer.s NIC wrote all 8 in one store, '
		use_output_of cli
		assert_line --regexp '^access +: none: the initiator of ATOMIC WRITE: '
		assert_line --regexp '^ibv_create_qp_ex +: RC QP 0x[0-9a-f]+ in RESET: .*; send ops ATOMIC_WRITE( |$)'
		assert_line --regexp '^ibv_wr_complete +: ATOMIC WRITE posted: 0x1122334455667788 into the 8 bytes at remote addr 0x[0-9a-f]+, rkey 0x[0-9a-f]*[1-9a-f][0-9a-f]*, '
		assert_line --regexp '^ibv_poll_cq +: completion: opcode ATOMIC_WRITE, status success'
		refute_line --regexp '^atomic check +: the old value'
		assert_back_to_baseline
		return
	fi
	# Linux 6.1's rxe says no: refused on the initiator before anything is registered.
	run_step 04_post_wr -d "$DEV" -o atomic_write 127.0.0.1
	assert_failure 1
	assert_output --partial "error: -o atomic_write asks for ATOMIC WRITE, but $DEV does not do it: bit 40 (IB_DEVICE_ATOMIC_WRITE) of device_cap_flags_ex 0x"
	assert_output --partial " is 0; rxe has it in Linux 6.12 and 7.3, not in 6.1: boot the VM with RDMA_VM_KERNEL=trixie-backports, or use another -o"
	refute_output --partial 'ibv_reg_mr'
	# The check skipped (the test aid): rdma-core 44 builds the WR and takes the post, and the device fails it.
	port=$(pick_port)
	RDMA_STEPS_UNCHECKED=atomic_write start_step srv 04_post_wr -d "$DEV" -p "$port" -t 20 -o atomic_write
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	RDMA_STEPS_UNCHECKED=atomic_write run_step 04_post_wr -d "$DEV" -p "$port" -t 20 -o atomic_write 127.0.0.1
	assert_failure 1
	assert_line --regexp '^RDMA_STEPS_UNCHECKED *: a test aid: bit 40 \(IB_DEVICE_ATOMIC_WRITE\) of [a-z0-9_]+.s device_cap_flags_ex 0x[0-9a-f]+ is 0, '
	assert_line --regexp '^ibv_wr_complete +: ATOMIC WRITE posted: 0x1122334455667788 into the 8 bytes at remote addr '
	# Linux 6.1's rxe does not know opcode 29: the requester fails the WQE as a local QP operation error.
	assert_output --partial 'error: completion of work request 2 failed: local QP operation error (status 2, '
	assert_in_order '^ibv_wr_complete ' '^error: completion of work request 2 failed' '^ibv_destroy_qp '
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_line --regexp '^target word +: the 8 bytes at 0x[0-9a-f]+ hold 0x1000, as before the run: nothing reached them$'
	refute_line --regexp '^atomic check '
	assert_back_to_baseline
}

# Growth of VmRSS in the current output's VmRSS line ("N kB before the first OP, M kB after").
vmrss_growth() {
	local before after
	read -r before after < <(sed -nE 's/^VmRSS +: ([0-9]+) kB before the first [A-Z]+, ([0-9]+) kB after: .*/\1 \2/p' <<<"$output")
	[ -n "$before" ] && [ -n "$after" ] || fail "no VmRSS line in: $output"
	echo $((after - before))
}

# The side of an --odp run whose buffer the bytes land in (OUT: srv or cli), as OP's (WHO: target
# or initiator): 1 MiB registered on demand and untouched, and the NIC's first access faulted in
# every page of it.  On Linux 7.3 the bytes do not land where they belong: rxe's ODP copy
# (__rxe_odp_mr_copy in drivers/infiniband/sw/rxe/rxe_odp.c) maps each page with kmap_local_page()
# and copies to the page's start, never adding the packet's offset in the page; at the path MTU
# of 1024 a page takes four packets, each copied to bytes 0 to 1023, and the last one stays.
assert_odp_landed() { # OUT OP WHO
	local grown
	use_output_of "$1"
	assert_line --regexp '^odp_caps +: general_caps 0x1 \(IBV_ODP_SUPPORT\), RC: [a-z_,]*(write|read)[a-z_,]*$'
	assert_line "odp                 : our buffer, the $3's, is registered on demand and never touched: the $2's bytes land here, in pages that do not exist until the NIC's first access faults them in"
	assert_line --regexp '^buffer +: 1048576 bytes at 0x[0-9a-f]+, aligned to the 4096-byte page, never touched$'
	assert_line --regexp '^access +: [a-z_,]+, on_demand: '
	assert_line --regexp '^VmPin +: 0 kB before, 0 kB after: 0 kB pinned$'
	# The kernel's own view: none of the 256 pages before the first access, all of them after,
	# and VmRSS grown by the buffer's 1024 kB, within two pages.
	assert_line "present pages       : 0 of the buffer's 256 pages before the first $2, 256 after (mincore)"
	grown=$(vmrss_growth)
	[ "$grown" -ge 1016 ] && [ "$grown" -le 1032 ] || fail "VmRSS grew by $grown kB at the first $2 into 1024 kB on demand"
	assert_line --regexp "^data check +: [0-9]+ of 1048576 bytes hold the pattern after the first $2\$"
	assert_line --regexp "^data check +: [0-9]+ of 1048576 bytes hold the pattern, the second $2's\$"
	[ "$(grep -cxF "landing             : 0 of the 256 pages hold their own bytes; page 0, and 255 more alike, holds at its start the 1024 bytes that belong at its offset 3072, and after them 3072 bytes of 0" <<<"$output")" = 2 ] ||
		fail "not both ${2}s' pages landed as rxe's ODP copy puts them: $output"
	assert_line "error: data check: the $2's bytes did not arrive whole (the landing lines above say where they went)"
	assert_in_order '^VmRSS .*before the first' '^present pages ' '^data check .*after the first' '^landing ' '^data check .*the second' '^landing ' '^error: data check'
}

# The side of an --odp run whose buffer holds the bytes to send (OUT), as OP's: pinned, as usual.
assert_odp_pinned() { # OUT OP PEER WHAT
	use_output_of "$1"
	assert_line --regexp '^odp_caps +: general_caps 0x1 \(IBV_ODP_SUPPORT\), RC: '
	assert_line "odp                 : the $3's buffer is registered on demand, where the $2's bytes land; ours holds the bytes to $4, which the CPU writes first, so its pages are there anyway: it is registered pinned, as without --odp"
	refute_line --regexp '^access +: .*on_demand'
	assert_line --regexp '^VmPin +: [0-9]+ kB before, [0-9]+ kB after: 1024 kB pinned$'
	refute_line --regexp '^present pages '
}

# The initiator's times (OUT, OP): both printed, in order, with their ratio; the times themselves vary.
assert_odp_times() { # OUT OP
	use_output_of "$1"
	assert_line --regexp "^first $2 +: 1048576 bytes into pages not mapped yet: [0-9]+ us from the post to its completion\$"
	assert_line --regexp "^second $2 +: the same 1048576 bytes into the same pages, mapped now: [0-9]+ us\$"
	assert_line --regexp "^first touch +: the first $2 took [0-9]+\\.[0-9]{2} times as long as the second, [-+][0-9]+\\.[0-9] us for each of its 256 pages: the faults of the first access, and one run's noise\$"
	assert_in_order "^first $2 " "^second $2 " '^first touch '
}

@test "04_post_wr --odp: on 7.x the first WRITE and the first READ into 1 MiB registered on demand fault in every page (mincore, VmRSS), timed beside a second into the same pages, and land each packet at its page's start; on 6.1 refused naming the kernel that has it" {
	run_step 04_post_wr -o send --odp
	assert_failure 2
	assert_output "error: --odp times the first WRITE or READ into pages registered on demand: use -o write or -o read"
	run_step 04_post_wr -o write --odp --cm
	assert_failure 2
	assert_output "error: --odp stops between its two operations at side-channel barriers, and --cm has no side channel: drop --cm"
	run_step 04_post_wr -o read --odp -V rkey
	assert_failure 2
	assert_output "error: --odp times two operations that succeed, and --violate makes one fail: give one of them"
	record_baseline
	# rxe's ODP for SEND, WRITE and READ came in Linux 6.15 (2fae67ab63db).
	if ! kernel_at_least 6 15; then
		# Refused as step 02 refuses it, on either side: the WRITE's initiator, whose buffer
		# would be pinned, before registering; the READ's, whose buffer is the one on demand, too.
		for op in write read; do
			run_step 04_post_wr -d "$DEV" -o "$op" -s 1M --odp 127.0.0.1
			assert_failure 1
			assert_line --regexp '^odp_caps +: general_caps 0x0, RC: none$'
			assert_output --partial "error: --odp: $DEV does no on-demand paging (odp_caps.general_caps has no IBV_ODP_SUPPORT), so ibv_reg_mr would refuse IBV_ACCESS_ON_DEMAND with EINVAL; rxe has it in Linux 7.3 but not in 6.1 or 6.12: boot the VM with RDMA_VM_KERNEL=trixie-backports, or drop --odp"
			refute_line --regexp '^ibv_reg_mr '
			refute_line --regexp '^odp +:'
			assert_in_order '^ibv_alloc_pd ' '^odp_caps ' '^error: --odp' '^ibv_dealloc_pd '
		done
		assert_back_to_baseline
		return
	fi
	# The WRITE: the target's pages fault in; every completion succeeds, and the bytes land wrong.
	run_server_client 04_post_wr -o write -s 1M --odp
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 0 ] || fail "write: server $srv_status (1: its bytes landed wrong), client $cli_status (0): $(cat "$BATS_TEST_TMPDIR"/*.out)"
	assert_odp_landed srv WRITE target
	assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided WRITE does not involve the target.s CPU$'
	assert_odp_pinned cli WRITE target send
	assert_odp_times cli WRITE
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RDMA_WRITE, status success, 1048576 bytes'
	# The READ: the initiator's pages fault in, as its NIC writes the READ responses there.
	run_server_client 04_post_wr -o read -s 1M --odp
	[ "$srv_status" -eq 0 ] && [ "$cli_status" -eq 1 ] || fail "read: server $srv_status (0), client $cli_status (1: its bytes landed wrong): $(cat "$BATS_TEST_TMPDIR"/*.out)"
	assert_odp_landed cli READ initiator
	assert_odp_times cli READ
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RDMA_READ, status success, 1048576 bytes'
	assert_in_order '^landing ' '^second READ ' '^first touch ' '^error: data check'
	assert_odp_pinned srv READ initiator "be read"
	# One packet, at its page's offset 0: the copy lands it whole.
	run_server_client 04_post_wr -o write -s 1K --odp
	assert_both_succeeded "write of one packet"
	use_output_of srv
	assert_line "data check          : 1024 bytes arrived intact after the first WRITE"
	assert_line "data check          : 1024 bytes arrived intact, the second WRITE's"
	assert_back_to_baseline
}

# The device's counts of retransmission rounds and of QPs that ran out of them.
retry_counters() {
	local dir=/sys/class/infiniband/$DEV/ports/1/hw_counters
	echo "$(<"$dir/completer_retry_err") $(<"$dir/retry_exceeded_err")"
}

# Runs step 04 with --violate KIND -o OP on both sides, which must both exit 0: the
# operation failed as it should and the bytes it aimed at are unchanged.
run_violation() {
	run_server_client 04_post_wr -V "$1" -o "$2"
	assert_both_succeeded "--violate $1 -o $2"
}

# The initiator's side of a violation that moved its QP to ERR: the failed
# completion (status STATUS) of work request 2, how long it took, the state, and
# the same operation posted again as work request 3, flushed.
assert_initiator_error() {
	use_output_of cli
	assert_line --regexp "^ibv_poll_cq +: completion of work request 2 \(send-queue operation\): status $1, vendor error 0x[0-9a-f]+\$"
	assert_line --regexp '^  after +: [0-9]+ ms from the post to this completion$'
	assert_line --regexp '^ibv_query_qp +: state ERR: '
	assert_line --regexp '^posting again +: work request 3 \(send-queue operation posted after the error\): the same [a-z_]+, .*; on a QP in ERR it must complete as flushed, having done nothing$'
	assert_line --regexp '^ibv_poll_cq +: completion of work request 3 \(send-queue operation posted after the error\): status Work Request Flushed Error \(5\), '
	assert_in_order "status $1" '^ibv_query_qp +: state ERR' '^posting again ' '^ibv_post_send ' 'status Work Request Flushed Error' '^ibv_destroy_qp '
}

# The target's side: its QP in STATE (ERR or RTS) and its guarded bytes intact.
assert_target_unchanged() {
	use_output_of srv
	assert_line --regexp "^ibv_query_qp +: state $1: "
	assert_line --regexp '^data check +: 4096 bytes unchanged: '
}

@test "04_post_wr -o flush: refused where verbs.h has no IBV_WR_FLUSH (rdma-core 44); where it has, a WRITE then a FLUSH that completes where bit 38 of device_cap_flags_ex is set, refused where it is 0" {
	if ! verbs_has_flush; then
		# This build cannot post it at all: refused before the device is opened.
		run_step 04_post_wr -d "$DEV" -o flush 127.0.0.1
		assert_failure 1
		assert_output "error: -o flush posts ibv_wr_flush, which the verbs.h this program was built against lacks: FLUSH (IBV_WR_FLUSH, IBV_ACCESS_FLUSH_GLOBAL) came in rdma-core 45, and Debian 12 has 44; rebuild where rdma-core is 45 or later, such as Debian 13 (rdma-core 56), or use another -o"
		return
	fi
	record_baseline
	# rxe's FLUSH came in Linux 6.2, with ATOMIC WRITE (124011e6e933 "RDMA/rxe: Enable RDMA FLUSH
	# capability for rxe device").
	if ! kernel_at_least 6 2; then
		# Linux 6.1's rxe says no: refused on the initiator before anything is registered.
		run_step 04_post_wr -d "$DEV" -o flush 127.0.0.1
		assert_failure 1
		assert_output --partial "error: -o flush --placement global asks for FLUSH, but $DEV does not do it: bit 38 (IB_DEVICE_FLUSH_GLOBAL) of device_cap_flags_ex 0x"
		assert_output --partial " is 0; rxe has it in Linux 6.12 and 7.3, not in 6.1: boot the VM with RDMA_VM_KERNEL=trixie-backports, or use another -o"
		refute_output --partial 'ibv_reg_mr'
		assert_back_to_baseline
		return
	fi
	run_server_client 04_post_wr -o flush
	assert_both_succeeded
	use_output_of srv
	assert_line --regexp '^device_cap_flags_ex +: 0x[0-9a-f]+: bit 38 \(IB_DEVICE_FLUSH_GLOBAL\) set, [a-z0-9_]+ does FLUSH to global visibility$'
	# The target's MR and QP allow the WRITE (remote_write) and the FLUSH (flush_global).
	assert_line --regexp '^access +: local_write,remote_write,flush_global: the target of a WRITE and a FLUSH to global visibility: '
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access remote_write,flush_global '
	assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided WRITE then FLUSH does not involve the target.s CPU$'
	assert_line --regexp '^data check +: 4096 bytes arrived intact$'
	use_output_of cli
	assert_line --regexp '^access +: none: the initiator of a WRITE and a FLUSH: '
	assert_line --regexp '^ibv_create_qp_ex +: RC QP 0x[0-9a-f]+ in RESET: .*; send ops RDMA_WRITE,FLUSH$'
	assert_line --regexp '^ibv_wr_complete +: RDMA WRITE of 4096 bytes and FLUSH posted in one batch: remote addr 0x[0-9a-f]+, rkey 0x[0-9a-f]*[1-9a-f][0-9a-f]*, placement type global, '
	# One completion, the FLUSH's: the WRITE before it asked for none.
	assert_line --regexp '^ibv_poll_cq +: completion: opcode FLUSH, status success'
	refute_line --regexp '^ibv_poll_cq +: completion: opcode RDMA_WRITE'
	assert_line --regexp '^flush +: done: the 4096 bytes at remote addr 0x[0-9a-f]+ that the WRITE placed are visible to every reader of the target.s memory, as the FLUSH.s completion promises; no byte came back$'
	assert_in_order '^ibv_wr_complete ' '^ibv_poll_cq .*FLUSH' '^flush '
	assert_back_to_baseline
	# To persistence: rxe says it can (bit 39), but registers an MR with flush_persistent only on
	# persistent memory (rxe_mr.c, is_pmem_page), and this VM has none: the target stops there.
	run_step 04_post_wr -d "$DEV" -t 5 -o flush --placement persistent
	assert_failure 1
	assert_line --regexp '^device_cap_flags_ex +: 0x[0-9a-f]+: bit 39 \(IB_DEVICE_FLUSH_PERSISTENT\) set, '
	assert_line --regexp '^access +: local_write,remote_write,flush_persistent: '
	assert_line --regexp '^error: ibv_reg_mr failed: Invalid argument'
	assert_line "error: flush_persistent: the kernel accepts it only for memory that keeps its bytes through a power loss (rxe: every page in a persistent-memory region), and this buffer is ordinary memory"
	refute_line --regexp '^listening '
	assert_back_to_baseline
}

@test "04_post_wr -V access: a READ the target's MR and QP do not allow fails, and moves both QPs to ERR" {
	record_baseline
	run_violation access read
	assert_initiator_error 'remote invalid request error \(9\)'
	assert_line --regexp '^data check +: 4096 bytes unchanged: no byte of the refused READ arrived$'
	assert_target_unchanged ERR
	assert_line --regexp '^access +: none: --violate access: the target of RDMA READ, refused remote_read$'
	assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: .*remote access none '
	# rxe returns no completion for a receive posted after the error (Linux 6.1, and 7.3.4 in make test-kernel).
	assert_line --regexp '^ibv_poll_cq +: no completion within 500 ms: this provider does not flush a receive posted after the error'
	assert_back_to_baseline
}

@test "04_post_wr -V rkey and -V past_end: a wrong rkey, or a range one byte past the MR, is a remote access error" {
	record_baseline
	run_violation rkey write_imm
	assert_initiator_error 'remote access error \(10\)'
	rkey=$(field_of "$BATS_TEST_TMPDIR/srv.out" '^local buffer' rkey)
	# The first WRITE carries the rkey plus one, the one after the error the target's own.
	assert_line --regexp '^posting again +: work request 3 \(send-queue operation posted after the error\): the same write_imm, this time with the rkey the target sent; '
	assert_in_order "^ibv_post_send .*, rkey 0x$(printf '%x' $((rkey + 1))), " '^posting again ' "^ibv_post_send .*, rkey 0x$(printf '%x' "$rkey"), "
	assert_target_unchanged ERR
	# The receive a WRITE with immediate would have consumed is flushed when the QP fails.
	assert_line --regexp '^ibv_poll_cq +: completion of work request 1 \(receive\): status Work Request Flushed Error \(5\), '
	assert_line --regexp '^target CQ +: 1 completion\(s\)$'
	use_output_of cli
	assert_line --regexp "^ibv_post_send +: RDMA WRITE of 4096 bytes posted: remote addr 0x[0-9a-f]+, rkey 0x$(printf '%x' $((rkey + 1))), with immediate value\$"
	run_violation past_end write
	assert_initiator_error 'remote access error \(10\)'
	assert_target_unchanged ERR
	addr=$(field_of "$BATS_TEST_TMPDIR/srv.out" '^local buffer' addr)
	use_output_of cli
	assert_line --regexp "^ibv_post_send +: RDMA WRITE of 4096 bytes posted: remote addr 0x$(printf '%x' $((addr + 1))), "
	assert_back_to_baseline
}

@test "04_post_wr -V other_pd: a local buffer registered in another PD fails on the initiator alone" {
	record_baseline
	run_violation other_pd write
	# rxe on 6.1 fails the outgoing payload's lkey as a QP operation error, the incoming READ
	# data's as a protection error. From Linux 6.4 rxe moves the QP to the error state without
	# a status of its own for the WRITE: its completion says flushed, as if it had never run.
	# In rxe_req.c as Debian's linux-source packages ship it, the requester's err: path in
	# 6.1.192 marks the WQE failed and leaves the QP to the completer, which completes that WQE
	# with its own status; in 6.12.117 (and 7.3.4) it calls rxe_qp_error(), and rxe_completer()
	# (rxe_comp.c) flushes every WQE of a QP in ERR. The change is 98e891b5e4d9 "RDMA/rxe:
	# Remove qp->req.state", in the v6.4 merge window's RDMA pull (2023-04-28).
	local lkey_status='local QP operation error \(2\)'
	kernel_at_least 6 4 && lkey_status='Work Request Flushed Error \(5\)'
	assert_initiator_error "$lkey_status"
	assert_line --regexp '^second PD +: the same 4096 bytes registered again in a second PD: lkey 0x[0-9a-f]+, where the QP.s PD knows lkey 0x[0-9a-f]+$'
	assert_in_order '^second PD ' '^ibv_post_send ' "status $lkey_status" '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_query_qp '
	# Nothing left the initiator: the target's QP is still RTS.
	assert_target_unchanged RTS
	assert_line --regexp '^target CQ +: 0 completion\(s\)$'
	run_violation other_pd read
	assert_initiator_error 'local protection error \(4\)'
	assert_line --regexp '^data check +: 4096 bytes unchanged: no byte of the refused READ arrived$'
	assert_back_to_baseline
}

@test "04_post_wr -V short_recv: a SEND larger than the posted receive fails on both sides" {
	record_baseline
	run_violation short_recv send
	assert_initiator_error 'remote operation error \(11\)'
	use_output_of srv
	assert_line --regexp '^ibv_query_qp +: state ERR: '
	# The receive's own bytes are undefined after the error; the bytes past its end must be intact.
	assert_line --regexp "^data check +: [0-9]+ of the receive's 2048 bytes were overwritten: after a failed receive, its buffer's content is undefined\$"
	assert_line --regexp '^data check +: the 2048 bytes past the end of the receive are unchanged: '
	assert_line --regexp '^ibv_post_recv +: receive posted: up to 2048 bytes into '
	assert_line --regexp '^ibv_poll_cq +: completion of work request 1 \(receive\): status local QP operation error \(2\), '
	assert_line --regexp '^target CQ +: 1 completion\(s\)$'
	assert_back_to_baseline
}

@test "04_post_wr -V gone: with no QP to answer, the initiator's retries run out: status 12, as NCCL users meet it" {
	record_baseline
	read -r retries_before exceeded_before <<<"$(retry_counters)"
	run_violation gone write
	assert_initiator_error 'transport retry counter exceeded \(12\)'
	# rxe takes retry_cnt 7 to mean "for ever", so this run asks for 6: 1 + 6 tries of about 67 ms.
	assert_line --regexp '^ibv_modify_qp +: RTR -> RTS: send PSN 0x[0-9a-f]+, timeout 14 .*, retry_cnt 6, rnr_retry 7 '
	ms=$(awk '$1 == "after" { print $3 }' "$BATS_TEST_TMPDIR/cli.out")
	[ -n "$ms" ] && [ "$ms" -ge 400 ] && [ "$ms" -le 5000 ] || fail "status 12 after '$ms' ms, not within 400 to 5000"
	# The device's own count: 6 retransmission rounds, then one QP that gave up.
	read -r retries_after exceeded_after <<<"$(retry_counters)"
	[ $((retries_after - retries_before)) -eq 6 ] && [ $((exceeded_after - exceeded_before)) -eq 1 ] ||
		fail "completer_retry_err went from $retries_before to $retries_after, retry_exceeded_err from $exceeded_before to $exceeded_after (want +6 and +1)"
	use_output_of srv
	assert_in_order '^ibv_destroy_qp +: QP 0x[0-9a-f]+ destroyed' '^gone +: our QP no longer exists' '^data check +: 4096 bytes unchanged$'
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

@test "04_post_wr rejects an unknown operation, --events it would not use, a size no message can carry, and an atomic or a READ the device cannot do" {
	run_step 04_post_wr --op=fetch_and_add
	assert_failure 2
	assert_output "error: --op: unknown operation 'fetch_and_add'; use send, write, write_imm, read, fetch_add, cmp_swap, atomic_write or flush"
	# One SGE's length is 32 bits and the port caps a message: -s 4G would post zero-length work requests.
	record_baseline
	max=$(ibv_devinfo -v -d "$DEV" | awk '$1 == "max_msg_sz:" { print $2 }')
	[ -n "$max" ] || fail "ibv_devinfo -v printed no max_msg_sz for $DEV"
	run_step 04_post_wr -d "$DEV" -s 4G
	assert_failure 1
	assert_output --partial "error: -s 4294967296 asks for 4294967296 bytes in one message, but $DEV allows $((max)) (max_msg_sz of port 1); use -s $((max)) or less"
	refute_output --partial 'ibv_reg_mr'
	assert_line --regexp '^ibv_close_device +: '
	# A device without atomics (the test aid), and one that keeps no READ in flight: refused
	# before anything is registered, on the initiator, naming the option to change.
	RDMA_STEPS_CAPS=atomic_cap=none run_step 04_post_wr -d "$DEV" -o fetch_add 127.0.0.1
	assert_failure 1
	assert_output --partial "error: -o fetch_add asks for remote atomics, but $DEV does none (atomic_cap IBV_ATOMIC_NONE, see ibv_devinfo -v); use another -o: send, write, write_imm or read"
	refute_output --partial 'ibv_reg_mr'
	RDMA_STEPS_CAPS=max_qp_init_rd_atom=0 run_step 04_post_wr -d "$DEV" -o read 127.0.0.1
	assert_failure 1
	assert_output --partial "error: -o read asks for 1 RDMA READ or atomic in flight a QP, but $DEV allows 0 (max_qp_init_rd_atom); use another -o: send, write or write_imm"
	refute_output --partial 'ibv_reg_mr'
	# As the refusal says, that device still WRITEs: its 0 is a figure in stage 3's exchange,
	# not a bad message. An unlowered peer (a second NIC) agrees 0 each way with it, and the
	# bytes arrive.
	port=$(pick_port)
	start_step srv 04_post_wr -d "$DEV" -p "$port" -t 20 -o write
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	RDMA_STEPS_CAPS=max_qp_init_rd_atom=0,max_qp_rd_atom=0 start_step cli 04_post_wr -d "$DEV" -p "$port" -t 20 -o write 127.0.0.1
	cli_status=0 srv_status=0
	wait "$cli_pid" || cli_status=$?
	wait "$srv_pid" || srv_status=$?
	assert_both_succeeded "RDMA_STEPS_CAPS=max_qp_init_rd_atom=0,max_qp_rd_atom=0 on the initiator"
	# rxe serves 128 (rxe_param.h); another NIC its own figure.
	rd=128
	on_rxe || rd='[0-9]+'
	use_output_of cli
	assert_line --regexp "^rd_atomic +: agreed with the peer: 0 of ours in flight \\(we offer 0, it serves up to $rd\\), 0 of its served \\(it offers 1, we serve up to 0\\)\$"
	assert_line --regexp '^ibv_modify_qp +: RTR -> RTS: .*, max_rd_atomic 0$'
	use_output_of srv
	assert_line --regexp "^rd_atomic +: agreed with the peer: 0 of ours in flight \\(we offer 1, it serves up to 0\\), 0 of its served \\(it offers 0, we serve up to $rd\\)\$"
	assert_line --regexp '^data check +: [0-9]+ bytes arrived intact$'
	assert_back_to_baseline
	run_step 04_post_wr --help
	assert_success
	assert_output --partial "send, write, write_imm, read, fetch_add, cmp_swap, atomic_write or flush"
	# Step 04 busy-polls its one completion: a completion channel would be created and never used.
	refute_output --partial -- '--events'
	run_step 04_post_wr -e
	assert_failure 2
	assert_output "error: unknown option '-e'; see 04_post_wr --help"
	run_step 04_post_wr -V rkey -o send
	assert_failure 2
	assert_output "error: --violate rkey needs a one-sided operation (-o write, write_imm or read): a SEND names no remote address or rkey"
	run_step 04_post_wr -V short_recv -o read
	assert_failure 2
	assert_output "error: --violate short_recv needs -o send: only a SEND's bytes land in the receive buffer"
	run_step 04_post_wr --violate=nothing
	assert_failure 2
	assert_output "error: --violate: unknown kind 'nothing'; use access, rkey, past_end, other_pd, short_recv or gone"
}
