#!/usr/bin/env bats
# 07_allreduce.bats: step 07's ring all-reduce: N ranks on one rxe, the sum checked, the credits proved, every failure named by every rank; and the same ring as a library (ring_comm).

bats_require_minimum_version 1.5.0

setup() {
	load lib/test_helper
	load lib/ring
}

@test "07_allreduce: 3 ranks sum 0, 1, 16 (not divisible by 3), 256 and 4096 floats over verbs: the table, the bytes, no RNR NAK, every rank right, all freed; both QPs of each at --tclass 106" {
	record_baseline
	! on_rxe || rnr_before=$(rnr_naks)
	# Devices of 8 WRs a queue and CQs of 16 (the test aid): K = 8 slots at the boundary, and
	# stage 3's queues sized to the device; stage 3's --tclass and --sl on every QP.
	RDMA_STEPS_CAPS=max_qp_wr=8,max_cqe=16 run_ring 3 -t 10 -b 0 --maxbytes 16K -f 16 -n 2 -w 1 --tclass 106 --sl 3
	assert_ring_success
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks)"
	use_output_of r0
	assert_line '#       size         count      type   redop    root     time   algbw   busbw #wrong'
	for row in '0 0' '4 1' '64 16' '1024 256' '16384 4096'; do
		assert_line --regexp "^ +${row% *} +${row#* } +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$"
	done
	# 4096 floats in 3 chunks of 1366, 1365 and 1365: rank r posts all but chunk r in
	# reduce-scatter and all but chunk r+1 in all-gather, so rank 2 and rank 0 skip chunk 0 once.
	assert_line --regexp '^bytes posted +: 21844 to 21848 B per rank per all_reduce of S = 16384 B, against 2\(N-1\)/N x S = 21845.3 B: 4096 elements do not split into 3 equal chunks, so chunk 0 has one element more; all ranks together posted 65536 B = 2\(N-1\) x S, exactly$'
	# rxe's hw_counters names (sent_pkts, send_rnr_err...): a hardware NIC has others, and the line says not readable
	if on_rxe; then
		assert_line --regexp '^device counters +: rxe[0-9]*: sent_pkts \+[1-9][0-9]*, rcvd_pkts \+[1-9][0-9]* over the RDMA sweep \(per device: every rank on this node adds to them\)$'
		assert_line --regexp '^RNR NAKs +: sent \+0, received \+0: no WRITE found its receive missing'
	fi
	assert_line --regexp "^check +: right: every rank's result checked element by element after a run on fresh data: 0 wrong, over 3 ranks and 5 sizes$"
	assert_line --regexp '^rendezvous +: all 3 ranks came; each was sent its neighbours. QPs$'
	# zlib's CRC-32 of the sum of 4096 floats (element i: 6 + 3 x (i mod 13)), computed apart, in Python.
	crc=$(python3 -c 'import array, zlib; print("0x%08x" % zlib.crc32(array.array("f", [6 + 3 * (i % 13) for i in range(4096)]).tobytes()))')
	for k in 0 1 2; do
		use_output_of "r$k"
		assert_line "result crc32        : $crc: zlib's CRC-32 of this rank's 16384-byte result at the largest size, to match another implementation's to the bit"
		assert_line --regexp "^launcher +: none: rank $k of 3, from --rank and --world-size$"
		assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: port 1, pkey index 0, remote access none '
		assert_line --regexp '^ibv_modify_qp +: RESET -> INIT: port 1, pkey index 0, remote access remote_write '
		assert_line --regexp '^ibv_post_send +: credit for slot 7: a SEND with immediate 7 and no bytes, to the previous rank$'
		# Stage 3's --tclass and --sl, on the QP to the next rank and on the one from the previous.
		[ "$(grep -cE '^ibv_modify_qp +: INIT -> RTR: .*, traffic class 106 \(DSCP 26, ECN 2\), SL 3, ' <<<"$output")" -eq 2 ] ||
			fail "rank $k: not both QPs at traffic class 106, SL 3: $(grep 'INIT -> RTR' <<<"$output")"
		[ "$(grep -cE '^ibv_query_qp +: state RTS, .*, traffic class 106$' <<<"$output")" -eq 2 ] || fail "rank $k: a QP does not hold traffic class 106"
		assert_line "queues              : 8 WRs each way, not stage 3's 64: $DEV allows 8 (max_qp_wr)"
		assert_in_order '^ibv_destroy_qp ' '^ibv_destroy_cq ' '^ibv_destroy_qp ' '^ibv_destroy_cq ' '^ibv_dereg_mr ' '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_close_device ' '^teardown +: every object released$'
	done
	# One rank: no ring, no QP, nothing moves; a bus bandwidth of 0, as 2(n-1)/n is 0.
	run_ring 1 -b 0 --maxbytes 4K -f 1024 -n 1 -w 0
	assert_ring_success
	use_output_of r0
	assert_line --regexp '^ +4096 +1024 +float +sum +-1 +[0-9.]+ +[0-9.]+ +0\.000 +0$'
	refute_line --regexp '^ibv_create_qp '
	assert_back_to_baseline
}

