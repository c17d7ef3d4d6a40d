#!/usr/bin/env bash
# timings.sh: print README's table of timings from the last .ci/run (build/test-results/timings.tsv), as Markdown.
#
# Usage: tests/tools/timings.sh [TIMINGS_TSV]
# .ci/run writes one line per part of the run: NAME SECONDS SUMMARY, where
# SUMMARY is that part's "N passed, N failed, N skipped", and a last line "total SECONDS"
# (the fresh-machine check runs beside make test, so the parts add up to more).
set -euo pipefail
# The backquotes below are Markdown's, not the shell's.
bq='`'
tsv=${1:-build/test-results/timings.tsv}
[ -s "$tsv" ] || { echo "timings: no $tsv: run .ci/run first" >&2; exit 1; }
echo "| Part of ${bq}.ci/run${bq} | Time | Result |"
echo "|---|---|---|"
total=0
while IFS=$'\t' read -r name seconds summary; do
	case $name in
	total) total=$seconds; continue ;;
	test) label="${bq}make test${bq}" ;;
	fresh-machine) label="the fresh-machine check (beside ${bq}make test${bq})" ;;
	*) label="${bq}make $name${bq}" ;;
	esac
	printf '| %s | %d min %02d s | %s |\n' "$label" $((seconds / 60)) $((seconds % 60)) "$summary"
done <"$tsv"
printf '| the whole %s.ci/run%s | %d min %02d s | |\n' "$bq" "$bq" $((total / 60)) $((total % 60))
echo
echo "Measured on $(date -u -r "$tsv" +%Y-%m-%d) on a $(nproc)-core machine, commit $(git log -1 --format=%h)."
