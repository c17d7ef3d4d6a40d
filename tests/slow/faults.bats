#!/usr/bin/env bats
# faults.bats: every fault point of RDMA_STEPS_FAIL_AT, in every step that reaches it: the error names the verb, the exit is non-zero, nothing leaks.
# Slow (about 80 runs): 'make test-faults' runs it against the coverage build (make coverage), then
# tests/tools/label-coverage.sh checks from the gcov counts that every out_* label ran. 'make test' does not.

setup() {
	load ../lib/test_helper
	# A coverage run (make test-faults) keeps each fault point's counts apart, under
	# by-point/POINT, so that tests/tools/label-coverage.sh can list what each point reached.
	GCOV_ROOT=${GCOV_PREFIX:-}
	read_fault_table
}

# Sends the gcov counts of the programs started next to POINT's own directory (coverage runs only).
count_for_point() {
	[ -n "$GCOV_ROOT" ] && export GCOV_PREFIX=$GCOV_ROOT/by-point/$1
	return 0
}

# What the "fault injected" line names for each point, read from the tables the stages
# declare beside their verbs (their lines: { "POINT", "WHAT", ERRNO },; see fault.h).
read_fault_table() {
	declare -gA SHOWN=()
	local point what
	while IFS=$'\t' read -r point what; do
		SHOWN[$point]=$what
	done < <(cd "$PROJECT_ROOT" && sed -nE 's/^\t\{ "([a-z_]+)", "([^"]+)", E[A-Z]+ \},$/\1\t\2/p' \
		common/*.c runtime/*.c steps/*/*.c)
	[ "${#SHOWN[@]}" -gt 0 ] || fail "no fault point could be read from the stages' tables"
}

# Fails unless NAME's output shows the fault at POINT and an error naming its verb
# (for the completion point, the completion that failed).
assert_fault_named() {
	local name=$1 point=$2 shown=${SHOWN[$2]:?no fault point $2 in the tables of the stages} error
	error=$shown
	[ "$point" = completion ] && error='completion of work request'
	use_output_of "$name"
	assert_output --partial "fault injected      : $shown fails here"
	assert_output --partial "error: $error"
}

# One side of a run with the fault at POINT, whose output is selected: it must
# have failed, not hung, and if it reached the point, name it (counted in $fired).
check_fault_side() { # NAME STATUS WHAT POINT
	[ "$2" -ne 0 ] || fail "$3 with the fault at $4 exited with 0: $output"
	[ "$2" -ne 124 ] || fail "$3 with the fault at $4 hung: $output"
	if [[ $output == *"fault injected "* ]]; then
		assert_fault_named "$1" "$4"
		fired=$((fired + 1))
	fi
}

# Runs a one-sided STEP with the fault at each POINT in turn.
assert_faults_alone() {
	local step=$1 point
	shift
	for point in "$@"; do
		record_baseline
		count_for_point "$point"
		RDMA_STEPS_FAIL_AT=$point start_step solo "$step" -d "$DEV"
		finish_step solo "$solo_pid"
		[ "$status" -ne 0 ] || fail "$step with the fault at $point exited with 0: $output"
		[ "$status" -ne 124 ] || fail "$step with the fault at $point hung: $output"
		assert_fault_named solo "$point"
		assert_back_to_baseline
	done
}

# Runs a two-sided STEP (server and client, both with the fault at POINT, and ARGS) for
# each point: each side exits non-zero within the timeout, at least one names the fault.
assert_faults_paired() {
	local step=$1 args=$2 point side fired listened
	local -a extra
	read -ra extra <<<"$args"
	shift 2
	for point in "$@"; do
		record_baseline
		port=$(pick_port)
		count_for_point "$point"
		export RDMA_STEPS_FAIL_AT=$point
		start_step srv "$step" -d "$DEV" -p "$port" -t 5 "${extra[@]}"
		# A server that fails before it listens ends at once; otherwise start the client.
		listened=0
		wait_listening "$port" $((10 * TIME_SCALE)) "$srv_pid" || listened=$?
		[ "$listened" -ne 1 ] || fail "$step with the fault at $point: the server neither listened nor ended"
		start_step cli "$step" -d "$DEV" -p "$port" -t 3 "${extra[@]}" "${FAULT_HOST:-127.0.0.1}"
		unset RDMA_STEPS_FAIL_AT
		fired=0
		for side in srv cli; do
			pid_var=${side}_pid
			finish_step "$side" "${!pid_var}"
			check_fault_side "$side" "$status" "$step $side" "$point"
		done
		[ "$fired" -gt 0 ] || fail "$step: no side reached the fault point $point"
		assert_back_to_baseline
	done
}