@test "07_allreduce: the halves alone on int32, and K = 1 with rank 1 slowed: right, no RNR NAK; 2 ranks still use two QPs each; over TCP too" {
	record_baseline
	! on_rxe || rnr_before=$(rnr_naks)
	run_ring 4 -t 10 -o reduce_scatter --datatype int32 -b 40 --maxbytes 40 --slots 1 --slot-bytes 8 --slow 1:20 -n 2 -w 0
	assert_ring_success
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks)"
	use_output_of r0
	assert_line --regexp '^# reduce_scatter over RDMA \(verbs\): 4 ranks, int32, K = 1 slots of C = 8 bytes$'
	assert_line --regexp '^ +40 +10 +int32 +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$'
	assert_line --regexp "^check +: right: "
	run_ring 2 -t 10 -o all_gather --transport both -b 4K --maxbytes 4K -n 2 -w 0
	assert_ring_success
	use_output_of r0
	assert_line --regexp '^# all_gather over TCP: 2 ranks, float, K = 8 slots of C = 65536 bytes$'
	[ "$(grep -cE '^ +4096 +1024 +float +sum +-1 .* 0$' <<<"$output")" -eq 2 ] || fail "not one row per transport: $output"
	assert_line --regexp '^bytes posted +: each rank 2048 B per all_gather of S = 4096 B; \(N-1\)/N x S = 2048 B: exact \(S is 2 chunks of 512 whole elements\)$'
	assert_line --regexp '^rdma/tcp 4096 B +: time [0-9.]+ / [0-9.]+ us = [0-9.]+; CPU of this rank per run: rdma [0-9.]+ us, tcp [0-9.]+ us$'
	use_output_of r1
	[ "$(grep -c '^ibv_create_qp ' <<<"$output")" -eq 2 ] || fail "rank 1 of 2 did not create two QPs: $output"
	assert_line --regexp '^tcp ring +: connected: to rank 0 at 127.0.0.1 port [0-9]+, from rank 0$'
	assert_back_to_baseline
}

@test "07_allreduce failures: a rank that never comes, other options, one rank twice, more slots than the device holds or a slot longer than its port's messages, a rank killed mid-run: every rank, two hops away too, names it within the bound, all freed" {
	record_baseline
	SKIP_RANK=2
	run_ring 3 -t 2
	assert_all_name 2 "it never came to the rendezvous within $((2 * TIME_SCALE)) s" 9
	unset SKIP_RANK
	RANK_ARGS_2="--datatype int32" run_ring 3 -t 5
	assert_all_name 2 "it was given other options than rank 0: -o all_reduce --datatype int32 .*; the first that differs: its --datatype int32, rank 0's --datatype float\$" 15
	RANK_ARGS_2="--rank 1" run_ring 3 -t 5
	assert_all_name 1 "two processes claim rank 1" 15
	# Rank 2 comes 3 s after rank 1's other options: rank 0 still tells it whom to blame.
	RANK_ARGS_1="--datatype int32" RANK_DELAY_2=3 run_ring 3 -t 5
	assert_all_name 1 "it was given other options than rank 0: -o all_reduce --datatype int32 " 15
	# More slots than the device's queues hold (the test aid): every rank refuses them after
	# stage 1, before it registers anything, naming the option.
	RDMA_STEPS_CAPS=max_qp_wr=4 run_ring 2 -t 5
	assert_all_refused "error: --slots 8 asks for 8 receive WRs a QP (one for each slot's WRITE or credit), but $DEV allows 4 (max_qp_wr); use --slots 4 or less"
	# A CQ too small for a send and a receive each slot: refused the same way, naming max_cqe.
	RDMA_STEPS_CAPS=max_cqe=8 run_ring 2 -t 5
	assert_all_refused "error: --slots 8 asks for 16 CQ entries a QP (a send and a receive for each slot), but $DEV allows 8 (max_cqe); use --slots 4 or less"
	# A slot longer than the port's largest message: a piece is one WRITE.
	RDMA_STEPS_CAPS=max_msg_sz=16384 run_ring 2 -t 5
	assert_all_refused "error: --slot-bytes 65536 asks for 65536 bytes in one message (a piece, one WRITE), but $DEV allows 16384 (max_msg_sz of port 1); use --slot-bytes 16384 or less"
	assert_back_to_baseline
	# Killed between two of its WRITEs: rank 0 sees its connection close, and tells ranks 2 and 3.
	start_ring 4 -t 3 -b 64K --maxbytes 64K -n 100000 -w 0
	for k in 0 1 2 3; do wait_for_line "$BATS_TEST_TMPDIR/r$k.out" '^== stage 7' 30; done
	nap 0.5
	kill_rank_and_assert_named 1 11
}

