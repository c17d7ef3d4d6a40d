#!/usr/bin/env bats
# 99_tutorial_outputs.bats: TUTORIAL.md's commands run as written, and print what its expected output shows.

setup() {
	load test_helper
}

# The demo's transcript is kept in the results directory as demo.out.
@test "TUTORIAL.md: every command block runs as written, and every expected-output line is still printed" {
	local blocks
	blocks=$(grep -c '^```sh$' "$PROJECT_ROOT/TUTORIAL.md")
	run timeout 400 "$PROJECT_ROOT/tests/demo.sh"
	printf '%s\n' "$output" >"$RDMA_STEPS_RESULTS/demo.out"
	assert_success
	assert_line "######## all $blocks command blocks ran as TUTORIAL.md says ########"
	run "$PROJECT_ROOT/tests/check-expected.sh" "$RDMA_STEPS_RESULTS/demo.out"
	assert_success
	assert_line --regexp '^expected-output lines checked: [1-9][0-9]+, missing: 0$'
}
