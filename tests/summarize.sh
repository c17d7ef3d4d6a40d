#!/usr/bin/env bash
# summarize.sh: print "N passed, N failed, N skipped" from a bats TAP file; fail unless every planned test ran and passed.
#
# Usage: tests/summarize.sh TAP_FILE
set -uo pipefail
tap=${1:?usage: summarize.sh TAP_FILE}

if [ ! -s "$tap" ]; then
	echo "summary: no test results in $tap (the suite never ran, or the VM never reported)" >&2
	echo "0 passed, 0 failed, 0 skipped"
	exit 1
fi
plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$tap" | head -n 1)
plan=${plan:-0}
ok=$(grep -cE '^ok [0-9]+' "$tap")
skipped=$(grep -cE '^ok [0-9]+ .*# skip' "$tap")
failed=$(grep -cE '^not ok [0-9]+' "$tap")
passed=$((ok - skipped))
missing=$((plan - ok - failed))
if [ "$missing" -gt 0 ]; then
	echo "summary: $missing of $plan planned tests never reported (the run was cut short); counted as failed" >&2
	failed=$((failed + missing))
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$plan" -gt 0 ]
