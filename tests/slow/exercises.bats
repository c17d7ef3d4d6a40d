#!/usr/bin/env bats
# exercises.bats: 'make exercise' writes a skeleton of each step that builds, fails its step's main test, which the reference passes ('make test-lab').
# The skeletons are built here, on the host; the tests run in a VM of their own.
# bats file_tags=outside-vm

setup_file() {
	local root step
	root=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
	cd "$root" || return 1
	export WORK=build/test-exercises
	rm -rf "$WORK"
	mkdir -p "$WORK"
	for step in steps/[0-9][0-9]_*; do
		step=${step#steps/}
		{ tests/exercise/make-exercise.sh "${step%%_*}" "$WORK/work" &&
			make --no-print-directory -s BUILD="$WORK/$step" EXERCISE="$step" EXERCISE_DIR="$WORK/work" \
				"$WORK/$step/bin/$step"; } >"$WORK/$step.log" 2>&1
		echo $? >"$WORK/$step.status"
	done
}

setup() {
	load ../lib/test_helper
	# shellcheck source=tests/vm/kernel-choice.bash
	. "$PROJECT_ROOT/tests/vm/kernel-choice.bash"
	cd "$PROJECT_ROOT" || return 1
}

@test "exercises: every step's skeleton builds untouched, with a TODO in each emptied function" {
	for step in steps/[0-9][0-9]_*; do
		step=${step#steps/}
		[ "$(cat "$WORK/$step.status")" = 0 ] || fail "$step's skeleton did not build: $(tail -n 20 "$WORK/$step.log")"
		[ -x "$WORK/$step/bin/$step" ] || fail "$step's skeleton built no program"
		want=$(grep -c "^$step	" tests/exercise/functions.tsv)
		[ "$want" -ge 1 ] || fail "tests/exercise/functions.tsv lists no function for $step"
		got=$(grep -c 'TODO(exercise): write' "$WORK/work/$step"/*.c | awk -F: '{ n += $NF } END { print n }')
		[ "$got" = "$want" ] || fail "$step: $got TODOs in the skeleton, $want functions listed"
		run grep -h 'report_error("TODO: ' "$WORK/work/$step"/*.c
		assert_output --partial "is not written yet"
	done
	# A second 'make exercise' never overwrites a learner's work.
	run tests/exercise/make-exercise.sh 02 "$WORK/work"
	assert_failure 1
	assert_output --partial "exists, with your work in it"
	run tests/exercise/make-exercise.sh 9 "$WORK/work"
	assert_failure 2
	last=$(basename "$(ls -d steps/[0-9][0-9]_* | tail -n 1)")
	assert_output "exercise: no step '9': give STEP=01 to ${last%%_*} (or a name such as 02_reg_mr)"
}

# The first test of FILE, by its name.
first_test() { # FILE
	grep -m 1 '^@test "' "$1" | sed 's/^@test "//; s/" {$//'
}

# Whether the TAP stream TAP says "ok" for the test named NAME.
tap_passed() { # TAP NAME
	awk -v name="$2" '$1 == "ok" { sub(/^ok [0-9]+ /, ""); sub(/ in [0-9]+ms$/, ""); if ($0 == name) found = 1 }
		END { exit !found }' "$1"
}

@test "exercises: each skeleton fails its step's main test, which the reference passes, and names its TODO" {
	# One VM: for each step, its first test against the skeleton, then against the reference.
	# With EXERCISE_REFERENCE_TAP (.ci/run gives it make test's TAP of the same tree, which ran
	# the same tests on the same programs), the reference's result is read there instead.
	rm -f "$WORK/reference-elsewhere"
	[ -z "${EXERCISE_REFERENCE_TAP:-}" ] || touch "$WORK/reference-elsewhere"
	cat >"$WORK/job.sh" <<'JOB'
#!/bin/bash
builds=build/bin
[ -e build/test-exercises/reference-elsewhere ] && builds=
for file in tests/[0-9][0-9]_[a-z]*.bats; do
	step=${file#tests/}; step=${step%.bats}
	[ -d "build/test-exercises/$step" ] || continue
	name=$(grep -m 1 '^@test "' "$file" | sed 's/^@test "//; s/" {$//; s/[][\\.*^$()+?{}|]/\\&/g')
	# A skeleton's program fails at once, and its peer then waits for it: STEP_TIMEOUT
	# (the suite's limit per program) cuts that wait short.
	for build in "build/test-exercises/$step/bin" $builds; do
		tag=${build//\//_}
		start=$SECONDS
		if [ "$build" = build/bin ]; then limit=30; else limit=8; fi
		STEP_TIMEOUT=$limit RDMA_STEPS_BIN=$build bats --filter "^$name\$" "$file" >"/run/results/$step.$tag.tap" 2>&1
		echo $? >"/run/results/$step.$tag.status"
		echo "$step $tag $((SECONDS - start)) s" >>/run/results/times
	done
done
JOB
	chmod +x "$WORK/job.sh"
	mkdir -p "$WORK/results"
	RDMA_VM_TIMEOUT=600 tests/vm/boot.sh "$(vm_kernel_dir "$PWD")" "$WORK/results" "$WORK/job.sh" >"$WORK/boot.out" 2>&1 ||
		fail "the VM's job failed: $(tail -n 20 "$WORK/boot.out")"
	for step in steps/[0-9][0-9]_*; do
		step=${step#steps/}
		skeleton=$WORK/results/$step.build_test-exercises_${step}_bin
		reference=$WORK/results/$step.build_bin
		[ "$(cat "$skeleton.status")" != 0 ] || fail "$step's skeleton passed its main test: $(cat "$skeleton.tap")"
		grep -q '^not ok 1 ' "$skeleton.tap" || fail "$step's skeleton: no failing test in $(cat "$skeleton.tap")"
		grep -q 'TODO: [a-z_0-9]*() in [0-9][0-9]_[a-z_0-9]*/[a-z_0-9]*\.c is not written yet' "$skeleton.tap" ||
			fail "$step's skeleton failed without naming its TODO: $(cat "$skeleton.tap")"
		if [ -n "${EXERCISE_REFERENCE_TAP:-}" ]; then
			tap_passed "$EXERCISE_REFERENCE_TAP" "$(first_test "tests/$step.bats")" ||
				fail "the reference did not pass $step's main test in $EXERCISE_REFERENCE_TAP"
			continue
		fi
		[ "$(cat "$reference.status")" = 0 ] || fail "the reference failed $step's main test: $(cat "$reference.tap")"
		grep -q '^ok 1 ' "$reference.tap" || fail "the reference ran no test of $step: $(cat "$reference.tap")"
	done
}
