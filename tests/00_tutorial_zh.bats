#!/usr/bin/env bats
# 00_tutorial_zh.bats: the Chinese edition (every chapter's .zh-CN.md twin, README.zh-CN.md) keeps step with the English: same sections, code, tables, links and figures, and a change to the English alone fails.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	EN=$PROJECT_ROOT/TUTORIAL.md
	ZH=$PROJECT_ROOT/TUTORIAL.zh-CN.md
	PARITY=$PROJECT_ROOT/tests/tools/tutorial-parity.py
}

# A copy of both editions of the book in the test's own folder, where a test may change them
# (the chapters link each other, so the whole tree of Markdown files and figures comes along).
copy_editions() {
	(cd "$PROJECT_ROOT" && tar -cf - $(git ls-files '*.md' 'diagrams/*' 'tests/*' 'book/*' 2>/dev/null || echo TUTORIAL.md TUTORIAL.zh-CN.md steps book diagrams tests)) |
		tar -xf - -C "$BATS_TEST_TMPDIR"
	cd "$BATS_TEST_TMPDIR"
}

@test "the Chinese chapters: each has the same sections, code blocks, inline code, links, tables and figures as its English chapter, translated from its current text" {
	cd "$PROJECT_ROOT"
	local en zh pairs=0
	while IFS=$'\t' read -r en zh; do
		run "$PARITY" "$en" "$zh"
		assert_success
		assert_output ""
		pairs=$((pairs + 1))
	done < <(tests/tools/chapters.sh pairs)
	[ "$pairs" -ge 15 ] || fail "only $pairs chapters in book/chapters.txt"
}

@test "the Chinese chapters: every heading carries the hash of the English section it translates" {
	cd "$PROJECT_ROOT"
	local en zh total=0
	while IFS=$'\t' read -r en zh; do
		headings=$(tests/tools/check-links.sh --slugs "$en" | wc -l)
		stamps=$(grep -c '^<!-- source: [0-9a-f]\{12\} -->$' "$zh")
		[ "$stamps" -eq "$headings" ] || fail "$zh: $stamps stamps for the $headings headings of $en"
		total=$((total + headings))
	done < <(tests/tools/chapters.sh pairs)
	[ "$total" -gt 120 ] || fail "only $total headings found in the book"
}

@test "tutorial-parity.py: a one-line change to the English alone fails, naming the section and what differs" {
	copy_editions
	# The first figure " 4 KiB" in the prose of step 07's chapter, outside code blocks, becomes 12 KiB.
	ch=steps/07_allreduce/README
	line=$(awk '/^```/ { code = !code; next } !code && / 4 KiB/ { print NR; exit }' $ch.md)
	[ -n "$line" ] || fail "no prose line of $ch.md says 4 KiB"
	sed -i "${line}s/ 4 KiB/ 12 KiB/" $ch.md
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_failure
	assert_output --regexp "section \"[^\"]+\" \\($ch.md line [0-9]+, $ch.zh-CN.md line [0-9]+\\): figures in the English but not in the translation: 12 KiB"
	assert_output --partial 'the English changed since this section was translated'
}

@test "tutorial-parity.py: a changed command, a new heading, a changed table cell and a reworded sentence each fail in their section" {
	copy_editions
	ch=steps/01_open_pd/README
	cp $ch.md original.md
	# A command in step 01's "Run it by hand".
	sed -i '0,/^build\/bin\/01_open_pd/s//build\/bin\/01_open_pd --verbose/' $ch.md
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_failure
	assert_output --regexp 'section "Step 01: open the device and allocate a protection domain > Run it by hand" .*the code block at English line [0-9]+ differs'
	assert_output --partial '"build/bin/01_open_pd --verbose'

	cp original.md $ch.md
	sed -i 's/^## Predict, then run$/## Predict, then run\n\n## An extra section/' $ch.md
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_failure
	assert_output --partial "has no counterpart in $ch.zh-CN.md"

	cp original.md $ch.md
	# A link to the chapter after it that the Chinese does not have.
	sed -i 's|^- `main.c` is the program.|- `main.c` is the program ([step 02](../02_reg_mr/README.md#goal)).|' $ch.md
	cmp -s original.md $ch.md && fail "the line to change is not in $ch.md"
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_failure
	assert_output --partial 'links to in the English but not in the translation: steps/02_reg_mr/README.md, heading 2'
	cp original.md $ch.md
	cp TUTORIAL.md original.md

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
	assert_output --regexp 'section "RDMA verbs, step by step > 1. What RDMA is and why it beats TCP" .*the English changed since this section was translated'
}

