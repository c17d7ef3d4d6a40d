#!/usr/bin/env bash
# label-coverage.sh: check that every out_* label in steps/ and common/ ran, from the gcov counts of a run of the coverage build.
#
# Usage: tests/label-coverage.sh COVERAGE_BUILD RESULTS_DIR
# The run (make test-faults) left its counts under RESULTS_DIR/gcov, at the
# objects' absolute paths (GCOV_PREFIX).  A label ran when the first line
# after it that holds code has a count.  Writes RESULTS_DIR/labels.tap: one
# test per source file with out_* labels, naming each label that never ran.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
build=${1:?usage: label-coverage.sh COVERAGE_BUILD RESULTS_DIR}
results=${2:?usage: label-coverage.sh COVERAGE_BUILD RESULTS_DIR}
counts=$results/gcov$root/$build/obj
tap=$results/labels.tap
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mapfile -t sources < <(grep -l '^out_[a-z_]*:' steps/*/*.c common/*.c)
echo "1..${#sources[@]}" >"$tap"
n=0 failed=0
for src in "${sources[@]}"; do
	n=$((n + 1))
	obj=${src%.c}
	mkdir -p "$work/$(dirname "$obj")"
	cp "$build/obj/$obj.gcno" "$work/$obj.gcno"
	if [ -f "$counts/$obj.gcda" ]; then
		cp "$counts/$obj.gcda" "$work/$obj.gcda"
		# gcov -t: "COUNT: LINE:SOURCE", COUNT "-" for no code, "#####" for never run.
		verdict=$(gcov -t -o "$work/$(dirname "$obj")" "$src" 2>/dev/null | awk -F: '
			{ count = $1; gsub(/ /, "", count); text = $0; sub(/^[^:]*:[^:]*:/, "", text) }
			text ~ /^out_[a-z_]+:/ {
				label = text; sub(/:.*/, "", label)
				pending = label " (line " ($2 + 0) ")"; ran[pending] = 0; next
			}
			pending != "" && count != "-" { ran[pending] = (count !~ /^[#=]+$/) ? count : 0; pending = "" }
			END {
				for (l in ran) labels++
				if (!labels) { print "never ran: gcov showed no out_* label"; exit }
				for (l in ran) if (ran[l]) done = done " " l " " ran[l] "x"; else never = never " " l
				if (never != "") print "never ran:" never; else print "every label ran:" done
			}')
	else
		verdict="never ran: no counts for $src in $counts (did the run use $build/bin?)"
	fi
	if [[ $verdict == "every label ran:"* ]]; then
		echo "ok $n $src: $verdict" | tee -a "$tap"
	else
		echo "not ok $n $src: $verdict" | tee -a "$tap"
		failed=$((failed + 1))
	fi
done
[ "$failed" -eq 0 ]