# A stranger on rank 0's port: a hello built by hand, naming rank -1 (0xffffffff on the wire)
# and then rank 128, which no job holds (JOB_MAX_RANKS).  Rank 0 refuses each as it decodes
# it, before any array is indexed by it, and goes on: rank 1 never comes, and it says so.
@test "07_allreduce: a hello naming rank -1 or 128, which no job holds, is refused as rank 0 decodes it; rank 0 goes on, names the rank that never came and frees everything" {
	record_baseline
	SKIP_RANK=1
	start_ring 2 -t 3
	# One Python for both hellos, started beside rank 0 and dialling until its port listens:
	# under emulation on a loaded machine a Python start took over a second, and two in turn
	# after the "listens" line once outlasted rank 0's 3 s wait.
	python3 - "$RING_PORT" >"$BATS_TEST_TMPDIR/hellos.out" 2>&1 <<'PY' &
import socket, struct, sys, time
port = int(sys.argv[1])
# runtime/ctl_msg.c: magic, version 2, type 'H', two zero bytes, then rank, world, port,
# failed rank (big-endian); 48 + 448 bytes of text + 2 exchange messages of 96 + 8: 696.
for rank in (0xffffffff, 128):
    msg = bytearray(696)
    msg[0:8] = b"RDAR" + bytes([2, ord("H"), 0, 0])
    msg[8:24] = struct.pack(">IIII", rank, 2, 0, 0)
    for _ in range(200):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except ConnectionRefusedError:
            time.sleep(0.05)
    else:
        sys.exit(f"rank {rank}'s hello: nothing listened on port {port} within 10 s")
    with s:
        s.sendall(msg)
    print(f"sent rank {rank}'s hello")
PY
	hellos=$!
	finish_ring
	wait "$hellos" || fail "the hand-built hellos were not sent: $(cat "$BATS_TEST_TMPDIR/hellos.out")"
	use_output_of r0
	[ "${ring_status[0]}" -eq 1 ] || fail "rank 0 exited with ${ring_status[0]}, not 1: $output"
	assert_line 'error: a rendezvous message with a bad rank (rank -1, world size 2, failed rank 0, peer 0): a job holds ranks 0 to 127'
	assert_line 'error: a rendezvous message with a bad rank (rank 128, world size 2, failed rank 0, peer 0): a job holds ranks 0 to 127'
	assert_line --regexp "^error: rank 1: it never came to the rendezvous within $((3 * TIME_SCALE)) s"
	assert_line --regexp '^teardown +: every object released$'
	assert_back_to_baseline
}

# bats test_tags=outside-vm
@test "07_allreduce --schedule: the ring's plan, run on the CPU, equals the plain sum for 1 to 8 ranks, odd counts, every collective and type" {
	for n in 1 2 3 4 5 6 7 8; do
		for count in 0 1 $((n - 1)) $((n + 1)) 1000 1001; do
			for op in all_reduce reduce_scatter all_gather; do
				for dt in float int32; do
					run "$BIN/07_allreduce" --schedule --world-size "$n" -b $((4 * count)) --maxbytes $((4 * count)) -o "$op" --datatype "$dt" --slot-bytes 12
					[ "$status" -eq 0 ] || fail "N=$n, $count elements, $op, $dt: $output"
				done
			done
		done
	done
	run "$BIN/07_allreduce" --schedule --world-size 3 -b 40 --maxbytes 40 --slot-bytes 8
	assert_success
	assert_line --regexp '^step 0 rank 0 +: sends chunk 2 \(elements 7 to 10, 2 pieces\) to rank 1, which adds it in$'
	assert_line --regexp '^step 2 rank 0 +: sends chunk 0 \(elements 0 to 4, 2 pieces\) to rank 1, which copies it$'
	assert_line --regexp '^rank 1 +: posts 56 bytes in 8 pieces, takes 8$'
	assert_line --regexp '^reference check +: all_reduce of 10 float elements on 3 ranks, pieces of 2: 0 wrong \(every rank equals the plain CPU sum\)$'
}