@test "tutorial-parity.py: each edition shows its own figure: the English figure in a Chinese chapter, another figure's twin, or the Chinese figure in an English chapter fails in its section, named" {
	copy_editions
	ch=steps/03_cq_qp_rts/README
	cp $ch.zh-CN.md original.md
	cp $ch.md original-en.md
	# As committed, the Chinese chapter shows the Chinese twin of the English chapter's figure: no difference.
	grep -qF '](../../diagrams/qp_state_machine.zh-CN.svg)' $ch.zh-CN.md || fail "$ch.zh-CN.md does not show diagrams/qp_state_machine.zh-CN.svg"
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_success

	# The Chinese chapter showing the English figure.
	sed -i 's|diagrams/qp_state_machine\.zh-CN\.svg)|diagrams/qp_state_machine.svg)|' $ch.zh-CN.md
	cmp -s original.md $ch.zh-CN.md && fail "the figure to change is not in $ch.zh-CN.md"
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_failure
	assert_output --regexp "section \"Step 03: [^\"]+\" \\($ch.md line [0-9]+, $ch.zh-CN.md line [0-9]+\\): links to in the translation but not in the English: diagrams/qp_state_machine.svg \\(the English figure: show its twin diagrams/qp_state_machine.zh-CN.svg here\\)"

	# The Chinese chapter showing another figure's twin.
	cp original.md $ch.zh-CN.md
	sed -i 's|diagrams/qp_state_machine\.zh-CN\.svg)|diagrams/object_graph.zh-CN.svg)|' $ch.zh-CN.md
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_failure
	assert_output --partial 'links to in the English but not in the translation: diagrams/qp_state_machine.svg'
	assert_output --partial 'links to in the translation but not in the English: diagrams/object_graph.svg'

	# The English chapter showing the Chinese figure.
	cp original.md $ch.zh-CN.md
	sed -i 's|diagrams/qp_state_machine\.svg)|diagrams/qp_state_machine.zh-CN.svg)|' $ch.md
	cmp -s original-en.md $ch.md && fail "the figure to change is not in $ch.md"
	run "$PARITY" $ch.md $ch.zh-CN.md
	assert_failure
	assert_output --partial 'links to in the English but not in the translation: diagrams/qp_state_machine.zh-CN.svg (the Chinese figure: show diagrams/qp_state_machine.svg here)'
}

@test "the Chinese chapters: the generated diffs and quoted code are the step sources', with the words around them in Chinese" {
	run "$PROJECT_ROOT/tests/tools/tutorial-diffs.sh" --check
	assert_success
	grep -qF 'main.c 从第 04 步到第 05 步改了什么' "$PROJECT_ROOT/steps/05_poll_destroy/README.zh-CN.md" || fail "no Chinese summary line for step 05's diff"
	grep -qF '摘自 `steps/03_cq_qp_rts/cq_qp_rts.c`' "$PROJECT_ROOT/steps/03_cq_qp_rts/README.zh-CN.md" || fail "no Chinese line above step 03's quoted code"
}

@test "README.md, README.zh-CN.md and every chapter link the other language near the top, and the Chinese chapters link Chinese chapters" {
	cd "$PROJECT_ROOT"
	head -n 5 README.md | grep -qF '(README.zh-CN.md)' || fail "README.md does not link README.zh-CN.md at the top"
	head -n 5 README.zh-CN.md | grep -qF '(README.md)' || fail "README.zh-CN.md does not link README.md at the top"
	while IFS=$'\t' read -r en zh; do
		head -n 5 "$en" | grep -qF "($(basename "$zh"))" || fail "$en does not link $(basename "$zh") at the top"
		head -n 5 "$zh" | grep -qF "($(basename "$en"))" || fail "$zh does not link $(basename "$en") at the top"
		# A Chinese chapter sends its reader to Chinese chapters: no link to another English chapter
		# (CONTRIBUTING.md is not part of the book and has no Chinese twin).
		grep -oE '\]\([^)#]*\.md(#[^)]*)?\)' "$zh" | grep -vE '\.zh-CN\.md|\]\((\.\./)*(INTERVIEW|README|CONTRIBUTING)\.md|\]\('"$(basename "$en")"'\)' &&
			fail "$zh links an English chapter (above)"
	done < <(tests/tools/chapters.sh pairs)
	run tests/tools/check-links.sh README.zh-CN.md $(tests/tools/chapters.sh zh-CN)
	assert_success
}
