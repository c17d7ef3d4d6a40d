#!/usr/bin/env bats
# 00_layering.bats: each step is built only on the steps before it: no file of step N names a later step, its folder, its options or what its headers declare (tests/tools/layering.py).
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
}

@test "layering: no step's source names a later step, its folder or program, an option or a declaration of its own" {
	run "$PROJECT_ROOT/tests/tools/layering.py"
	assert_success
	assert_output ""
}

@test "layering.py: a planted reference of each kind, in code and in comments, fails and is named by file and line" {
	tree=$BATS_TEST_TMPDIR/tree
	mkdir -p "$tree"
	cp -r "$PROJECT_ROOT/common" "$PROJECT_ROOT/steps" "$tree/"
	run "$PROJECT_ROOT/tests/tools/layering.py" "$tree"
	assert_success
	# One of each kind, each in a file of an earlier step than the one it names.
	printf '/* as steps 02 and 06 do */\n' >>"$tree/steps/03_cq_qp_rts/exchange.c"
	printf '/* see 05_poll_destroy */\n' >>"$tree/steps/02_reg_mr/reg_mr.h"
	printf 'static const char *hint = "run it with --peer=rping";\n' >>"$tree/steps/03_cq_qp_rts/cm.c"
	printf 'static const void *later = &rping_peer;\n' >>"$tree/steps/04_post_wr/pattern.c"
	# A later step's static function is a namesake, not a reference: not named.
	printf 'static int peer_gone;\n' >>"$tree/steps/04_post_wr/pattern.c"
	run "$PROJECT_ROOT/tests/tools/layering.py" "$tree"
	assert_failure 1
	lines_of_cm=$(wc -l <"$tree/steps/03_cq_qp_rts/cm.c")
	assert_line --regexp "^steps/03_cq_qp_rts/exchange\.c:[0-9]+: names step 06 \('/\* as steps 02 and 06 do \*/'\)$"
	refute_line --regexp "names step 02"
	assert_line --regexp '^steps/02_reg_mr/reg_mr\.h:[0-9]+: names 05_poll_destroy, step 05.s folder and program$'
	assert_line "steps/03_cq_qp_rts/cm.c:$lines_of_cm: names --peer, an option step 05 defines (steps/05_poll_destroy/poll_options.c)"
	assert_line --regexp '^steps/04_post_wr/pattern\.c:[0-9]+: names rping_peer, defined first in step 05 \(steps/05_poll_destroy/rping_wire\.h\)$'
	refute_output --partial 'peer_gone'
	[ "${#lines[@]}" -eq 5 ] || fail "expected 4 places and the summary: $output"
	assert_line "layering: 4 place(s) where a step names a later step: an earlier step must read whole without it (move the code to the later step, or pass it in through a hook)"
}
