#!/usr/bin/env bats
# 00_render.bats: every Markdown file of the project renders as GitHub renders it (cmark-gfm): at most 100 KB, every heading and table rendered, no raw Markdown left.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	cd "$PROJECT_ROOT"
}

# Every Markdown file of the project: the chapters of both languages and the rest.
markdown_files() {
	{ tests/tools/chapters.sh en; tests/tools/chapters.sh zh-CN; git ls-files '*.md' 2>/dev/null || find . -name '*.md' -not -path './build/*' -not -path './work/*'; } | sed 's|^\./||' | sort -u
}

@test "render: every Markdown file of the project, rendered by cmark-gfm, is at most 100 KB, with every heading and table rendered and no raw Markdown left" {
	mapfile -t files < <(markdown_files)
	[ "${#files[@]}" -gt 30 ] || fail "only ${#files[@]} Markdown files found"
	run tests/tools/render-check.py "${files[@]}"
	assert_success
	assert_output ""
	# The largest file in each language, for the record.
	for pattern in '\.zh-CN\.md$' '^(.(?!\.zh-CN\.md$))*$'; do
		largest=$(printf '%s\n' "${files[@]}" | grep -P "$pattern" | xargs wc -c | grep -v ' total$' | sort -n | tail -n 1)
		echo "# largest: $largest" >&3
	done
}

@test "render-check.py: a file over 100 KB, an unclosed code block, a table that lost a cell and an unclosed <details> each fail, named" {
	dir=$BATS_TEST_TMPDIR
	head -c 101000 /dev/zero | tr '\0' 'a' | fold -w 100 >"$dir/big.md"
	printf '# One\n\n```sh\nls\n\n## Two\n' >"$dir/fence.md"
	printf '# One\n\n| a | b |\n|---|\n| 1 | 2 |\n' >"$dir/table.md"
	printf '# One\n\n<details><summary>Answer</summary>\n\nText.\n\n## Two\n' >"$dir/details.md"
	printf '# One\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<details><summary>Answer</summary>\n\nText.\n\n</details>\n' >"$dir/good.md"
	run tests/tools/render-check.py "$dir/good.md"
	assert_success
	assert_output ""
	run tests/tools/render-check.py "$dir/big.md" "$dir/fence.md" "$dir/table.md" "$dir/details.md"
	assert_failure
	assert_output --regexp "big.md: [0-9]+ bytes, over the 100 KB limit"
	assert_output --partial "$dir/fence.md: the code block opened at line 3 is never closed"
	assert_output --partial "$dir/table.md: 1 tables in the source, 0 rendered"
	assert_output --partial "$dir/details.md: 1 <details> opened, 0 closed"
}
