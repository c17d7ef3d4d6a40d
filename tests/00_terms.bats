#!/usr/bin/env bats
# 00_terms.bats: one Chinese term per idea (book/terms.zh-CN.tsv), in every Chinese chapter, in README.zh-CN.md and in INTERVIEW.md's Chinese.
# Needs no RDMA device: it reads the book, so it runs on the host.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
}

@test "the Chinese book, README.zh-CN.md, the Chinese figures' sources and INTERVIEW.md's Chinese use the book's term for each idea of book/terms.zh-CN.tsv, never the refused one" {
	run "$PROJECT_ROOT/tests/tools/terms.py"
	assert_success
	assert_output ""
}

@test "terms.py: a refused term in prose is named with its line and the book's term; in code, fenced or inline, it is not" {
	f=$BATS_TEST_TMPDIR/x.zh-CN.md
	printf '# 标题\n\n网卡写一个完成项。\n\n`完成项` 是代码。\n\n```\n完成项\n```\n' >"$f"
	run "$PROJECT_ROOT/tests/tools/terms.py" "$f"
	assert_failure 1
	assert_output "$f:3: '完成项': the book says '完成事件' (a completion (CQE), what ibv_poll_cq returns)"
}
