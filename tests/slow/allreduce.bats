#!/usr/bin/env bats
# allreduce.bats: step 07 at more sizes (8 MiB), the failures make test leaves out, and under real launchers: mpirun, torchrun --no-python, srun's variables ('make test-allreduce').

bats_require_minimum_version 1.5.0

setup() {
	load ../lib/test_helper
	load ../lib/ring
}

# Fails unless every rank's output in FILES holds a right check and rank 0's the table row for BYTES.
assert_launched_right() {
	local bytes=$1 f
	shift
	for f in "$@"; do
		file_has_line "$f" '^teardown +: every object released$' || fail "$f: no release line: $(cat "$f")"
	done
	file_has_line "$1" "^ +$bytes +[0-9]+ +float +sum +-1 .* 0\$" || fail "no table row for $bytes B with 0 wrong: $(cat "$1")"
	file_has_line "$1" "^check +: right: " || fail "rank 0's check is not right: $(cat "$1")"
}

# Fails unless each of the three ranks' outputs in FILES says it took its rank from
# LAUNCHER's VARIABLES, and the run of 64 KiB was right (assert_launched_right).
assert_three_ranks_from() { # LAUNCHER VARIABLES FILE...
	local launcher=$1 vars=$2 k
	shift 2
	[ $# -eq 3 ] || fail "$launcher left $# rank outputs, not 3: $*"
	local -a outs=("$@")
	for k in 0 1 2; do
		file_has_line "${outs[k]}" "^launcher +: $launcher: rank $k of 3, from $vars\$" ||
			fail "rank $k did not take its rank from $launcher: $(cat "${outs[k]}")"
	done
	assert_launched_right 65536 "${outs[@]}"
}

@test "allreduce: 8 MiB, 1 MiB and sizes not divisible by 4, on 4 ranks, float and int32, K = 8 and K = 1: every rank right, no RNR NAK" {
	record_baseline
	! on_rxe || rnr_before=$(rnr_naks)
	STEP_TIMEOUT=240
	run_ring 4 -t 30 -b 8M --maxbytes 8M -n 1 -w 0
	assert_ring_success
	use_output_of r0
	assert_line --regexp '^ +8388608 +2097152 +float +sum +-1 .* 0$'
	assert_line --regexp '^bytes posted +: each rank 12582912 B per all_reduce of S = 8388608 B; 2\(N-1\)/N x S = 12582912 B: exact \(S is 4 chunks of 524288 whole elements\)$'
	run_ring 4 -t 30 --datatype int32 -b 4 --maxbytes 1M -f 7 -n 1 -w 0 --slots 1
	assert_ring_success
	use_output_of r0
	# 4 x 7^k bytes: 1, 7, 49 ... 117649 elements, none of them divisible by 4.
	assert_line --regexp '^ +470596 +117649 +int32 +sum +-1 .* 0$'
	assert_line --regexp "^check +: right: .* 0 wrong, over 4 ranks and 7 sizes$"
	! on_rxe || [ "$(rnr_naks)" = "$rnr_before" ] || fail "RNR NAKs (sent, received) went from $rnr_before to $(rnr_naks)"
	assert_back_to_baseline
}

@test "allreduce failures: world sizes that differ, a rank past the world size, no rank 0, a verb failed on one rank, rank 2 or rank 0 stopped (SIGSTOP): every rank names the rank" {
	record_baseline
	RANK_ARGS_1="--world-size 4" run_ring 3 -t 5
	assert_all_name 1 "it was given world size 4, rank 0 world size 3" 15
	RANK_ARGS_2="--rank 5" run_ring 3 -t 5
	assert_all_name 5 "rank 5 is past the world size 3 \(ranks are 0 to 2\)" 15
	SKIP_RANK=0
	run_ring 2 -t 1
	assert_all_name 0 "no rendezvous at 127.0.0.1 port $RING_PORT within $((1 * TIME_SCALE)) s \(Connection refused\): is rank 0 running, with the same -p\?" 7
	unset SKIP_RANK
	RDMA_STEPS_FAIL_AT=post_send RDMA_STEPS_FAIL_RANK=2 run_ring 3 -t 3 -b 4K --maxbytes 4K -n 1 -w 0
	assert_all_name 2 "it could not send a credit" 15
	use_output_of r2
	assert_line 'error: ibv_post_send (credit) failed: Cannot allocate memory (errno 12)'
	use_output_of r0
	assert_line --regexp '^fault points +: RDMA_STEPS_FAIL_AT is for rank 2 only \(RDMA_STEPS_FAIL_RANK\)$'
	# A rank stopped (SIGSTOP) mid-run: a hang.  Each other rank waits -t on a neighbour and
	# tells rank 0, which follows the waits to rank 2, the one that sent no notice.
	t=$((2 * TIME_SCALE))
	stop_rank_and_assert_named 2 "it (returned no credit for $t s to rank 1, which has written every slot it was given|wrote nothing for $t s to rank 0, which has taken [0-9]+ of its [0-9]+ pieces) \\(rank 0 followed the waits: [01]( -> [01])* -> 2\\)\$" 7
	# Rank 0 itself stopped: no verdict comes, and each rank names it -t and a second after its notice.
	stop_rank_and_assert_named 0 "it gave no verdict within $((t + 1)) s of this rank's stall notice \\(rank [12] waits on rank [0-2]: it (returned no credit for $t s to rank [12], which has written every slot it was given|wrote nothing for $t s to rank [12], which has taken [0-9]+ of its [0-9]+ pieces)\\)\$" 9
}

# Stops rank K of 3 mid-run with SIGSTOP, waits for the others, and checks that rank K's two QPs
# are still in RTS (a hang raises no error in RDMA: book/debugging.md), that each other rank
# told rank 0 what it waited on, and that every other rank names rank K (CAUSE) within BOUND s.
stop_rank_and_assert_named() { # K CAUSE BOUND
	local s=$1 pid=r$1_pid k stopped
	start_ring 3 -t 2 -b 1M --maxbytes 1M -n 100000 -w 0
	for k in 0 1 2; do wait_for_line "$BATS_TEST_TMPDIR/r$k.out" '^== stage 7' 30; done
	pkill -STOP -P "${!pid}"
	RING_START=$SECONDS
	SKIP_RANK=$s finish_ring
	stopped=$(pgrep -P "${!pid}")
	run rdma resource show qp
	[ "$(grep -cE "state RTS .* pid $stopped comm " <<<"$output")" = 2 ] || fail "rank $s (pid $stopped), stopped, has not two QPs in RTS: $output"
	pkill -KILL -P "${!pid}"
	wait "${!pid}" || true # killed on purpose: its status is the kill's
	SKIP_RANK=$s assert_all_name "$s" "$2" "$3"
	for k in 0 1 2; do
		[ "$k" != "$s" ] || continue
		use_output_of "r$k"
		assert_line --regexp "^stall +: rank $k has waited $((2 * TIME_SCALE)) s on rank [0-2], which may itself wait on another: "
	done
}

# Kills rank 1's own process (SIGKILL, not its timeout wrapper, whose child would run on)
# once the file of rank R shows a line matching REGEX, then waits for the other ranks.
kill_rank1_when() { # R REGEX
	wait_for_line "$BATS_TEST_TMPDIR/r$1.out" "$2" 60
	pkill -KILL -P "$r1_pid" || fail "rank 1 had already ended: $(cat "$BATS_TEST_TMPDIR/r1.out")"
	RING_START=$SECONDS
	SKIP_RANK=1 finish_ring
}

# Keeps, in the results' rank-death.txt, what ranks 0 and 2 said when rank 1 died in PHASE.
note_rank_death() { # PHASE
	local k
	{
		echo "$1: ranks 0 and 2 ended $RING_SECONDS s after the kill"
		for k in 0 2; do echo "  rank $k: $(grep '^error: ' "$BATS_TEST_TMPDIR/r$k.out" | tail -n 1)"; done
	} >>"$RDMA_STEPS_RESULTS/rank-death.txt"
}

@test "allreduce: rank 1 killed (SIGKILL) in each phase of a run: the rendezvous, before the first size, mid-size at K = 8 and K = 1, between sizes, in the TCP ring: every other rank names it within 2 x -t, all freed" {
	record_baseline
	rm -f "$RDMA_STEPS_RESULTS/rank-death.txt"
	# The rendezvous: rank 1 has said hello, rank 2 has not come yet.
	SKIP_RANK=2 start_ring 3 -t 3
	wait_for_line "$BATS_TEST_TMPDIR/r0.out" '^rendezvous +: rank 1 came from ' 30
	pkill -KILL -P "$r1_pid" || fail "rank 1 had already ended: $(cat "$BATS_TEST_TMPDIR/r1.out")"
	start_step r2 07_allreduce -d "$DEV" -p "$RING_PORT" --rank 2 --world-size 3 -t 3 127.0.0.1
	RING_START=$SECONDS
	SKIP_RANK=1 finish_ring
	SKIP_RANK=1 assert_all_name 1 "it stopped: its connection to rank 0 closed" 11
	note_rank_death "the rendezvous"
	# Before the first size: rank 1 has its neighbours' QPs, and is bringing its own up.
	start_ring 3 -t 3 -b 1M --maxbytes 1M -n 100 -w 0
	kill_rank1_when 1 "^prev rank's buffer +: "
	SKIP_RANK=1 assert_all_name 1 "" 11
	note_rank_death "before the first size"
	# In the middle of a size, K = 8 slots and K = 1.
	for slots in 8 1; do
		start_ring 3 -t 3 -b 1M --maxbytes 1M -n 100000 -w 0 --slots "$slots"
		kill_rank1_when 1 '^== stage 7'
		SKIP_RANK=1 assert_all_name 1 "" 11
		note_rank_death "mid-size, K = $slots"
	done
	# Between sizes: many small sizes, one iteration each; rank 0 has finished the third.
	start_ring 3 -t 3 -b 4 --maxbytes 16M -f 2 -n 1 -w 0
	kill_rank1_when 0 '^ +16 +4 +float '
	SKIP_RANK=1 assert_all_name 1 "" 11
	note_rank_death "between sizes"
	# The TCP ring.
	start_ring 3 -t 3 -b 1M --maxbytes 1M -n 100000 -w 0 --transport tcp
	kill_rank1_when 1 '^== stage 7'
	SKIP_RANK=1 assert_all_name 1 "" 11
	note_rank_death "the TCP ring"
}

@test "allreduce under mpirun (Open MPI, as root, more ranks than vCPUs): the rank from OMPI_COMM_WORLD_RANK, rank 0 at MASTER_ADDR" {
	command -v mpirun >/dev/null || fail "no mpirun: make test-allreduce installs Debian's openmpi-bin (tests/tools/deps.sh collective)"
	record_baseline
	port=$(pick_port)
	run timeout -k 2 60 mpirun --allow-run-as-root --oversubscribe -np 3 --output-filename "$BATS_TEST_TMPDIR/mpi" \
		-x MASTER_ADDR=127.0.0.1 "$BIN/07_allreduce" -d "$DEV" -p "$port" -t 20 -b 64K --maxbytes 64K -n 2 -w 1
	[ "$status" -eq 0 ] || fail "mpirun exited with $status: $output $(cat "$BATS_TEST_TMPDIR"/mpi/*/rank.*/stdout 2>/dev/null)"
	mapfile -t outs < <(ls "$BATS_TEST_TMPDIR"/mpi/1/rank.*/stdout)
	assert_three_ranks_from "Open MPI" "OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE" "${outs[@]}"
	assert_back_to_baseline
}

@test "allreduce under torchrun --no-python (its agent holds MASTER_PORT; our rendezvous is on -p)" {
	command -v torchrun >/dev/null || fail "no torchrun: make test-allreduce installs Debian's python3-torch (tests/tools/deps.sh collective)"
	record_baseline
	port=$(pick_port)
	# Debian 12's torchrun (torch 1.13 on Python 3.11) fails at its default "--redirects 0
	# --tee 0": Std.from_str finds no flag for 0 since Python 3.11's IntFlag; 1 (stdout) works.
	# Under emulation its start (Python importing torch) is slow: it is given minutes.
	# PYTHONPATH: Debian 13's torch without libuv (tests/tools/torch-store/sitecustomize.py).
	PYTHONPATH=$PROJECT_ROOT/tests/tools/torch-store run timeout -k 2 500 torchrun --no_python --nnodes 1 --nproc_per_node 3 --master_addr 127.0.0.1 \
		--master_port "$((port + 1))" --log_dir "$BATS_TEST_TMPDIR/torch" --redirects 1 --tee 1 \
		"$BIN/07_allreduce" -d "$DEV" -p "$port" -t 30 -b 64K --maxbytes 64K -n 2 -w 1
	[ "$status" -eq 0 ] || fail "torchrun exited with $status: $output $(cat "$BATS_TEST_TMPDIR"/torch/*/attempt_0/*/stdout.log 2>/dev/null)"
	mapfile -t outs < <(ls "$BATS_TEST_TMPDIR"/torch/*/attempt_0/*/stdout.log)
	assert_three_ranks_from torchrun "RANK and WORLD_SIZE" "${outs[@]}"
	assert_back_to_baseline
}

@test "allreduce with the variables srun sets (SLURM_PROCID, SLURM_NTASKS; MASTER_ADDR from the job script), and torchrun's winning inside srun" {
	record_baseline
	port=$(pick_port)
	for k in 0 1 2; do
		SLURM_PROCID=$k SLURM_NTASKS=3 SLURM_JOB_ID=1 MASTER_ADDR=127.0.0.1 start_step "r$k" 07_allreduce -d "$DEV" -p "$port" -t 20 -b 64K --maxbytes 64K -n 2 -w 1
	done
	RING_N=3 RING_START=$SECONDS
	finish_ring
	assert_ring_success
	assert_three_ranks_from Slurm "SLURM_PROCID and SLURM_NTASKS" "$BATS_TEST_TMPDIR"/r{0,1,2}.out
	# srun starting torchrun on one node: SLURM_PROCID is 0 for every process, RANK differs.
	port=$(pick_port)
	for k in 0 1; do
		SLURM_PROCID=0 SLURM_NTASKS=1 RANK=$k WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 start_step "r$k" 07_allreduce -d "$DEV" -p "$port" -t 20 -b 4K --maxbytes 4K -n 1 -w 0
	done
	RING_N=2 RING_START=$SECONDS
	finish_ring
	assert_ring_success
	file_has_line "$BATS_TEST_TMPDIR/r1.out" '^launcher +: torchrun: rank 1 of 2, from RANK and WORLD_SIZE$' || fail "$(cat "$BATS_TEST_TMPDIR/r1.out")"
	assert_back_to_baseline
}
