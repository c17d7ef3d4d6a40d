#!/usr/bin/env bats
# 00_terms.bats: one Chinese term per idea (book/terms.zh-CN.tsv), in every Chinese chapter, in README.zh-CN.md, in the Chinese figures' sources and in INTERVIEW.md's Chinese; no term glossed with itself.
# Needs no RDMA device: it reads the book, so it runs on the host.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
}

# Writes CONTENT (a printf format) to NAME in the test's folder as $f, and runs terms.py on it.
terms_on() { # NAME CONTENT
	f=$BATS_TEST_TMPDIR/$1
	# shellcheck disable=SC2059  # CONTENT is the format: its \n are the file's lines
	printf "$2" >"$f"
	run "$PROJECT_ROOT/tests/tools/terms.py" "$f"
}

@test "the Chinese book, README.zh-CN.md, the Chinese figures' sources and INTERVIEW.md's Chinese use the book's term for each idea of book/terms.zh-CN.tsv, never the refused one" {
	run "$PROJECT_ROOT/tests/tools/terms.py"
	assert_success
	assert_output ""
}

@test "terms.py: a refused term in prose is named with its line and the book's term; in code, fenced or inline, it is not" {
	terms_on x.zh-CN.md '# 标题\n\n网卡写一个完成项。\n\n`完成项` 是代码。\n\n```\n完成项\n```\n'
	assert_failure 1
	assert_output "$f:3: '完成项': the book says '完成事件' (a completion (CQE), what ibv_poll_cq returns)"
}

@test "terms.py: 投递 for posting, a bare English 'immediate' and 响应方 in prose are refused; 立即数（immediate value）, the spec's 'Last with Immediate' and code are not" {
	terms_on x.zh-CN.md '# 标题\n\n每个发送方给每个对端投递一条链。\n\n32 位的 immediate 里写着交换序号。\n\n完成事件带着 32 位*立即数*（immediate value），最后一个包是 RDMA WRITE Last with Immediate。\n\n`immediate` 和 `投递` 是代码。\n\n在 RC QP 上，响应方按发送顺序执行请求。\n\n```\nimmediate 投递\n```\n'
	assert_failure 1
	assert_output "$f:3: '投递': the book says '提交' (posting a work request (ibv_post_send, ibv_post_recv))
$f:5: 'immediate': the book says '立即数' (the immediate value (imm_data), in English where the prose is Chinese)
$f:11: '响应方': the book says '响应端' (the responder, the requester's peer)"
}

@test "terms.py: a term glossed with itself, X（X）, as a term swapped in both places leaves it, is named; a term glossed with another word is not" {
	terms_on x.zh-CN.md '# 标题\n\n要通知对端，就用*带立即数的 WRITE*（带立即数的 WRITE）：它会消耗对端的一个接收。\n\n也可以是带立即数的 WRITE（带立即数的 WRITE）。\n\n双边（two-sided）操作，N(N - 1) 个 QP，`a`（`a`）。\n'
	assert_failure 1
	assert_output "$f:3: '带立即数的 WRITE（带立即数的 WRITE）': a term glossed with itself: keep one
$f:5: '带立即数的 WRITE（带立即数的 WRITE）': a term glossed with itself: keep one"
}

@test "terms.py: in the glossary, a row's English is not refused, its Chinese is, in either column" {
	terms_on glossary.zh-CN.md '# 术语表\n\n| 中文 | 英文 |\n|---|---|\n| 立即数 | immediate value (`imm_data`) |\n| 带立即数的 WRITE | RDMA write with immediate |\n| 代理线程 | proxy thread：替 GPU kernel 投递 WR 的 CPU 线程 |\n| 投递 | post |\n'
	assert_failure 1
	assert_output "$f:7: '投递': the book says '提交' (posting a work request (ibv_post_send, ibv_post_recv))
$f:8: '投递': the book says '提交' (posting a work request (ibv_post_send, ibv_post_recv))"
}

@test "terms.py: the collectives' literal Chinese (归约散射, 全收集, 全归约, 全交换), 完成通道事件 and 敲 doorbell in prose are refused; the English name glossed once with its literal Chinese, reduce-scatter（归约散射）, is not" {
	terms_on x.zh-CN.md '# 标题\n\nring all-reduce 是一次 reduce-scatter（归约散射）加一次 all-gather（全收集）。\n\n先做归约散射，再做全收集。\n\n等待完成通道事件，再轮询 CQ。\n\n写 WR，再敲 doorbell。\n\n每个 rank 做一次全归约，MoE 做全交换。\n'
	assert_failure 1
	assert_output "$f:5: '归约散射': the book says 'reduce-scatter' (a collective: each rank ends with the sum of one chunk; its literal Chinese glosses it once, where the book first meets it)
$f:5: '全收集': the book says 'all-gather' (a collective: every rank ends with every rank's chunk; its literal Chinese glosses it once, where the book first meets it)
$f:7: '完成通道事件': the book says 'CQ 事件' (the event a completion channel delivers (ibv_get_cq_event), not a completion)
$f:9: '敲 doorbell': the book says '敲门铃' (writing the doorbell, the NIC register that tells it new work requests wait (its English glosses it: 敲门铃（doorbell）))
$f:11: '全归约': the book says 'all-reduce' (a collective: every rank ends with the sum of all the buffers; its literal Chinese glosses it once, where the book first meets it)
$f:11: '全交换': the book says 'all-to-all' (a collective: each rank sends each other rank a part of its own; its literal Chinese glosses it once, where the book first meets it)"
}
