#!/usr/bin/env bash
# summarize.sh: print "N passed, N failed, N skipped" over bats TAP files; fail unless every planned test ran and passed.
#
# Usage: tests/tools/summarize.sh TAP_FILE...
# Each file has its own plan; a file that is missing or empty counts as one failure.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: summarize.sh TAP_FILE..." >&2; exit 2; }

passed=0 failed=0 skipped=0
for tap in "$@"; do
	if [ ! -s "$tap" ]; then
		echo "summary: no test results in $tap (the run never started, or the VM never reported); counted as one failure" >&2
		failed=$((failed + 1))
		continue
	fi
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$tap" | head -n 1)
	# "1..0": a run that was asked for no test, such as the host's part of TESTS=tests/01_open_pd.bats.
	[ "$plan" = 0 ] && continue
	plan=${plan:-0}
	ok=$(grep -cE '^ok [0-9]+' "$tap")
	skip=$(grep -cE '^ok [0-9]+ .*# skip' "$tap")
	not_ok=$(grep -cE '^not ok [0-9]+' "$tap")
	missing=$((plan - ok - not_ok))
	if [ "$plan" -eq 0 ]; then
		echo "summary: $tap has no plan line; counted as one failure" >&2
		missing=1
	elif [ "$missing" -gt 0 ]; then
		echo "summary: $missing of $plan planned tests in $tap never reported (the run was cut short); counted as failed" >&2
	else
		missing=0
	fi
	passed=$((passed + ok - skip))
	skipped=$((skipped + skip))
	failed=$((failed + not_ok + missing))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