# bats test_tags=outside-vm
@test "07_allreduce: the rank from each launcher's variables, the innermost first, and what is missing" {
	run "$BIN/07_allreduce" -t 1 --help
	assert_success
	assert_output --partial 'the innermost launcher wins (srun running torchrun:'
	run env RANK=1 WORLD_SIZE=4 SLURM_PROCID=0 SLURM_NTASKS=2 MASTER_ADDR=10.0.0.1 "$BIN/07_allreduce" -t 1
	assert_line --index 0 --regexp '^launcher +: torchrun: rank 1 of 4, from RANK and WORLD_SIZE$'
	assert_line --index 1 --regexp '^rendezvous +: rank 0 at 10.0.0.1, TCP port 18515 '
	run env OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=3 SLURM_PROCID=0 SLURM_NTASKS=1 "$BIN/07_allreduce"
	assert_failure 2
	assert_line --index 0 --regexp '^launcher +: Open MPI: rank 2 of 3, from OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE$'
	assert_line --index 1 "error: rank 2: no address for rank 0's rendezvous: give it as HOST or set MASTER_ADDR (torchrun sets it; with mpirun add -x MASTER_ADDR=HOST)"
	run env PMI_RANK=1 PMI_SIZE=2 "$BIN/07_allreduce" -t 1 somehost
	assert_line --index 0 --regexp '^launcher +: MPICH: rank 1 of 2, from PMI_RANK and PMI_SIZE$'
	run env SLURM_PROCID=3 SLURM_NTASKS=4 MASTER_ADDR=h "$BIN/07_allreduce" -t 1
	assert_line --index 0 --regexp '^launcher +: Slurm: rank 3 of 4, from SLURM_PROCID and SLURM_NTASKS$'
	run "$BIN/07_allreduce"
	assert_failure 2
	assert_output --partial 'error: no rank: give --rank R --world-size N, or run under torchrun, mpirun or srun'
	run "$BIN/07_allreduce" --rank 1
	assert_failure 2
	assert_output 'error: give --rank and --world-size together, or neither (then a launcher'\''s variables give them)'
}

# Starts N ranks of tests/peers/ring_comm_sum.py (step 07's library through ctypes) on a
# fresh port, as p0 ..., each given ARGS... after the port and device, or LIB_ARGS_k's words.
start_lib_ranks() {
	local n=$1 k port args
	shift
	port=$(pick_port)
	for ((k = 0; k < n; k++)); do
		args=LIB_ARGS_$k
		# shellcheck disable=SC2086
		RANK=$k WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 timeout -k 2 60 python3 "$PROJECT_ROOT/tests/peers/ring_comm_sum.py" \
			"$port" "$DEV" ${!args:-"$@"} >"$BATS_TEST_TMPDIR/p$k.out" 2>&1 &
		eval "p${k}_pid=$!"
	done
}

# The CRC-32 of the sum over 3 ranks of step 07's input (element i: 6 + 3 x (i mod 13)), as array TYPE.
sum_crc() {
	python3 -c 'import array, sys, zlib; print("%08x" % zlib.crc32(array.array(sys.argv[1], [6 + 3 * (i % 13) for i in range(int(sys.argv[2]))]).tobytes()))' "$@"
}

@test "07_allreduce as a library (ring_comm via ctypes): 3 ranks join, sum 40000 float32 and int32 in place in 3 runs of the staging buffer, a bad dtype refused, leave; other options named; all freed" {
	record_baseline
	start_lib_ranks 3 40000
	for k in 0 1 2; do
		pid=p${k}_pid
		wait "${!pid}" || fail "rank $k exited with $?: $(cat "$BATS_TEST_TMPDIR/p$k.out")"
		use_output_of "p$k"
		assert_line "joined: rank $k of 3"
		assert_line "sum float32: 40000 elements, 0 wrong, crc32 $(sum_crc f 40000)"
		assert_line "sum int32: 40000 elements, 0 wrong, crc32 $(sum_crc i 40000)"
		assert_line "dtype 7: refused: ring_comm_allreduce: dtype 7: give RING_COMM_FLOAT32 (0) or RING_COMM_INT32 (1)"
		assert_line "leave: 0 releases failed"
		# Quiet unless asked: no heading and no verb line of step 07's in a host program's output.
		refute_line --regexp '^(== |ibv_)'
	done
	assert_back_to_baseline
	# Rank 2 brings a staging buffer of another size: every rank's join fails, naming it.
	LIB_ARGS_2="16 131072" start_lib_ranks 3 16 65536
	for k in 0 1 2; do
		pid=p${k}_pid
		status=0
		wait "${!pid}" || status=$?
		use_output_of "p$k"
		[ "$status" -eq 1 ] || fail "rank $k exited with $status, not 1: $output"
		assert_line --regexp '^ring_comm_join failed: rank 2: it was given other options than rank 0: -o all_reduce --datatype float -b 131072 --maxbytes 131072 '
	done
	assert_back_to_baseline
}
