#!/usr/bin/env bats
# 00_flake_hunt.bats: make flake-hunt's table and saved failures, from made-up rounds: each test's failures counted over the rounds that ran it, the first failure's output kept.
# Needs no RDMA device: it reads TAP files, so it runs on the host.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
}

@test "flake-hunt.sh --report: per test, the rounds it failed of those it ran, failures first; a skip is a pass" {
	dir=$BATS_TEST_TMPDIR/hunt
	mkdir -p "$dir"
	printf '1..3\nok 1 a in 5ms\nnot ok 2 b in 6ms\n# why b\nok 3 c in 3ms # skip no gpu\n' >"$dir/round-1.tap"
	printf '1..3\nok 1 a in 5ms\nnot ok 2 b in 7ms\n# why b again\nnot ok 3 c in 1ms\n# c broke\n' >"$dir/round-2.tap"
	for r in $(seq 3 10); do printf '1..1\nok 1 a in 4ms\n' >"$dir/round-$r.tap"; done
	run "$PROJECT_ROOT/tests/tools/flake-hunt.sh" --report "$dir"
	assert_success
	assert_line --index 0 'flake-hunt: 10 rounds, 3 tests'
	assert_line --index 2 '  2/2    b'
	assert_line --index 3 '  1/2    c'
	assert_line --index 4 '  0/10   a'
	assert_line --index 5 'flake-hunt: 2 of 3 tests failed in at least one round'
}

@test "flake-hunt.sh: a bad round count or hog count is refused before anything boots" {
	run "$PROJECT_ROOT/tests/tools/flake-hunt.sh" ten
	assert_failure 2
	assert_output "flake-hunt: ROUNDS must be a positive number, not 'ten'"
	HOGS=-1 run "$PROJECT_ROOT/tests/tools/flake-hunt.sh" 1
	assert_failure 2
	assert_output "flake-hunt: HOGS must be a number of busy loops, not '-1'"
}
