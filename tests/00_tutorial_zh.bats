#!/usr/bin/env bats
# 00_tutorial_zh.bats: the Chinese edition (TUTORIAL.zh-CN.md, README.zh-CN.md) keeps step with the English: same sections, code, tables, links and figures, and a change to the English alone fails.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load test_helper
	EN=$PROJECT_ROOT/TUTORIAL.md
	ZH=$PROJECT_ROOT/TUTORIAL.zh-CN.md
	PARITY=$PROJECT_ROOT/tests/tutorial-parity.py
}

# A copy of both editions in the test's own folder, where a test may change them.
copy_editions() {
	cp "$EN" "$ZH" "$BATS_TEST_TMPDIR/"
	cd "$BATS_TEST_TMPDIR"
}

@test "TUTORIAL.zh-CN.md: the same sections, code blocks, inline code, links, tables and figures as TUTORIAL.md, translated from its current text" {
	run "$PARITY" "$EN" "$ZH"
	assert_success
	assert_output ""
}

@test "TUTORIAL.zh-CN.md: every heading carries the hash of the English section it translates" {
	headings=$("$PROJECT_ROOT/tests/check-links.sh" --slugs "$EN" | wc -l)
	stamps=$(grep -c '^<!-- source: [0-9a-f]\{12\} -->$' "$ZH")
	[ "$headings" -gt 100 ] || fail "only $headings headings found in TUTORIAL.md"
	[ "$stamps" -eq "$headings" ] || fail "$stamps stamps for $headings headings"
}

@test "tutorial-parity.py: a one-line change to the English alone fails, naming the section and what differs" {
	copy_editions
	# The first figure " 4 KiB" in the prose, outside code blocks, becomes 12 KiB.
	line=$(awk '/^```/ { code = !code; next } !code && / 4 KiB/ { print NR; exit }' TUTORIAL.md)
	[ -n "$line" ] || fail "no prose line of TUTORIAL.md says 4 KiB"
	sed -i "${line}s/ 4 KiB/ 12 KiB/" TUTORIAL.md
	run "$PARITY" TUTORIAL.md TUTORIAL.zh-CN.md
	assert_failure
	assert_output --regexp 'section "[^"]+" \(TUTORIAL.md line [0-9]+, TUTORIAL.zh-CN.md line [0-9]+\): figures in the English but not in the translation: 12 KiB'
	assert_output --partial 'the English changed since this section was translated'
}

@test "tutorial-parity.py: a changed command, a new heading, a changed table cell and a reworded sentence each fail in their section" {
	copy_editions
	cp TUTORIAL.md original.md
	# A command in step 01's "Run it by hand".
	sed -i '0,/^build\/bin\/01_open_pd/s//build\/bin\/01_open_pd --verbose/' TUTORIAL.md
	run "$PARITY" TUTORIAL.md TUTORIAL.zh-CN.md
	assert_failure
	assert_output --regexp 'section "Step 01: open the device and allocate a protection domain > [^"]+" .*the code block at English line [0-9]+ differs'
	assert_output --partial '"build/bin/01_open_pd --verbose'

	cp original.md TUTORIAL.md
	sed -i 's/^### Predict, then run$/### Predict, then run\n\n### An extra section/' TUTORIAL.md
	run "$PARITY" TUTORIAL.md TUTORIAL.zh-CN.md
	assert_failure
	assert_output --partial 'has no counterpart in TUTORIAL.zh-CN.md'

	cp original.md TUTORIAL.md
	# The first row of section 5's table of nvidia-smi topo's codes.
	sed -i '0,/^| `X` |/s//| `XY` |/' TUTORIAL.md
	run "$PARITY" TUTORIAL.md TUTORIAL.zh-CN.md
	assert_failure
	assert_output --partial "cell 1: code ['XY'] against ['X']"

	cp original.md TUTORIAL.md
	sed -i 's/^RDMA (remote direct memory access) lets/RDMA lets/' TUTORIAL.md
	cmp -s original.md TUTORIAL.md && fail "the sentence to reword is not in TUTORIAL.md"
	run "$PARITY" TUTORIAL.md TUTORIAL.zh-CN.md
	assert_failure
	assert_output --regexp 'section "1. What RDMA is and why it beats TCP" .*the English changed since this section was translated'
}

@test "TUTORIAL.zh-CN.md: the generated diffs and quoted code are the step sources', with the words around them in Chinese" {
	run "$PROJECT_ROOT/tests/tutorial-diffs.sh" --check
	assert_success
	grep -qF 'main.c 从第 04 步到第 05 步改了什么' "$ZH" || fail "no Chinese summary line for step 05's diff"
	grep -qF '摘自 `steps/03_cq_qp_rts/cq_qp_rts.c`' "$ZH" || fail "no Chinese line above step 03's quoted code"
}

@test "README.md, README.zh-CN.md, TUTORIAL.md and TUTORIAL.zh-CN.md each link the other language near the top" {
	cd "$PROJECT_ROOT"
	head -n 5 README.md | grep -qF '(README.zh-CN.md)' || fail "README.md does not link README.zh-CN.md at the top"
	head -n 5 README.zh-CN.md | grep -qF '(README.md)' || fail "README.zh-CN.md does not link README.md at the top"
	head -n 5 TUTORIAL.md | grep -qF '(TUTORIAL.zh-CN.md)' || fail "TUTORIAL.md does not link TUTORIAL.zh-CN.md at the top"
	head -n 5 TUTORIAL.zh-CN.md | grep -qF '(TUTORIAL.md)' || fail "TUTORIAL.zh-CN.md does not link TUTORIAL.md at the top"
	run tests/check-links.sh README.zh-CN.md TUTORIAL.zh-CN.md
	assert_success
}
