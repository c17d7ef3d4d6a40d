#!/usr/bin/env bats
# 10_weight_sync.bats: step 10's weight sync: 2 trainers and one replica of --tp 2 on one rxe, the plan's summary, every serving rank's slices checked byte for byte each round, the signal words, all freed; --way all, the push beside the gather to rank 0 and the same runs over TCP, each checked, a table a round; --serve-dtype fp8, converted on the way through staging slots, every FP8 byte checked; BF16 to E4M3 against a table of known pairs (on the host); a bad option refused; a device smaller than it needs refused, naming the limit; a buffer length a peer lies about refused; a trainer killed mid-update named by every rank, the replica still on its whole version.

bats_require_minimum_version 1.5.0

setup() {
	load lib/test_helper
	load lib/ring
}

# A model of 2.9 MB: Llama-3 8B's shapes at D = 128, 2 layers.
SMALL=(--trainers 2 --tp 2 --model-dim 128 --layers 2)

@test "10_weight_sync: 2 trainers push 3 versions of a 2.9 MB model into a replica of --tp 2: the plan once, its summary, WRITE chains and a FETCH_ADD per trainer and serving rank, every byte checked after each flip, the served version whole while the next lands, all freed, within 10 s" {
	record_baseline
	RING_STEP=10_weight_sync run_ring 4 -t 10 "${SMALL[@]}" --updates 3 --seed 7
	assert_ring_success
	[ "$RING_SECONDS" -le $((10 * TIME_SCALE)) ] || fail "the run took $RING_SECONDS s"
	use_output_of r0
	assert_line "model size          : 21 tensors, 1452672 elements = 13 x D^2 x 2 layers + 2 x 4008 x D + (2 x 2 + 1) x D, BF16: 2905344 B (the full model: 8,030,261,248 elements, 16.06 GB)"
	assert_line "plan pairs          : B from rank s to rank d (s>d): 0>2 1378944 B (262 runs), 0>3 74368 B (261 runs), 1>2 74368 B (261 runs), 1>3 1378944 B (262 runs)"
	assert_line "plan summary        : 4 pairs, 1046 runs, 2906624 B a version (1 replica, each the model's 2905344 B and its norms again on each of its 2 ranks); busiest sender rank 0 1453312 B, busiest receiver rank 2 1453312 B; the slowest rank moves 1453312 B"
	for v in 1 2 3; do
		assert_line --regexp "^round +: $v: version $v whole in 1 replica: 2906624 B checked on 2 serving ranks, 0 wrong; the slowest trainer pushed in [0-9.]+ ms\$"
	done
	for k in 0 1; do
		use_output_of "r$k"
		assert_line "QPs                 : 2 here, 8 in the job: one per trainer and serving rank, T x S = 2 x 2; no QP between two trainers or two serving ranks"
		assert_line --regexp "^access +: local_write: our NIC reads our shard"
		assert_line "buffers             : every serving rank's address, length and rkey taken once, here, each length the plan's: no update asks for them again"
		for v in 1 2 3; do
			assert_line --regexp "^ibv_post_send +: version $v to rank [23]: runs [0-9]+ to [0-9]+, [0-9]+ WRITEs? of [0-9]+ B into its buffer $((v % 2)), unsignalled, then FETCH_ADD \\+1 on its word for rank $k, signalled: its last chain\$"
			assert_line --regexp "^push +: version $v: 1453312 B in 523 WRITEs, 34 posts \\(each a chain, its last WR signalled\\), 2 FETCH_ADDs, 34 completions, in [0-9.]+ ms\$"
		done
		assert_line --regexp '^teardown +: every object released$'
	done
	for k in 2 3; do
		use_output_of "r$k"
		assert_line --regexp "^role +: rank $k serves: replica 0, TP rank $((k - 2)) of 2; its slice is 1453312 B"
		assert_line --regexp "^access +: local_write,remote_write,remote_atomic: the trainers WRITE our slices"
		for v in 1 2 3; do
			assert_line "signals             : version $v: the words of all 2 trainers read $v: every run of it is in buffer $((v % 2)), no receive posted"
		done
		assert_line "check               : round 1: version 1 in buffer 1: all 1453312 B of our slices right, byte for byte as the plan says"
		assert_line "check               : round 2: version 2 in buffer 0: all 1453312 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
		assert_line "check               : round 3: version 3 in buffer 1: all 1453312 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
		refute_line --regexp '^ibv_post_send '
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "10_weight_sync --way all: each round the plan's push, the gather to trainer rank 0 then its WRITEs to the replica, and the same runs over TCP, each checked byte for byte on both serving ranks from a cleared buffer; a table a round: gather's busiest sender is rank 0 with the whole version, push's and TCP's carry half of it; all freed" {
	record_baseline
	RING_STEP=10_weight_sync run_ring 4 -t 10 "${SMALL[@]}" --updates 2 --way all
	assert_ring_success
	use_output_of r0
	assert_line "QPs                 : 3 here, 10 in the job: one per trainer and serving rank, T x S = 2 x 2, and --way gather's one between trainer rank 0 and each other trainer, 1"
	assert_line --regexp "^access +: local_write,remote_write,remote_atomic: --way gather: every other trainer WRITEs its shard after ours"
	for v in 1 2; do
		assert_line --regexp "^gather +: version $v: the words of the 1 other trainers read $v: the whole model is here, 2905344 B, in [0-9.]+ ms\$"
		assert_line --regexp "^gather +: version $v: every trainer's runs from here, 2906624 B in 1046 WRITEs, 66 posts, 2 FETCH_ADDs \\(one a serving rank, on its gathered word\\), in [0-9.]+ ms\$"
		assert_line --regexp "^round +: $v: version $v whole in 1 replica: 2906624 B checked on 2 serving ranks, 0 wrong; "
		assert_line --regexp "^# weight sync, round $v \\(version $v\\): 2 trainers, 2 serving ranks, 2906624 B a version; model: the slowest rank's bytes over [0-9.]+ MB/s, measured on this round's push\$"
	done
	# The table, a row a way each round: the busiest sender's bytes as its data path counted them.
	[ "$(grep -cE '^ +push( +[0-9.]+){3} +0 +1453312 +2 +1453312 +1453312 +1\.00 +0$' "$BATS_TEST_TMPDIR/r0.out")" -eq 2 ] || fail "push's rows"
	[ "$(grep -cE '^ +gather( +[0-9.]+){3} +0 +2906624 +2 +1453312 +4359296 +[0-9.]+ +0$' "$BATS_TEST_TMPDIR/r0.out")" -eq 2 ] || fail "gather's rows"
	[ "$(grep -cE '^ +tcp( +[0-9.]+){3} +[01] +1453312 +2 +1453312 +1453312 +[0-9.]+ +0$' "$BATS_TEST_TMPDIR/r0.out")" -eq 2 ] || fail "tcp's rows"
	use_output_of r1
	for v in 1 2; do
		assert_line --regexp "^gather +: version $v: our shard, 1452672 B, one WRITE into rank 0's buffer at its byte 1453184, then FETCH_ADD \\+1 on its word for rank 1, in [0-9.]+ ms\$"
	done
	for k in 0 1; do
		use_output_of "r$k"
		for v in 1 2; do
			assert_line --regexp "^push +: version $v: 1453312 B in 523 WRITEs, 34 posts "
			assert_line --regexp "^tcp +: version $v: 1453312 B in [0-9]+ sendmsg\\(\\) calls "
		done
		assert_line --regexp '^teardown +: every object released$'
	done
	for k in 2 3; do
		use_output_of "r$k"
		for v in 1 2; do
			for w in push gather tcp; do
				assert_line --regexp "^check +: version $v by $w: all 1453312 B of our slices right, byte for byte as the plan says, in [0-9.]+ ms\$"
			done
			assert_line "signals             : version $v by gather: rank 0's gathered word reads $v: every run of it is in buffer $((v % 2)), from rank 0 alone, no receive posted"
			assert_line --regexp "^tcp +: version $v: 1453312 B from 2 trainers in [0-9]+ recvmsg\\(\\) calls, each run read straight into buffer $((v % 2))"
		done
		assert_line "check               : round 2: version 2 in buffer 0: all 1453312 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
		refute_line --regexp '^ibv_post_send '
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

@test "10_weight_sync --serve-dtype fp8: the replica holds FP8 E4M3 while the trainers keep BF16: the plan's bytes exact at both sides, each trainer converts every chain into one of 4 staging slots registered once and WRITEs it from there, the conversion's CPU time against the push's; every serving rank checks every byte against the FP8 conversion of the model's BF16 values; all freed" {
	record_baseline
	RING_STEP=10_weight_sync run_ring 4 -t 10 "${SMALL[@]}" --updates 2 --serve-dtype fp8
	assert_ring_success
	use_output_of r0
	assert_line --regexp "^serve dtype +: FP8 E4M3 \\(--serve-dtype fp8\\): every replica holds each weight in 1 B, 1452672 B the model, as the OCP 8-bit floating point spec \\(OFP8\\) defines it; the trainers keep BF16, 2905344 B, "
	assert_line "plan pairs          : B from rank s to rank d (s>d): 0>2 689472 B (262 runs), 0>3 37184 B (261 runs), 1>2 37184 B (261 runs), 1>3 689472 B (262 runs)"
	assert_line "plan summary        : 4 pairs, 1046 runs, 1453312 B a version (1 replica, each the model's 1452672 B and its norms again on each of its 2 ranks); busiest sender rank 0 726656 B, busiest receiver rank 2 726656 B; the slowest rank moves 726656 B"
	assert_line "plan sides          : each run read as BF16 from its trainer's shard, 2 B an element, and written as FP8 E4M3, 1 B: 2906624 B read a version (busiest sender rank 0 1453312 B) for the 1453312 B that land, the bytes above"
	for v in 1 2; do
		assert_line --regexp "^round +: $v: version $v whole in 1 replica: 1453312 B checked on 2 serving ranks, 0 wrong; "
	done
	for k in 0 1; do
		use_output_of "r$k"
		assert_line --regexp "^role +: rank $k trains: its shard is 1452672 B of the model's 2905344 B\$"
		assert_line --regexp "^access +: none: --serve-dtype fp8: the staging slots, registered once here, not per update"
		assert_line --regexp "^ibv_reg_mr +: memory region registered: addr 0x[0-9a-f]+, length 262144, access none\$"
		for v in 1 2; do
			assert_line --regexp "^ibv_post_send +: version $v to rank [23]: runs 0 to [0-9]+, [0-9]+ WRITEs? of [0-9]+ B into its buffer $((v % 2)), converted to FP8 in staging slot [0-3] and WRITEn from there, the last signalled: its first chain \\(at most 4 slots in flight, over all our QPs\\)\$"
			assert_line --regexp "^push +: version $v: 726656 B in 530 WRITEs, 41 posts \\(each a chain, its last WR signalled\\), 2 FETCH_ADDs, 41 completions, in [0-9.]+ ms\$"
			assert_line --regexp "^convert +: version $v: 1453312 B of BF16 to 726656 B of FP8 E4M3, in 41 chains through 4 staging slots of 65536 B: [0-9.]+ ms of CPU converting, [0-9.]+% of the push's [0-9.]+ ms; at most [1-4] slots? in flight at once, [0-9]+ chains waited for a free one\$"
		done
		assert_line --regexp '^teardown +: every object released$'
	done
	for k in 2 3; do
		use_output_of "r$k"
		assert_line --regexp "^role +: rank $k serves: replica 0, TP rank $((k - 2)) of 2; its slice is 726656 B of the model's 1452672 B, in two version buffers\$"
		assert_line "check               : round 1: version 1 in buffer 1: all 726656 B of our slices right, byte for byte as the plan says"
		assert_line "check               : round 2: version 2 in buffer 0: all 726656 B of our slices right, byte for byte as the plan says; version v - 1 served whole while it landed"
		refute_line --regexp '^ibv_post_send '
		assert_line --regexp '^teardown +: every object released$'
	done
	assert_back_to_baseline
}

# BF16 to E4M3 as OFP8's saturating mode converts it, pattern by pattern: "BF16 its-value E4M3 its-value what-happened".
FP8_CASES=(
	"0x0000 0 0x00 0 exact"
	"0x8000 -0 0x80 -0 exact"
	"0x3c80 0.015625 0x08 0.015625 exact"			# 2^-6, the smallest normal
	"0xbc80 -0.015625 0x88 -0.015625 exact"
	"0x3c60 0.013671875 0x07 0.013671875 exact"		# 0.875 x 2^-6, the largest subnormal
	"0x3b00 0.001953125 0x01 0.001953125 exact"		# 2^-9, the smallest subnormal
	"0x43e0 448 0x7e 448 exact"				# the largest
	"0xc3e0 -448 0xfe -448 exact"
	"0x43e1 450 0x7e 448 rounded to the nearest"		# BF16 has no 449: its step is 2 there
	"0x43e8 464 0x7e 448 a tie, rounded to the even one (its last mantissa bit 0)"	# halfway to 480
	"0x43e9 466 0x7e 448 saturated: past 448, E4M3's largest"	# rounds to 480, past 448
	"0x43f0 480 0x7e 448 saturated: past 448, E4M3's largest"
	"0x7f7f 3.38953139e+38 0x7e 448 saturated: past 448, E4M3's largest"	# BF16's largest
	"0x7f80 inf 0x7e 448 saturated: past 448, E4M3's largest"
	"0xff80 -inf 0xfe -448 saturated: past 448, E4M3's largest"
	"0x3f84 1.03125 0x38 1 rounded to the nearest"
	"0x3f8c 1.09375 0x39 1.125 rounded to the nearest"
	"0x3f88 1.0625 0x38 1 a tie, rounded to the even one (its last mantissa bit 0)"	# between 1 and 1.125
	"0x3f98 1.1875 0x3a 1.25 a tie, rounded to the even one (its last mantissa bit 0)"	# between 1.125 and 1.25
	"0x3a80 0.0009765625 0x00 0 to zero: no more than half of 2^-9, the smallest subnormal"	# 2^-10, a tie
	"0x3a81 0.000984191895 0x01 0.001953125 rounded to the nearest"	# just past 2^-10
	"0x0001 9.18354962e-41 0x00 0 to zero: no more than half of 2^-9, the smallest subnormal"	# a BF16 subnormal
	"0x7fc0 nan 0x7f nan NaN stays NaN"
	"0xffc1 -nan 0xff -nan NaN stays NaN"
)

# bats test_tags=outside-vm
@test "10_weight_sync --fp8-of: BF16 to FP8 E4M3 as OFP8 says, for a table of known pairs: zeros, the smallest normal and subnormals, +-448, past it (saturated, infinities too), halfway between two E4M3 values (to the even one), at most half the smallest subnormal, NaN; a word that is no pattern refused" {
	local patterns="" c bf bv fp fv fate
	for c in "${FP8_CASES[@]}"; do
		patterns+="${patterns:+,}${c%% *}"
	done
	run "$BIN/10_weight_sync" --fp8-of "$patterns"
	assert_success
	[ "${#lines[@]}" -eq "${#FP8_CASES[@]}" ] || fail "${#lines[@]} lines for ${#FP8_CASES[@]} patterns"
	for c in "${FP8_CASES[@]}"; do
		read -r bf bv fp fv fate <<<"$c"
		assert_line "fp8                 : BF16 $bf = $bv -> E4M3 $fp = $fv, $fate"
	done
	run "$BIN/10_weight_sync" --fp8-of 0x3f80,1ffff
	assert_failure 2
	assert_line "error: --fp8-of: '1ffff' is no BF16 bit pattern: give 16-bit hex words, comma separated, such as 0x3f80,0x43e0"
}

@test "10_weight_sync refuses a --tp that does not divide the model's split dimensions, naming both; an unknown --way, --late-replica beside a way other than push, an unknown --serve-dtype, fp8 with --way tcp or all (the TCP twin has no staging to convert in), and --transport tcp, each naming what to give" {
	run_step 10_weight_sync --rank 0 --world-size 5 --trainers 2 --tp 3 --model-dim 128
	assert_failure 2
	assert_line "error: --tp 3 does not divide 128, q_proj's rows and o_proj's columns (hidden_size, scaled) at --model-dim 128: a split gives each rank the same share; pick a --tp that divides it"
	run_step 10_weight_sync --rank 0 --world-size 4 --way scatter
	assert_failure 2
	assert_line "error: --way: unknown way 'scatter'; use push, gather, tcp or all"
	run_step 10_weight_sync --rank 0 --world-size 6 --way gather --late-replica
	assert_failure 2
	assert_line "error: --way gather with --late-replica: the late replica and --hold are push's alone so far: give --way push, or leave --late-replica out"
	run_step 10_weight_sync --rank 0 --world-size 4 --serve-dtype fp16
	assert_failure 2
	assert_line "error: --serve-dtype: unknown type 'fp16'; use bf16 or fp8"
	for w in tcp all; do
		run_step 10_weight_sync --rank 0 --world-size 4 --serve-dtype fp8 --way "$w"
		assert_failure 2
		assert_line "error: --serve-dtype fp8 with --way $w: the TCP twin sends each run straight from the trainer's BF16 shard, and only the WRITEs convert on the way, through their staging slots: give --way push or gather, or leave --serve-dtype out"
	done
	run_step 10_weight_sync --rank 0 --world-size 4 --transport tcp
	assert_failure 2
	assert_line "error: --transport tcp: step 10's TCP twin is a way of its own, beside the two over verbs: give --way tcp, or --way all for the three in one run, and leave --transport out"
}

# Ranks FIRST to LAST (inclusive) refused with LINE, before registering anything; every
# other rank exited 1 naming one of them as the rank whose set-up failed.
assert_refused_by() { # FIRST LAST LINE
	local k
	for ((k = 0; k < RING_N; k++)); do
		use_output_of "r$k"
		[ "${ring_status[k]}" -eq 1 ] || fail "rank $k exited with ${ring_status[k]}, not 1: $output"
		if [ "$k" -ge "$1" ] && [ "$k" -le "$2" ]; then
			assert_line "$3"
			refute_line --regexp '^ibv_reg_mr '
		else
			assert_line --regexp "^error: rank [$1-$2]: its set-up failed \\(see its output\\)$"
		fi
	done
}

@test "10_weight_sync on a device smaller than it needs (the test aid RDMA_STEPS_CAPS): a trainer's send queue, the atomic it initiates and its longest WRITE, a serving rank's remote atomics, each refused before anything is registered, naming the limit; every other rank names a rank that refused; all freed" {
	record_baseline
	# One trainer and one serving rank (a replica of --tp 1) meet every refusal: two ranks a run.
	local pair=(--trainers 1 --tp 1 --model-dim 128 --layers 2)
	# A trainer keeps 3 chains of 16 WRITEs and its FETCH_ADD on one send queue.
	RDMA_STEPS_CAPS=max_qp_wr=48 RING_STEP=10_weight_sync run_ring 2 -t 10 "${pair[@]}"
	assert_refused_by 0 0 "error: step 10 asks for 49 send WRs a QP (the chains in flight and the FETCH_ADD), but $DEV allows 48 (max_qp_wr); this device cannot run it"
	# Its FETCH_ADD is an atomic it initiates: a device that initiates none cannot train here.
	RDMA_STEPS_CAPS=max_qp_init_rd_atom=0 RING_STEP=10_weight_sync run_ring 2 -t 10 "${pair[@]}"
	assert_refused_by 0 0 "error: step 10 asks for 1 atomic initiated a QP (the FETCH_ADD), but $DEV allows 0 (max_qp_init_rd_atom); this device cannot run it"
	# Each run of the plan is one WRITE: its longest (here the whole model, one trainer to one
	# rank) against the port's largest message.
	RDMA_STEPS_CAPS=max_msg_sz=1024 RING_STEP=10_weight_sync run_ring 2 -t 10 "${pair[@]}"
	assert_refused_by 0 0 "error: --model-dim 128 --layers 2 asks for 2905344 bytes in one WRITE (the plan's longest run), but $DEV allows 1024 (max_msg_sz of port 1); give a smaller --model-dim"
	# A serving rank takes the trainers' FETCH_ADDs: a device without remote atomics cannot
	# serve, nor one that serves no atomic in flight (the exchange would agree 0 with the trainer).
	RDMA_STEPS_CAPS=atomic_cap=none RING_STEP=10_weight_sync run_ring 2 -t 10 "${pair[@]}"
	assert_refused_by 1 1 "error: the trainers' FETCH_ADDs asks for remote atomics, but $DEV does none (atomic_cap IBV_ATOMIC_NONE, see ibv_devinfo -v); this step signals with atomics: use a device that serves them"
	RDMA_STEPS_CAPS=max_qp_rd_atom=0 RING_STEP=10_weight_sync run_ring 2 -t 10 "${pair[@]}"
	assert_refused_by 1 1 "error: step 10 asks for 1 atomic served a QP (the trainers' FETCH_ADDs), but $DEV allows 0 (max_qp_rd_atom); this device cannot run it"
	assert_back_to_baseline
}

@test "10_weight_sync failures: a serving rank that says its buffer is shorter than the plan's is refused by the trainers before any WRITE; a trainer killed mid-update is named by every rank within the bound, the replica still serving version 1, whole; all freed" {
	record_baseline
	RING_STEP=10_weight_sync run_ring 4 -t 5 "${SMALL[@]}" --plant-len 3:4096
	assert_all_name 3 "its buffer length 4096 B is not the 2907136 B the plan lays out for it \\(512 B of words, then 2 versions of 1453312 B\\): refused before any WRITE or READ\$" 15
	for k in 0 1 2 3; do
		use_output_of "r$k"
		refute_line --regexp '^ibv_post_send '
	done
	RING_STEP=10_weight_sync start_ring 4 -t 5 "${SMALL[@]}" --updates 3 --hold 1:20000
	wait_for_line "$BATS_TEST_TMPDIR/r1.out" '^hold ' 30
	kill_rank_and_assert_named 1 11
	for k in 2 3; do
		use_output_of "r$k"
		assert_line "versions            : the update after version 1 did not finish: we still serve version 1 from buffer 1, whole (checked byte for byte)"
	done
}
