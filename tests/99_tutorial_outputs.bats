#!/usr/bin/env bats
# 99_tutorial_outputs.bats: what TUTORIAL.md shows as expected output is what the steps print today.

setup() {
	load test_helper
}

@test "TUTORIAL.md: every expected-output line is still printed when the demo runs the steps" {
	run timeout 300 "$PROJECT_ROOT/tests/demo.sh"
	assert_success
	assert_line --regexp '^######## all steps ran ########$'
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/demo.out"
	run "$PROJECT_ROOT/tests/check-expected.sh" "$BATS_TEST_TMPDIR/demo.out"
	assert_success
	assert_line --regexp '^expected-output lines checked: [1-9][0-9]+, missing: 0$'
}