@test "fault points: an unknown one is refused before anything is created, with the points of that program only; an empty one means none" {
	RDMA_STEPS_FAIL_AT=create_pq run_step 01_open_pd -d "$DEV"
	assert_failure 2
	assert_output "error: RDMA_STEPS_FAIL_AT: 'create_pq' is not a fault point of 01_open_pd; use one of open_device, alloc_pd, dealloc_pd, close_device (or unset it)"
	# A point of a later stage is not one of step 01's.
	RDMA_STEPS_FAIL_AT=post_send run_step 01_open_pd -d "$DEV"
	assert_failure 2
	assert_output --partial "error: RDMA_STEPS_FAIL_AT: 'post_send' is not a fault point of 01_open_pd; "
	# Set but empty, as after RDMA_STEPS_FAIL_AT= on a command line: no fault at all.
	RDMA_STEPS_FAIL_AT= run_step 01_open_pd -d "$DEV"
	assert_success
	refute_output --partial 'fault injected'
}

# The points each stage adds: set-up in the order of creation, release in the reverse order.
OPEN_PD=(open_device alloc_pd) CLOSE_PD=(dealloc_pd close_device)
REG_MR=(reg_mr) DEREG_MR=(dereg_mr)
CREATE_QP=(create_cq create_qp modify_qp_init modify_qp_rtr modify_qp_rts) DESTROY_QP=(destroy_qp destroy_cq)
POST_WR=(post_recv post_send completion)
EVENTS=(req_notify_cq get_cq_event)

@test "fault points of 01_open_pd" {
	assert_faults_alone 01_open_pd "${OPEN_PD[@]}" "${CLOSE_PD[@]}"
}

@test "fault points of 02_reg_mr" {
	assert_faults_alone 02_reg_mr "${OPEN_PD[@]}" "${REG_MR[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
}

@test "fault points of 03_cq_qp_rts (with --events: a completion channel too)" {
	assert_faults_paired 03_cq_qp_rts --events "${OPEN_PD[@]}" "${REG_MR[@]}" create_comp_channel \
		"${CREATE_QP[@]}" "${DESTROY_QP[@]}" destroy_comp_channel "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
}

@test "fault points of 04_post_wr (SEND)" {
	assert_faults_paired 04_post_wr "-o send" "${OPEN_PD[@]}" "${REG_MR[@]}" "${CREATE_QP[@]}" \
		"${POST_WR[@]}" "${DESTROY_QP[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
}

@test "fault points of 05_poll_destroy (with --events)" {
	assert_faults_paired 05_poll_destroy "-n 20 --events" "${OPEN_PD[@]}" "${REG_MR[@]}" \
		create_comp_channel "${CREATE_QP[@]}" "${POST_WR[@]}" "${EVENTS[@]}" "${DESTROY_QP[@]}" \
		destroy_comp_channel "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
}

# The points --cm adds: rdma_cm's calls, from the event channel to the last cm_id.
CM=(cm_create_event_channel cm_create_id cm_resolve_addr cm_resolve_route cm_bind_addr cm_listen
	cm_create_qp cm_connect cm_accept cm_disconnect cm_destroy_id)

