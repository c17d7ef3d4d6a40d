#!/usr/bin/env bats
# 00_layering.bats: each step is built only on the steps before it: no file of step N names a later step, its folder, its options or what its headers declare; common/ names no step, and the runtime nothing above stage 3 (tests/tools/layering.py).
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
	cp -r "$PROJECT_ROOT/common" "$PROJECT_ROOT/steps" "$PROJECT_ROOT/runtime" "$tree/"
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
	assert_line "layering: 4 place(s) where a step names a later step: an earlier step must read whole without it (move the code to the later step, or pass it in through a hook; common/ and the runtime likewise)"
}

@test "layering.py: the job runtime is checked as the floor below step 07 on stages 1 to 3: naming step 04 or a later one, or what it declares, fails" {
	tree=$BATS_TEST_TMPDIR/tree
	mkdir -p "$tree"
	cp -r "$PROJECT_ROOT/common" "$PROJECT_ROOT/steps" "$PROJECT_ROOT/runtime" "$tree/"
	printf '/* as step 07 does */\n' >>"$tree/runtime/control.c"
	printf 'static const void *ring = &ring_open;\n' >>"$tree/runtime/pairs.c"
	# Below step 07, but on stages 1 to 3 only: step 04's and step 05's code is above it too.
	printf '/* as step 05 does */\n' >>"$tree/runtime/launch.c"
	printf 'static const void *wr = &post_wr_faults;\n' >>"$tree/runtime/pairs.c"
	# Stage 3's code it may name, and its own --iters, though step 05 has an option of that name.
	printf 'static const void *qp = &connect_qp;\n' >>"$tree/runtime/pairs.c"
	# What the runtime declares, a step after it may name; one before it may not.
	printf 'static const void *job = &ctl_fail;\n' >>"$tree/steps/05_poll_destroy/poller.c"
	run "$PROJECT_ROOT/tests/tools/layering.py" "$tree"
	assert_failure 1
	assert_line --regexp "^runtime/control\.c:[0-9]+: names step 07 \('/\* as step 07 does \*/'\)$"
	assert_line --regexp '^runtime/pairs\.c:[0-9]+: names ring_open, defined first in step 07 \(steps/07_allreduce/ring\.h\)$'
	assert_line --regexp "^runtime/launch\.c:[0-9]+: names step 05 \('/\* as step 05 does \*/'\)$"
	assert_line --regexp '^runtime/pairs\.c:[0-9]+: names post_wr_faults, defined first in step 04 \(steps/04_post_wr/post_wr\.h\)$'
	assert_line --regexp '^steps/05_poll_destroy/poller\.c:[0-9]+: names ctl_fail, defined first in the runtime \(runtime/control\.h\)$'
	refute_output --partial connect_qp
	refute_output --partial -- --iters
	[ "${#lines[@]}" -eq 6 ] || fail "expected 5 places and the summary: $output"
}

@test "layering.py: common/ is checked as the floor under every step: naming a step, its option or what it or the runtime declares, fails" {
	tree=$BATS_TEST_TMPDIR/tree
	mkdir -p "$tree"
	cp -r "$PROJECT_ROOT/common" "$PROJECT_ROOT/steps" "$PROJECT_ROOT/runtime" "$tree/"
	printf '/* as step 03 does */\n' >>"$tree/common/wait.c"
	printf 'static const void *stage = &open_device_pd;\n' >>"$tree/common/report.c"
	printf 'static const char *hint = "give both sides --cm";\n' >>"$tree/common/sock.c"
	printf 'static const void *job = &ctl_fail;\n' >>"$tree/common/clock.c"
	# What common/ declares itself it names freely.
	printf 'static const void *own = &fault_use;\n' >>"$tree/common/clock.c"
	run "$PROJECT_ROOT/tests/tools/layering.py" "$tree"
	assert_failure 1
	assert_line --regexp "^common/wait\.c:[0-9]+: names step 03 \('/\* as step 03 does \*/'\)$"
	assert_line --regexp '^common/report\.c:[0-9]+: names open_device_pd, defined first in step 01 \(steps/01_open_pd/open_pd\.h\)$'
	assert_line --regexp '^common/sock\.c:[0-9]+: names --cm, an option step 03 defines \(steps/03_cq_qp_rts/cq_qp_rts\.c\)$'
	assert_line --regexp '^common/clock\.c:[0-9]+: names ctl_fail, defined first in the runtime \(runtime/control\.h\)$'
	refute_output --partial fault_use
	[ "${#lines[@]}" -eq 5 ] || fail "expected 4 places and the summary: $output"
}

