#!/usr/bin/env bash
# check-expected.sh: check that every output line TUTORIAL.md shows still appears in what its commands print.
#
# Usage: tests/check-expected.sh DEMO_OUTPUT
# DEMO_OUTPUT is what tests/demo.sh printed while it ran TUTORIAL.md's command
# blocks.  The lines shown as output are those of every block under an
# "### Expected output" heading and of every block fenced as ```output.  Both
# sides are normalised first: numbers, addresses, keys, GIDs and times (anything
# with a digit in it) become N, and runs of blank space one space.  A line is
# checked against the demo's output for the same step.  Lines in parentheses
# (the tutorial's own notes) and lines with <placeholders> are not output, and
# are skipped.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
demo=${1:?usage: check-expected.sh DEMO_OUTPUT}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

normalise() {
	sed -E 's/[[:space:]]+/ /g; s/[0-9a-fA-Fx:.]*[0-9][0-9a-fA-Fx:.]*/N/g; s/ $//'
}

# The demo's output, one file per step ("######## step NN: ..." starts a step).
awk -v dir="$work" '/^######## step [0-9][0-9]:/ { file = dir "/demo." $3 } file { print > file }' "$demo"
for f in "$work"/demo.*; do normalise <"$f" >"$f.norm"; done

# Every line shown as output, tagged with its step.
awk '/^## Step [0-9][0-9]:/ { step = substr($3, 1, 2) ":" }
     /^## / && !/^## Step/ { step = "" }
     /^### / { expected = ($0 ~ /^### Expected output/) }
     /^```/ { if (!inblock) { inblock = 1; output = expected || $0 == "```output" } else inblock = 0; next }
     inblock && output && step != "" { print step "\t" $0 }' TUTORIAL.md >"$work/lines"

missing=0
while IFS=$'\t' read -r step line; do
	case $line in
	"" | "("* | *"<"*">"*) continue ;;
	esac
	want=$(normalise <<<"$line")
	norm=$work/demo.$step.norm
	if [ ! -f "$norm" ] || ! grep -qxF -- "$want" "$norm"; then
		echo "TUTORIAL.md, step ${step%:}: this expected line is no longer printed: $line"
		missing=$((missing + 1))
	fi
done <"$work/lines"
checked=$(wc -l <"$work/lines")
echo "expected-output lines checked: $checked, missing: $missing"
[ "$missing" -eq 0 ]
