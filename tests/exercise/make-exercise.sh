#!/usr/bin/env bash
# make-exercise.sh: writes a learner's copy of step NN, with the stage's verbs functions emptied and a TODO in each ('make exercise').
#
# Usage: tests/exercise/make-exercise.sh STEP DIR
# STEP is a step's number or name (02, 02_reg_mr).  The copy goes to DIR/NN_name.
# Each function that tests/exercise/functions.tsv lists for the step keeps its
# signature and comment; its body becomes a TODO that says what belongs there
# and fails at run time, so the copy builds and its step's tests fail.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=tests/exercise/step.bash
. tests/exercise/step.bash
step=$(resolve_step exercise "${1:-}") || exit 2
dir=${2:?usage: make-exercise.sh STEP DIR}
out=$dir/$step
if [ -e "$out" ]; then
	echo "exercise: $out exists, with your work in it: move it away first, or run 'make check STEP=${step%%_*}'" >&2
	exit 1
fi
mkdir -p "$out"
cp steps/"$step"/*.c steps/"$step"/*.h "$out/"

# Empties FUNCTION in FILE: its body becomes the TODO, casts that use every parameter, and a failing return.
empty_function() { # FILE FUNCTION HINT
	awk -v fn="$2" -v hint="$3" -v where="$step/$1" '
		function params_void(sig,    p, n, i, a, name, out) {
			sub(/^[^(]*\(/, "", sig); sub(/\)[^)]*$/, "", sig)
			if (sig ~ /^[ \t]*void[ \t]*$/) return ""
			n = split(sig, p, ",")
			for (i = 1; i <= n; i++) {
				name = p[i]; sub(/\[.*$/, "", name); gsub(/[ \t]+$/, "", name)
				match(name, /[A-Za-z_][A-Za-z_0-9]*$/)
				out = out "\t(void)" substr(name, RSTART, RLENGTH) ";\n"
			}
			return out
		}
		function failing_return(type) {
			if (type ~ /\*/) return "\treturn NULL;\n"
			if (type ~ /(^|[ \t])void[ \t]*$/) return ""
			if (type ~ /(^|[ \t])bool[ \t]*$/) return "\treturn false;\n"
			return "\treturn -1;\n"
		}
		state == 0 && $0 ~ "^[a-z].*[ *]" fn "\\(" && $0 !~ /;$/ { state = 1; sig = ""; type = $0; sub(fn "\\(.*$", "", type) }
		state == 1 { sig = sig " " $0; print; if ($0 ~ /\)$/) state = 2; next }
		state == 2 && /^\{$/ {
			print
			printf "\t/*\n\t * TODO(exercise): write %s().\n", fn
			n = split(hint, w, " "); line = "\t *"
			for (i = 1; i <= n; i++) {
				if (length(line) + length(w[i]) > 90) { print line; line = "\t *" }
				line = line " " w[i]
			}
			print line
			printf "\t * The chapter of the step, steps/%s/README.md, shows the verbs this stage uses, and tests/%s.bats what it must do.\n\t */\n", step, step
			printf "%s", params_void(sig)
			printf "\treport_error(\"TODO: %s() in %s is not written yet\");\n", fn, where
			printf "%s", failing_return(type)
			state = 3; next
		}
		state == 3 { if ($0 ~ /^}$/) { print; state = 4 } ; next }
		{ print }
		END { if (state != 4) { print "exercise: no function " fn " in " where > "/dev/stderr"; exit 1 } }
	' step="$step" "$out/$1" >"$out/$1.new"
	mv "$out/$1.new" "$out/$1"
}

n=0
while IFS=$'\t' read -r s file fn hint; do
	[ "$s" = "$step" ] || continue
	empty_function "$file" "$fn" "$hint"
	n=$((n + 1))
done < <(grep -v '^#' tests/exercise/functions.tsv)
echo "exercise: wrote $out, step $step with $n function(s) to write, each marked TODO(exercise):"
grep -n 'TODO(exercise): write' "$out"/*.c | sed 's/^/  /; s/:[[:space:]]*\* TODO(exercise): write / /'
echo "exercise: build and test it with 'make check STEP=${step%%_*}'; the reference stays in steps/$step"