@test "fault points of 04_post_wr --cm (SEND), and of 05_poll_destroy --peer=rping" {
	FAULT_HOST=$(rdma_cm_addr)
	assert_faults_paired 04_post_wr "--cm -o send" "${CM[@]}" alloc_pd reg_mr create_cq \
		"${POST_WR[@]}" "${DESTROY_QP[@]}" "${DEREG_MR[@]}" dealloc_pd
	assert_faults_paired 05_poll_destroy "--peer=rping -n 3 -s 64" cm_create_qp reg_mr post_recv \
		post_send completion cm_disconnect dereg_mr
}

@test "fault points of 06_gdr" {
	assert_faults_paired 06_gdr "-s 64K" "${OPEN_PD[@]}" "${REG_MR[@]}" "${CREATE_QP[@]}" \
		"${POST_WR[@]}" "${DESTROY_QP[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
}

@test "fault points of 08_kv_transfer (push over 2 QPs: the decoder's receives, the prefiller's chains; pull: the decoder's chains, posted both ways; the memory windows)" {
	assert_faults_paired 08_kv_transfer "--mode push --qps 2 --requests 1" "${OPEN_PD[@]}" "${REG_MR[@]}" \
		"${CREATE_QP[@]}" post_recv post_send "${DESTROY_QP[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
	assert_faults_paired 08_kv_transfer "--qps 2 --requests 1" post_send
	assert_faults_paired 08_kv_transfer "--qps 2 --requests 1 --post ex" create_qp wr_complete
	assert_faults_paired 08_kv_transfer "--qps 2 --requests 1 --windows" alloc_mw bind_mw local_inv
}

# Runs 2 ranks of step 07 (or of RING_STEP, with RING_FAULT_ARGS for its options) with the
# fault at each POINT on both: each ends non-zero within the timeout, one names the fault,
# the other names a rank, and nothing leaks.
assert_faults_ring() {
	local point k fired step=${RING_STEP:-07_allreduce}
	local -a args
	read -ra args <<<"${RING_FAULT_ARGS:--b 4K --maxbytes 4K -n 2 -w 1}"
	for point in "$@"; do
		record_baseline
		count_for_point "$point"
		RDMA_STEPS_FAIL_AT=$point run_ring 2 -t 10 "${args[@]}"
		fired=0
		for k in 0 1; do
			use_output_of "r$k"
			check_fault_side "r$k" "${ring_status[k]}" "$step rank $k" "$point"
		done
		[ "$fired" -gt 0 ] || fail "$step: no rank reached the fault point $point"
		assert_back_to_baseline
	done
}

@test "fault points of 07_allreduce (two ranks, both with the fault), and its CPU schedule" {
	load ../lib/ring
	assert_faults_ring "${OPEN_PD[@]}" "${REG_MR[@]}" "${CREATE_QP[@]}" "${POST_WR[@]}" \
		"${DESTROY_QP[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
	run_step 07_allreduce --schedule --world-size 3 -b 40 --maxbytes 40
	assert_success
}

@test "fault points of 09_moe (two ranks, both with the fault): every point; post_recv with --signal imm, the only signal that posts receives" {
	load ../lib/ring
	RING_STEP=09_moe RING_FAULT_ARGS="--tokens 8 --hidden 64 --experts 2 --topk 2" \
		assert_faults_ring "${OPEN_PD[@]}" "${REG_MR[@]}" "${CREATE_QP[@]}" post_send completion \
		"${DESTROY_QP[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
	RING_STEP=09_moe RING_FAULT_ARGS="--tokens 8 --hidden 64 --experts 2 --topk 2 --signal imm" \
		assert_faults_ring post_recv post_send completion
}

@test "fault points of 10_weight_sync (a trainer and a serving rank, both with the fault): the plan's WRITE chains and FETCH_ADDs, their completions, and every stage's verbs" {
	load ../lib/ring
	RING_STEP=10_weight_sync RING_FAULT_ARGS="--trainers 1 --tp 1 --model-dim 64 --layers 1" \
		assert_faults_ring "${OPEN_PD[@]}" "${REG_MR[@]}" "${CREATE_QP[@]}" post_send completion \
		"${DESTROY_QP[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
}

