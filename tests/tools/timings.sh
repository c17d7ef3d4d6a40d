#!/usr/bin/env bash
# timings.sh: print CONTRIBUTING.md's table of timings from the last .ci/run (build/test-results/timings.tsv), as Markdown.
#
# Usage: tests/tools/timings.sh [TIMINGS_TSV]
# .ci/run writes one line per part of the run: NAME SECONDS SUMMARY [BESIDE], where
# SUMMARY is that part's "N passed, N failed, N skipped" and BESIDE the part it ran
# beside, if any, and a last line "total SECONDS" (parts run beside others, so the
# parts add up to more).
set -euo pipefail
# The backquotes below are Markdown's, not the shell's.
bq='`'
tsv=${1:-build/test-results/timings.tsv}
[ -s "$tsv" ] || { echo "timings: no $tsv: run .ci/run first" >&2; exit 1; }
echo "| Part of ${bq}.ci/run${bq} | Time | Result |"
echo "|---|---|---|"
total=0
# A part's name as the table shows it: make NAME, or the fresh-machine check.
part_label() {
	case $1 in
	test) echo "${bq}make test${bq}" ;;
	fresh-machine) echo "the fresh-machine check" ;;
	*) echo "${bq}make $1${bq}" ;;
	esac
}
while IFS=$'\t' read -r name seconds summary beside; do
	[ "$name" = total ] && { total=$seconds; continue; }
	label=$(part_label "$name")
	[ -z "$beside" ] || label="$label (beside $(part_label "$beside"))"
	printf '| %s | %d min %02d s | %s |\n' "$label" $((seconds / 60)) $((seconds % 60)) "$summary"
done <"$tsv"
printf '| the whole %s.ci/run%s | %d min %02d s | |\n' "$bq" "$bq" $((total / 60)) $((total % 60))
echo
echo "Measured on $(date -u -r "$tsv" +%Y-%m-%d) on a $(nproc)-core machine, commit $(git log -1 --format=%h)."
