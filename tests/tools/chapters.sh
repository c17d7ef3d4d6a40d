#!/usr/bin/env bash
# chapters.sh: print the book's chapters in reading order, from book/chapters.txt, for the scripts that read the book.
#
# Usage: tests/tools/chapters.sh en      the English chapters, one a line
#        tests/tools/chapters.sh zh-CN   their Chinese twins (NAME.zh-CN.md beside NAME.md)
#        tests/tools/chapters.sh pairs   "ENGLISH<TAB>CHINESE", one pair a line
# Paths are relative to the repository root.  A chapter the list names but the
# tree lacks is an error, named, so that a renamed chapter cannot drop out of the checks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
list=book/chapters.txt
what=${1:?usage: tests/tools/chapters.sh en|zh-CN|pairs}
status=0
while read -r en; do
	zh=${en%.md}.zh-CN.md
	for f in "$en" "$zh"; do
		[ -f "$f" ] || { echo "chapters.sh: $list names $en, but there is no $f" >&2; status=1; }
	done
	case $what in
	en) echo "$en" ;;
	zh-CN) echo "$zh" ;;
	pairs) printf '%s\t%s\n' "$en" "$zh" ;;
	*) echo "chapters.sh: unknown list '$what': en, zh-CN or pairs" >&2; exit 2 ;;
	esac
done < <(grep -v -e '^#' -e '^$' "$list")
exit "$status"
