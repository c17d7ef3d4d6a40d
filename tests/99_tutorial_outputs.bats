#!/usr/bin/env bats
# 99_tutorial_outputs.bats: the book's commands, chapter by chapter, run as written, and print what its expected outputs show.

setup() {
	load lib/test_helper
}

# The demo's transcript is kept in the results directory as demo.out.
@test "the book: every command block of every chapter runs as written, and every expected-output line is still printed" {
	rxe_behaviour "the book's expected outputs are rxe's lines (its limits, counters, doorbell system calls, rdma link and rxe's own commands); on a hardware NIC the commands run, and those lines differ by design"
	local blocks
	# shellcheck disable=SC2046  # the chapters' names have no spaces
	blocks=$(cd "$PROJECT_ROOT" && cat $(tests/tools/chapters.sh en) | grep -c '^```sh$')
	run timeout 400 "$PROJECT_ROOT/tests/tools/demo.sh"
	printf '%s\n' "$output" >"$RDMA_STEPS_RESULTS/demo.out"
	assert_success
	assert_line "######## all $blocks command blocks ran as the book says ########"
	run "$PROJECT_ROOT/tests/tools/check-expected.sh" "$RDMA_STEPS_RESULTS/demo.out"
	assert_success
	assert_line --regexp '^expected-output lines checked: [1-9][0-9]+, missing: 0$'
}
