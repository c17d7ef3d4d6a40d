#!/usr/bin/env bats
# valgrind.bats: every step under valgrind's memcheck over rxe, in each role: no invalid access, no uninitialised read, no leak ('make valgrind').
# Slow (each program starts in about 10 s under valgrind in the VM): 'make test' does not run it; .ci/run does.
# tests/slow/valgrind.supp holds the suppressions, all of them for libibverbs, each with its reason.

setup() {
	load ../lib/test_helper
	# valgrind's start-up alone takes seconds in the VM.
	STEP_TIMEOUT=180
	VG_DIR=$BATS_TEST_TMPDIR/vg
	mkdir -p "$VG_DIR"
}

# A wrapper that runs STEP (from BIN, or the build folder given) under memcheck: any error,
# or any leak but those suppressed, makes it exit 99. Each process writes its own report.
memcheck_wrapper() {
	local step=$1 bin=${2:-$BIN}
	cat >"$VG_DIR/$step" <<WRAPPER
#!/bin/sh
exec valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible \\
	--errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \\
	--suppressions="$PROJECT_ROOT/tests/slow/valgrind.supp" --log-file="$VG_DIR/%p.memcheck" \\
	"$bin/$step" "\$@"
WRAPPER
	chmod +x "$VG_DIR/$step"
	echo "$VG_DIR/$step"
}

# Fails unless every memcheck report of this test is empty (--quiet prints only errors).
assert_memcheck_clean() {
	local report n=0
	for report in "$VG_DIR"/*.memcheck; do
		[ -e "$report" ] || fail "no memcheck report was written"
		[ -s "$report" ] && fail "memcheck found errors: $(cat "$report")"
		n=$((n + 1))
	done
	echo "# $n processes under memcheck, no error, no leak" >&3
}

# Runs SERVER and CLIENT (programs) against each other with ARGS; both must exit 0.
run_pair() {
	local server=$1 client=$2 port
	shift 2
	port=$(pick_port)
	start_step srv "$server" -d "$DEV" -p "$port" -t 60 "$@"
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening ' 60
	cli_status=0
	timeout -k 2 "$STEP_TIMEOUT" "$client" -d "$DEV" -p "$port" -t 60 "$@" 127.0.0.1 \
		>"$BATS_TEST_TMPDIR/cli.out" 2>&1 || cli_status=$?
	srv_status=0
	wait "$srv_pid" || srv_status=$?
	assert_both_succeeded "$(basename "$server") $*" "$(grep -h -B3 '^error' "$BATS_TEST_TMPDIR"/*.out; cat "$VG_DIR"/*.memcheck 2>/dev/null)"
}

# Runs STEP (from BIN, or the build folder given) with ARGS as a server and a client,
# both under memcheck at once: every role checked in one run.  Each has a vCPU of its own
# in the 2-vCPU VM, so a busy-polling side does not starve the other.
memcheck_pair() {
	local step=$1 bin=$BIN wrapped
	shift
	if [ "${1:-}" = --bin ]; then
		bin=$2
		shift 2
	fi
	wrapped=$(memcheck_wrapper "$step" "$bin")
	run_pair "$wrapped" "$wrapped" "$@"
}

@test "valgrind: 01_open_pd and 02_reg_mr" {
	run "$(memcheck_wrapper 01_open_pd)" -d "$DEV"
	assert_success
	run "$(memcheck_wrapper 02_reg_mr)" -d "$DEV"
	assert_success
	assert_memcheck_clean
}

@test "valgrind: 03_cq_qp_rts, with a completion channel" {
	memcheck_pair 03_cq_qp_rts -e
	assert_memcheck_clean
}

@test "valgrind: 04_post_wr: send, write_imm, read, fetch_add, and a WRITE refused (-V rkey)" {
	local op
	for op in send write_imm read fetch_add; do
		memcheck_pair 04_post_wr -o "$op"
	done
	memcheck_pair 04_post_wr -o write -V rkey
	assert_memcheck_clean
}

@test "valgrind: 05_poll_destroy: busy polling, events, the recovery drill and credits" {
	memcheck_pair 05_poll_destroy -n 200
	memcheck_pair 05_poll_destroy -n 200 -e
	# 100 messages: 36 past the first 64 receives, so the target sends 3 credit counts.
	memcheck_pair 05_poll_destroy -o write_imm -n 100 -R
	assert_memcheck_clean
}

@test "valgrind: 06_gdr, every path, built with and without CUDA" {
	memcheck_pair 06_gdr --path all
	memcheck_pair 06_gdr --bin "$PROJECT_ROOT/build/nocuda/bin" --path all
	assert_memcheck_clean
}

@test "valgrind: 08_kv_transfer: pull and push over 2 QPs, windows granted and taken back, merged runs, the extended post API" {
	memcheck_pair 08_kv_transfer --qps 2 --windows --requests 1 --pool 1
	memcheck_pair 08_kv_transfer --mode push --qps 2 --run 2 --merge --requests 1 --pool 1 --post ex
	assert_memcheck_clean
}
