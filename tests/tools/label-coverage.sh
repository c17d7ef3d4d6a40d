#!/usr/bin/env bash
# label-coverage.sh: check that every out_* label in steps/, common/ and runtime/ ran, from the gcov counts of a run of the coverage build.
#
# Usage: tests/tools/label-coverage.sh COVERAGE_BUILD RESULTS_DIR
# The run (make test-faults) left its counts under RESULTS_DIR/gcov, at the
# objects' absolute paths (GCOV_PREFIX): the runs with a fault point under
# gcov/by-point/POINT, the others under gcov itself.  A label ran when the
# first line after it that holds code has a count in any of them.  Writes
# RESULTS_DIR/labels.tap, one test per source file with out_* labels, naming
# each label that never ran, and RESULTS_DIR/labels-by-point.txt, the labels
# that each fault point reached.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
build=${1:?usage: label-coverage.sh COVERAGE_BUILD RESULTS_DIR}
results=${2:?usage: label-coverage.sh COVERAGE_BUILD RESULTS_DIR}
tap=$results/labels.tap
by_point=$results/labels-by-point.txt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "LABEL LINE COUNT" for every out_* label of SRC, from the counts under COUNTS (0: never ran).
label_counts() {
	local src=$1 counts=$2 obj=${1%.c}
	[ -f "$counts/$obj.gcda" ] || return 0
	rm -rf "$work/obj" && mkdir -p "$work/obj"
	cp "$build/obj/$obj.gcno" "$work/obj/$(basename "$obj").gcno"
	cp "$counts/$obj.gcda" "$work/obj/$(basename "$obj").gcda"
	# gcov -t: "COUNT: LINE:SOURCE", COUNT "-" for no code, "#####" for never run.
	gcov -t -o "$work/obj" "$src" 2>/dev/null | awk -F: '
		{ count = $1; gsub(/ /, "", count); text = $0; sub(/^[^:]*:[^:]*:/, "", text) }
		text ~ /^out_[a-z_]+:/ { label = text; sub(/:.*/, "", label); line = $2 + 0; next }
		label != "" && count != "-" {
			print label, line, (count ~ /^[#=]+$/) ? 0 : count; label = ""
		}'
}

mapfile -t sources < <(grep -l '^out_[a-z_]*:' steps/*/*.c common/*.c runtime/*.c)
mapfile -t point_dirs < <(find "$results/gcov/by-point" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort)

: >"$by_point"
for dir in "${point_dirs[@]}"; do
	reached=()
	for src in "${sources[@]}"; do
		while read -r label _ count; do
			[ "$count" != 0 ] && reached+=("$src:$label")
		done < <(label_counts "$src" "$dir$root/$build/obj")
	done
	echo "$(basename "$dir"): ${reached[*]:-(no out_* label)}" >>"$by_point"
done

echo "1..${#sources[@]}" >"$tap"
n=0 failed=0
for src in "${sources[@]}"; do
	n=$((n + 1))
	# Every label, from the source itself; then its counts summed over every run's directory.
	verdict=$({
		grep -n '^out_[a-z_]*:' "$src" | sed -E 's/^([0-9]+):(out_[a-z_]+):.*/\2 \1 0/'
		label_counts "$src" "$results/gcov$root/$build/obj"
		for dir in "${point_dirs[@]}"; do label_counts "$src" "$dir$root/$build/obj"; done
	} | awk '
		{ key = $1 " (line " $2 ")"; ran[key] += $3 }
		END {
			for (l in ran) if (ran[l]) done = done " " l " " ran[l] "x"; else never = never " " l
			if (never != "") print "never ran:" never; else print "every label ran:" done
		}')
	if [[ $verdict == "every label ran:"* ]]; then
		echo "ok $n $src: $verdict" | tee -a "$tap"
	else
		echo "not ok $n $src: $verdict" | tee -a "$tap"
		failed=$((failed + 1))
	fi
done
echo "label-coverage: the labels each fault point reached are in $by_point"
[ "$failed" -eq 0 ]