@test "the side channel's own failures: a port already in use, and no server to connect to" {
	record_baseline
	port=$(pick_port)
	start_step srv 03_cq_qp_rts -d "$DEV" -p "$port" -t 3
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	run_step 03_cq_qp_rts -d "$DEV" -p "$port" -t 3
	assert_failure 1
	assert_output --partial "error: cannot listen on TCP port $port: Address already in use. Pick another with -p N"
	finish_step srv "$srv_pid"
	assert_failure 1
	run_step 03_cq_qp_rts -d "$DEV" -p "$port" -t 1 127.0.0.1
	assert_failure 1
	assert_output --partial "Connection refused"
	assert_back_to_baseline
}

# The side channel cannot tell a stopped peer from a slow one: it stays open.  Only the 10 s limit ends the wait.
@test "05_poll_destroy: a peer stopped (SIGSTOP) mid-run keeps the side channel open; the 10 s limit ends the wait" {
	record_baseline
	start_long_run
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^iterations +: '
	pkill -STOP -P "$cli_pid"
	start=$SECONDS
	finish_step srv "$srv_pid"
	pkill -KILL -P "$cli_pid"
	assert_failure 1
	assert_line "error: no completion within $((10000 * TIME_SCALE)) ms: is the peer running, and did it post what this operation needs?"
	[ $((SECONDS - start)) -ge $((9 * TIME_SCALE)) ] || fail "the server gave up after $((SECONDS - start)) s, before its 10 s limit"
	assert_line --regexp '^teardown +: every object released$'
	assert_back_to_baseline
}

# A later plane's registration (--plane): a second rxe device, on a dummy netdev of its own,
# made for this test alone and removed after it; the program fails before it waits for a peer.
@test "fault point of 11_lossy's later plane (plane_reg_mr): the plane's device, opened for it, closed on the way out, nothing left on either device" {
	local plane=rxefault net=rsfault0 plane_before plane_after
	ip link add "$net" type dummy && ip addr add 198.18.250.1/24 dev "$net" && ip link set "$net" up ||
		fail "could not add the dummy netdev $net for a second plane"
	rdma link add "$plane" type rxe netdev "$net" || fail "could not add the rxe device $plane on $net"
	record_baseline
	plane_before=$(DEV=$plane rdma_counts)
	count_for_point plane_reg_mr
	RDMA_STEPS_FAIL_AT=plane_reg_mr start_step solo 11_lossy -d "$DEV" --plane "$plane" -s 64K
	finish_step solo "$solo_pid"
	plane_after=$(DEV=$plane rdma_counts)
	rdma link delete "$plane"
	ip link delete "$net"
	[ "$status" -eq 1 ] || fail "11_lossy with the fault at plane_reg_mr exited with $status, not 1: $output"
	assert_fault_named solo plane_reg_mr
	assert_line --regexp "^ibv_close_device +: $plane closed"
	assert_line --regexp '^teardown +: every object released$'
	[ "$plane_after" = "$plane_before" ] || fail "objects left on $plane: before the run $plane_before, after it $plane_after"
	assert_back_to_baseline
}

@test "fault points of 11_lossy (UC over 2 paths, a chunk taken as lost: the receives posted ahead, the asks and SACKs, the sender's chains), and a --drop-chunks past the last chunk" {
	assert_faults_paired 11_lossy "-s 64K --paths 2 --drop-chunks 5" "${OPEN_PD[@]}" "${REG_MR[@]}" \
		"${CREATE_QP[@]}" "${POST_WR[@]}" "${DESTROY_QP[@]}" "${DEREG_MR[@]}" "${CLOSE_PD[@]}"
	# Refused once the chunks are known, after the QPs are up: the map is freed on the way out.
	record_baseline
	run_two_sides 11_lossy "-s 64K" "-s 64K --drop-chunks 64"
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "server $srv_status, client $cli_status: $(cat "$BATS_TEST_TMPDIR"/*.out)"
	assert_back_to_baseline
}
