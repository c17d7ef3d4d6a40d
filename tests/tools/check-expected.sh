#!/usr/bin/env bash
# check-expected.sh: check that every output line the book shows still appears in what its commands print.
#
# Usage: tests/tools/check-expected.sh DEMO_OUTPUT
# DEMO_OUTPUT is what tests/tools/demo.sh printed while it ran the book's command
# blocks.  The chapters are book/chapters.txt's; one under steps/NN_name/ is step
# NN's.  The lines shown as output are those of every block under an "Expected
# output" heading (at any level) and of every block fenced as ```output.  Both
# sides are normalised first: numbers, addresses, keys, GIDs and times (anything
# with a digit in it) become N, and runs of blank space one space.  A line is
# checked against the demo's output for the same step.  Lines in parentheses
# (the tutorial's own notes) and lines with <placeholders> are not output, and
# are skipped.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
demo=${1:?usage: check-expected.sh DEMO_OUTPUT}
[ -r "$demo" ] || { echo "check-expected: cannot read $demo" >&2; exit 2; }

# shellcheck disable=SC2046  # the chapters' names have no spaces
# One awk for the whole check: in the test VM every process costs about 80 ms,
# and a sed and a grep for each of 400 lines took a minute and a half.
awk '
# Each run of the characters of numbers, addresses and GIDs (0-9a-fA-Fx:.) that holds a
# digit becomes N, char by char: the mawk of Debian 12 (1.3.4 20200120) gets the one-gsub form,
# /[0-9a-fA-Fx:.]*[0-9][0-9a-fA-Fx:.]*/, wrong, leaving "a 0: 4 b 11.8" as "a 0: 4 b N".
function normalise(s,    out, run, digit, i, c) {
	gsub(/[[:space:]]+/, " ", s)
	out = ""; run = ""; digit = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (index("0123456789abcdefABCDEFx:.", c)) {
			run = run c
			digit = digit || index("0123456789", c)
			continue
		}
		out = out (digit ? "N" : run) c
		run = ""; digit = 0
	}
	out = out (digit ? "N" : run)
	sub(/ $/, "", out)
	return out
}
# The demo output: "######## step NN: ..." starts a step; each line is kept, normalised, under it.
FNR == NR {
	if ($0 ~ /^######## step [0-9][0-9]:/)
		demo_step = $3
	if (demo_step != "")
		printed[demo_step, normalise($0)] = 1
	next
}
# The chapters: every line shown as output, tagged with the step of its chapter.
FNR == 1 { step = ""; expected = 0; if (match(FILENAME, /^steps\/[0-9][0-9]_/)) step = substr(FILENAME, 7, 2) ":" }
!inblock && /^#+ / { expected = ($0 ~ /^#+ Expected output/) }
/^```/ { if (!inblock) { inblock = 1; output = expected || $0 == "```output" } else inblock = 0; next }
inblock && output && step != "" {
	checked++
	if ($0 == "" || $0 ~ /^\(/ || $0 ~ /<.*>/)
		next
	if (!((step, normalise($0)) in printed)) {
		print FILENAME " line " FNR ", step " substr(step, 1, 2) ": this expected line is no longer printed: " $0
		missing++
	}
}
END {
	printf "expected-output lines checked: %d, missing: %d\n", checked, missing
	exit missing > 0
}' "$demo" $(tests/tools/chapters.sh en)
