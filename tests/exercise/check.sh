#!/usr/bin/env bash
# check.sh: builds step NN from the learner's copy and runs that step's tests against it ('make check').
#
# Usage: tests/exercise/check.sh STEP DIR
# The build goes to build/exercise (the reference build in build/bin is left
# alone), with DIR/NN_name in place of steps/NN_name.  The step's own bats file
# then runs against it, over soft-RoCE as 'make test' does.  At the end it names
# the first TODO(exercise) still in the copy, and the first test that failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=tests/exercise/step.bash
. tests/exercise/step.bash
step=$(resolve_step check "${1:-}") || exit 2
dir=${2:?usage: check.sh STEP DIR}
[ -d "$dir/$step" ] || { echo "check: no $dir/$step: write it first with 'make exercise STEP=${step%%_*}'" >&2; exit 2; }
results=build/test-results/exercise

echo "check: building $step from $dir/$step into build/exercise"
if ! make --no-print-directory -s BUILD=build/exercise EXERCISE="$step" EXERCISE_DIR="$dir" all; then
	echo "check: $dir/$step does not build: fix the first error above" >&2
	exit 1
fi
RDMA_STEPS_BIN=build/exercise/bin tests/tools/run.sh --results "$results" test "tests/$step.bats"
status=$?
todo=$(grep -n 'TODO(exercise): write' "$dir/$step"/*.c | head -n 1 | sed 's/:[[:space:]]*\* TODO(exercise): write / /')
failed=$(grep -m 1 '^not ok' "$results/tap" 2>/dev/null | sed 's/^not ok [0-9]* //; s/ in [0-9]*ms$//')
if [ "$status" -eq 0 ] && [ -z "$todo" ]; then
	echo "check: $step passes its tests, built from $dir/$step"
	exit 0
fi
[ -n "$failed" ] && echo "check: the first test that failed: $failed"
[ -n "$todo" ] && echo "check: the first TODO left: $todo (delete its TODO comment once the function is written)"
exit 1