@test "make -n: a step links the runtime and the stages it names, and step 09 no object of step 07's ring" {
	cd "$PROJECT_ROOT"
	run make -n -B BUILD="$BATS_TEST_TMPDIR/build" "$BATS_TEST_TMPDIR/build/bin/09_moe"
	assert_success
	link=$(grep -- "-o $BATS_TEST_TMPDIR/build/bin/09_moe " <<<"$output") || fail "no link line for 09_moe in: $output"
	for object in runtime/launch.o runtime/rendezvous.o runtime/control.o runtime/pairs.o runtime/job_options.o runtime/nccl_options.o steps/09_moe/mesh.o; do
		[[ $link == *"/obj/$object"* ]] || fail "09_moe does not link $object: $link"
	done
	[[ $link != *steps/07_allreduce/* ]] || fail "09_moe links step 07's objects: $link"
	run make -n -B BUILD="$BATS_TEST_TMPDIR/build" "$BATS_TEST_TMPDIR/build/bin/07_allreduce"
	link=$(grep -- "-o $BATS_TEST_TMPDIR/build/bin/07_allreduce " <<<"$output") || fail "no link line for 07_allreduce in: $output"
	[[ $link == *"/obj/runtime/rendezvous.o"* && $link == *"/obj/steps/07_allreduce/ring.o"* ]] || fail "07_allreduce: $link"
}

@test "option keys: each stage declares its own; a program two of whose stages share a key or a name refuses to run, naming both options" {
	cd "$PROJECT_ROOT"
	# No key is declared in common/cli.h but its own options' (block 0).
	run grep -nE '^\s*CLI_KEY_[A-Z_]+' common/cli.h
	assert_output --regexp '^[0-9]+:\s*CLI_KEY_PAUSE = CLI_STAGE_KEYS\(0\),'
	[ "${#lines[@]}" -eq 1 ] || fail "common/cli.h declares other stages' keys: $output"
	# Every program's --help still runs: no two of its stages share a key.
	[ -x "$BIN/09_moe" ] || fail "no $BIN/09_moe: build first (make all)"
	for program in "$BIN"/*; do
		"$program" --help >/dev/null || fail "$program --help failed: its stages' options clash?"
	done
	# A planted clash: two stages whose options share a key, then a name.
	cat >"$BATS_TEST_TMPDIR/clash.c" <<'C'
#include "cli.h"
#include <string.h>
static int parse(int key, const char *arg, void *ctx) { (void)key; (void)arg; (void)ctx; return 0; }
int main(int argc, char **argv)
{
	static const struct cli_option a[] = { { "first", CLI_STAGE_KEYS(7), NULL, "a", CLI_STAGE_PARSES }, { 0 } };
	static const struct cli_option b[] = { { "second", CLI_STAGE_KEYS(7), NULL, "b", CLI_STAGE_PARSES }, { 0 } };
	static const struct cli_option c[] = { { "first", CLI_STAGE_KEYS(9), NULL, "c", CLI_STAGE_PARSES }, { 0 } };
	const struct cli_stage keys[] = { { a, parse, NULL }, { b, parse, NULL }, { 0 } };
	const struct cli_stage names[] = { { a, parse, NULL }, { c, parse, NULL }, { 0 } };
	struct cli_spec spec = { .program = "clash", .purpose = "", .stages = keys };
	struct cli_common common;

	if (argc > 1 && !strcmp(argv[1], "names"))
		spec.stages = names;
	return cli_parse(1, argv, &spec, &common);
}
C
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -Icommon $(pkg-config --cflags libibverbs) -o "$BATS_TEST_TMPDIR/clash" "$BATS_TEST_TMPDIR/clash.c" \
		common/cli.c common/report.c common/fault.c common/stop.c common/clock.c || fail "the planted clash did not build"
	run "$BATS_TEST_TMPDIR/clash"
	assert_failure 2
	assert_output "error: options --first and --second share a key: each stage declares its keys in a block of its own (CLI_STAGE_KEYS in cli.h)
error: clash: its options cannot be read (the line above says why)"
	run "$BATS_TEST_TMPDIR/clash" names
	assert_failure 2
	assert_line --index 0 "error: options --first and --first share a name: each stage declares its keys in a block of its own (CLI_STAGE_KEYS in cli.h)"
}

@test "fault points: each stage declares its own beside its verbs; a program two of whose stages declare one point refuses to run, naming it" {
	cd "$PROJECT_ROOT"
	# common/fault.c keeps the mechanism only: no point is declared there.
	run grep -nE '^\s*\{ "[a-z_]+", "[^"]+", E[A-Z]+ \},' common/fault.c
	assert_failure 1
	# Every program knows its own step's points, and refuses any other name with its own list.
	[ -x "$BIN/09_moe" ] || fail "no $BIN/09_moe: build first (make all)"
	for program in "$BIN"/*; do
		name=${program##*/}
		RDMA_STEPS_FAIL_AT=nonesuch run "$program"
		assert_failure 2
		assert_output --regexp "^error: RDMA_STEPS_FAIL_AT: 'nonesuch' is not a fault point of $name; use one of [a-z_, ]+ \(or unset it\)$"
		known=" ${output#*use one of }"
		known=${known% (or unset it)},
		for point in $(sed -nE 's/.*fault_at\("([a-z_]+)"\).*/\1/p' "steps/$name"/*.c "steps/$name"/*.h); do
			[[ $known == *" $point,"* ]] || fail "$name does not list the point $point its own code has: $output"
		done
	done
	# A planted clash: two stages that both declare post_send.
	cat >"$BATS_TEST_TMPDIR/clash.c" <<'C'
#include "cli.h"
#include <errno.h>
int main(int argc, char **argv)
{
	static const struct fault_point a[] = { { "post_recv", "ibv_post_recv", ENOMEM },
						{ "post_send", "ibv_post_send", ENOMEM }, { 0 } };
	static const struct fault_point b[] = { { "post_send", "ibv_post_send (a chain)", ENOMEM }, { 0 } };
	const struct fault_point *const faults[] = { a, b, NULL };
	const struct cli_spec spec = { .program = "clash", .purpose = "", .faults = faults };
	struct cli_common common;

	return cli_parse(argc, argv, &spec, &common);
}
C
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -Icommon $(pkg-config --cflags libibverbs) -o "$BATS_TEST_TMPDIR/clash" "$BATS_TEST_TMPDIR/clash.c" \
		common/cli.c common/report.c common/fault.c common/stop.c common/clock.c || fail "the planted clash did not build"
	run "$BATS_TEST_TMPDIR/clash" --help
	assert_failure 2
	assert_output "error: fault point post_send is declared twice, for ibv_post_send and for ibv_post_send (a chain): each stage declares the points of its own verbs only (fault_use in fault.h)
error: clash: its fault points cannot be told apart (the line above says why)"
}

@test "datapath.c: in each step from 07 on, every ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_wr_complete and work request is in the step's datapath.c" {
	cd "$PROJECT_ROOT"
	# From step 07 on: the steps on the job runtime, and step 08, which is not (its datapath.c says why).
	mapfile -t steps < <(find steps -mindepth 1 -maxdepth 1 -name '[0-9][0-9]_*' -printf '%f\n' | sort | awk '$0 >= "07"')
	mapfile -t on_runtime < <(sed -nE 's/^STAGES_([0-9][0-9]_[a-z0-9_]+) :=.* runtime( |$).*/\1/p' Makefile)
	[ "${#on_runtime[@]}" -ge 2 ] || fail "no step names the runtime in the Makefile's STAGES_ lists"
	for step in "${on_runtime[@]}" 08_kv_transfer; do
		[[ " ${steps[*]} " == *" $step "* ]] || fail "$step is not among the steps from 07 on: ${steps[*]}"
	done
	for step in "${steps[@]}"; do
		[ -f "steps/$step/datapath.c" ] || fail "steps/$step has no datapath.c"
		run grep -lE '\bibv_(post_send|post_recv|poll_cq|wr_complete)\(|struct ibv_(send|recv)_wr\b' "steps/$step"/*.c
		assert_output "steps/$step/datapath.c"
	done
}
