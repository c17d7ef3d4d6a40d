#!/usr/bin/env bats
# 00_tap_tools.bats: the summary line and the failures list that end make test and .ci/run, from made-up TAP files.
# Needs no RDMA device: it reads TAP files, so it runs on the host.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	tap=$BATS_TEST_TMPDIR/run.tap
	printf '1..4\nok 1 a in 5ms\nnot ok 2 b in 6ms\n# (in test file tests/x.bats, line 9)\n# error: rank 0: it wrote nothing\nok 3 c in 3ms # skip no gpu\n' >"$tap"
}

@test "summarize.sh: a skip is counted apart, and a planned test that never reported is a failure" {
	run "$PROJECT_ROOT/tests/tools/summarize.sh" "$tap"
	assert_failure 1
	assert_line --index 0 'summary: 1 of 4 planned tests in '"$tap"' never reported (the run was cut short); counted as failed'
	assert_line --index 1 '1 passed, 2 failed, 1 skipped'
}

@test "failures.sh: each failed test is named with its diagnostic lines, cut at MAX_LINES; passes and skips are not" {
	run "$PROJECT_ROOT/tests/tools/failures.sh" "$tap" "$BATS_TEST_TMPDIR/none.tap"
	assert_success
	assert_output "failed ($tap): not ok 2 b in 6ms
  # (in test file tests/x.bats, line 9)
  # error: rank 0: it wrote nothing"
	MAX_LINES=1 run "$PROJECT_ROOT/tests/tools/failures.sh" "$tap"
	assert_line --index 1 '  # (in test file tests/x.bats, line 9)'
	assert_line --index 2 "  ... (the rest is in $tap)"
	refute_line --partial 'it wrote nothing'
}
