#!/usr/bin/env bash
# failures.sh: print each failed test of bats TAP files with its first diagnostic lines, so a log's tail names what failed.
#
# Usage: tests/tools/failures.sh TAP_FILE...
# CI keeps only the end of a run's output; .ci/run calls this just before the summary
# line, so that the excerpt shows which test failed and why, not only how many.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: failures.sh TAP_FILE..." >&2; exit 2; }
MAX_LINES=${MAX_LINES:-30}

for tap in "$@"; do
	[ -s "$tap" ] || continue
	awk -v tap="$tap" -v max="$MAX_LINES" '
		/^not ok [0-9]+/ { printing = 1; shown = 0; print "failed (" tap "): " $0; next }
		/^(ok|not ok) [0-9]+/ || /^1\.\.[0-9]+$/ { printing = 0; next }
		printing && shown < max { print "  " $0; shown++ }
		printing && shown == max { print "  ... (the rest is in " tap ")"; shown++ }
	' "$tap"
done
