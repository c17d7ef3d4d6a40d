#!/usr/bin/env bats
# 05_rdma_core_examples.bats: book/where-next.md's table of the verbs the steps do not run, checked on rxe: rdma-core's SRQ, UC and UD ping-pongs run;
# ibv_rc_pingpong refuses --odp (before Linux 7.x), --ts and --dm; and tests/probe/verbs_probe.c finds each verb that needs no peer done or refused as the table says.

setup() {
	load lib/test_helper
	GIDX=$(sysfs_ipv4_mapped_gid_index "$DEV")
	[ -n "$GIDX" ] || fail "no IPv4-mapped RoCE v2 GID on $DEV for the examples' -g"
}

# Runs rdma-core's PROGRAM as the server and as its client on DEV, with the same ARGS;
# sets srv_status, cli_status and the outputs srv.out and cli.out.
example_pair() { # PROGRAM ARGS...
	local prog=$1 port
	shift
	port=$(pick_port)
	timeout -k 2 "$STEP_TIMEOUT" "$prog" -d "$DEV" -g "$GIDX" -p "$port" "$@" >"$BATS_TEST_TMPDIR/srv.out" 2>&1 &
	local srv=$!
	wait_listening "$port" 10 "$srv" || fail "$prog did not listen on port $port: $(cat "$BATS_TEST_TMPDIR/srv.out")"
	cli_status=0
	timeout -k 2 "$STEP_TIMEOUT" "$prog" -d "$DEV" -g "$GIDX" -p "$port" "$@" 127.0.0.1 >"$BATS_TEST_TMPDIR/cli.out" 2>&1 || cli_status=$?
	srv_status=0
	wait "$srv" || srv_status=$?
}

# Both sides of PROGRAM's run exited 0 and reported ITERS iterations.
assert_pair_ran() { # PROGRAM ITERS
	local side
	for side in srv cli; do
		local status_var=${side}_status out
		out=$(cat "$BATS_TEST_TMPDIR/$side.out")
		[ "${!status_var}" -eq 0 ] || fail "$1 ($side) failed with status ${!status_var}: $out"
		grep -qE "^$2 iters in [0-9.]+ seconds" <<<"$out" || fail "$1 ($side) did not report $2 iterations: $out"
	done
}

@test "rxe runs rdma-core's ibv_srq_pingpong (16 QPs, one SRQ), ibv_uc_pingpong and ibv_ud_pingpong (512 bytes, within one MTU)" {
	record_baseline
	example_pair ibv_srq_pingpong -n 50
	assert_pair_ran ibv_srq_pingpong 50
	example_pair ibv_uc_pingpong -n 50
	assert_pair_ran ibv_uc_pingpong 50
	example_pair ibv_ud_pingpong -n 50 -s 512
	assert_pair_ran ibv_ud_pingpong 50
	assert_back_to_baseline
}

@test "rxe lacks what the table says: ibv_rc_pingpong --odp (before Linux 6.15), --ts and --dm each stop before listening, naming the missing capability" {
	rxe_behaviour "book/where-next.md's table of what rxe lacks (ODP before Linux 6.15, completion timestamps, device memory); a ConnectX has all three, so ibv_rc_pingpong --odp, --ts and --dm run on it"
	local opt want opts=(--odp --ts --dm)
	# rxe has on-demand paging from Linux 6.15 on (d03fb5c6599e "RDMA/rxe: Allow registering MRs
	# for On-Demand Paging"; not in 6.1 or 6.12): there the ODP ping-pong runs.
	if kernel_at_least 6 15; then
		record_baseline
		example_pair ibv_rc_pingpong -n 50 --odp
		assert_pair_ran ibv_rc_pingpong 50
		assert_back_to_baseline
		opts=(--ts --dm)
	fi
	for opt in "${opts[@]}"; do
		case $opt in
		--odp) want="The device isn't ODP capable" ;;
		--ts) want="The device isn't completion timestamp capable" ;;
		--dm) want="Device doesn't support dm allocation" ;;
		esac
		run timeout -k 2 "$STEP_TIMEOUT" ibv_rc_pingpong -d "$DEV" -g "$GIDX" -p "$(pick_port)" "$opt"
		[ "$status" -ne 0 ] || fail "ibv_rc_pingpong $opt succeeded on $DEV: $output"
		assert_output --partial "$want"
	done
}

@test "tests/probe/verbs_probe.c tries each verb of the table that needs no peer: what rxe does, and refuses, is what the table says" {
	rxe_behaviour "book/where-next.md's table of the verbs rxe's provider has and lacks (XRC, ODP, device memory, timestamps, ECE, rate limits); a hardware NIC's provider has its own set (mlx5 has most of them)"
	cc -Wall -O1 -o "$BATS_TEST_TMPDIR/verbs_probe" "$PROJECT_ROOT/tests/probe/verbs_probe.c" -libverbs ||
		fail "tests/probe/verbs_probe.c does not build"
	record_baseline
	run timeout -k 2 "$STEP_TIMEOUT" "$BATS_TEST_TMPDIR/verbs_probe" "$DEV"
	assert_success
	# What the table says rxe does.
	local verb
	for verb in ibv_query_device_ex ibv_create_srq 'ibv_modify_srq (srq_limit)' 'ibv_create_qp (RC on the SRQ)' \
		'ibv_create_qp (RC)' 'ibv_create_qp (UD)' 'ibv_create_qp (UC)' 'ibv_alloc_mw (type 1)' \
		'ibv_create_cq_ex (byte_len)' ibv_resize_cq; do
		assert_line "$verb: ok"
	done
	# What it says rxe lacks: each refused with EOPNOTSUPP, the answer of a verb its provider does not have.
	for verb in ibv_open_xrcd ibv_advise_mr ibv_alloc_dm ibv_alloc_null_mr ibv_rereg_mr \
		'ibv_create_cq_ex (completion timestamp)' ibv_query_rt_values_ex ibv_modify_cq ibv_alloc_td \
		ibv_import_device ibv_query_ece ibv_modify_qp_rate_limit; do
		assert_line "$verb: failed: EOPNOTSUPP (95)"
	done
	# 0x1 is IBV_ODP_SUPPORT: rxe pages on demand from Linux 6.15 on.
	if kernel_at_least 6 15; then
		assert_line 'odp_caps.general_caps: 0x1'
	else
		assert_line 'odp_caps.general_caps: 0'
	fi
	assert_line 'completion_timestamp_mask: 0'
	assert_line 'max_dm_size: 0'
	assert_line 'ibv_query_qp_data_in_order (RDMA_WRITE): 0'
	assert_line 'ibv_is_fork_initialized: IBV_FORK_UNNEEDED'
	assert_line 'ibv_query_pkey (index 0): ok 0xffff'
	assert_line --regexp '^ibv_query_pkey \(index 1\): failed: '
	assert_back_to_baseline
}
