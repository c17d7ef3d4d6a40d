#!/usr/bin/env bash
# slowest.sh: print the slowest tests of bats TAP files written with --timing, slowest first.
#
# Usage: tests/tools/slowest.sh TAP_FILE...   (COUNT=N sets how many: 5 by default)
set -uo pipefail
count=${COUNT:-5}
total=0
while read -r ms; do total=$((total + ms)); done < <(sed -nE 's/^(not )?ok [0-9]+ .* in ([0-9]+)ms( #.*)?$/\2/p' "$@" 2>/dev/null)
echo "slowest tests (of $((total / 1000)) s in tests):"
sed -nE 's/^(not )?ok [0-9]+ (.*) in ([0-9]+)ms( #.*)?$/\3 \2/p' "$@" 2>/dev/null | sort -rn | head -n "$count" |
	while read -r ms name; do
		printf '  %4d.%d s  %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$name"
	done
