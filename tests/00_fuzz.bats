#!/usr/bin/env bats
# 00_fuzz.bats: make fuzz-replay runs every committed fuzz input through its decoder's harness under ASan and UBSan, without a crash.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

# One build for the whole file (make fuzz-replay also replays every corpus);
# each test then replays its own target, to see its status and its line alone.
setup_file() {
	local root
	root=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	# A build or replay that fails is not ignored: each test then finds no harness, or
	# its own replay fails, and reports it with make's output.
	make -s --no-print-directory -C "$root" fuzz-replay >"$BATS_FILE_TMPDIR/make.out" 2>&1 || true
}

setup() {
	load lib/test_helper
	CORPUS=$PROJECT_ROOT/tests/fuzz/corpus
	REPLAY=$PROJECT_ROOT/build/fuzz-replay
}

# Fails unless TARGET's replay exits 0 and its line counts every file of its corpus.
assert_replays_all() {
	local target=$1 files line rc=0
	[ -x "$REPLAY/$target" ] ||
		fail "make fuzz-replay built no $REPLAY/$target: $(tail -n 20 "$BATS_FILE_TMPDIR/make.out")"
	files=$(find "$CORPUS/$target" -maxdepth 1 -type f ! -name '.*' | wc -l)
	[ "$files" -gt 0 ] || fail "tests/fuzz/corpus/$target holds no input"
	line=$("$REPLAY/$target" "$CORPUS/$target" 2>"$BATS_TEST_TMPDIR/stderr") || rc=$?
	if [ "$rc" -ne 0 ] || [ "$line" != "$target: replayed $files inputs, no crash" ]; then
		fail "expected '$target: replayed $files inputs, no crash' and status 0; got status $rc," \
			"'$line', and on stderr: $(tail -n 20 "$BATS_TEST_TMPDIR/stderr")"
	fi
}

@test "fuzz-replay: every input of the exchange decoder's corpus replays without a crash" {
	assert_replays_all fuzz_exchange
}

@test "fuzz-replay: every input of the rdma_cm private-data decoder's corpus replays without a crash" {
	assert_replays_all fuzz_cm_private
}

@test "fuzz-replay: every input of the rc_pingpong line decoder's corpus replays without a crash" {
	assert_replays_all fuzz_rc_pingpong
}

@test "fuzz-replay: every input of the option-number parsers' corpus replays without a crash" {
	assert_replays_all fuzz_cli_number
}

@test "fuzz-replay: every input of step 08's block-table decoder's corpus replays without a crash" {
	assert_replays_all fuzz_kv_table
}

@test "fuzz-replay: every input of step 09's counts-matrix check's corpus replays without a crash" {
	assert_replays_all fuzz_moe_counts
}

@test "fuzz-replay: a harness that aborts fails the replay, which names the input" {
	[ -x "$REPLAY/fuzz_exchange" ] || fail "make fuzz-replay built no $REPLAY/fuzz_exchange"
	run env FUZZ_REPLAY_SELFTEST=1 "$REPLAY/fuzz_exchange" "$CORPUS/fuzz_exchange"
	assert_failure
	refute_output --partial "no crash"
	[[ $output =~ fuzz_exchange:\ running\ ([^ ]+) ]] || fail "no input named: $output"
	[ -f "${BASH_REMATCH[1]}" ] || fail "the named input ${BASH_REMATCH[1]} is not a corpus file"
}
