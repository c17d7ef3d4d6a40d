#!/usr/bin/env bats
# render.bats: the book as a reader sees it: the front door and a step's chapter in each language, rendered as GitHub renders them, opened in headless Chromium with their figures, screenshots saved ('make test-render').
# The pages are cmark-gfm's HTML (tests/tools/render-check.py --html); the screenshots and pages are kept in the results directory.
# bats file_tags=outside-vm

setup_file() {
	cd "$BATS_TEST_DIRNAME/../.." || return 1
	export PAGES=$RDMA_STEPS_RESULTS/pages
	rm -rf "$PAGES"
	# shellcheck disable=SC2046  # the chapters' names have no spaces
	tests/tools/render-check.py --html "$PAGES" $(tests/tools/chapters.sh en) $(tests/tools/chapters.sh zh-CN) >"$RDMA_STEPS_RESULTS/render-check.out"
}

setup() {
	load ../lib/test_helper
	cd "$PROJECT_ROOT"
}

# Opens PAGE (relative to the pages) in headless Chromium at WIDTHxHEIGHT; saves NAME.png and the DOM after load as NAME.dom.
open_page() {
	local page=$1 size=$2 name=$3
	[ -f "$PAGES/$page" ] || fail "no rendered page $PAGES/$page"
	run timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
		--screenshot="$RDMA_STEPS_RESULTS/$name.png" "file://$PAGES/$page"
	assert_success
	[ -s "$RDMA_STEPS_RESULTS/$name.png" ] || fail "chromium wrote no screenshot of $page"
	timeout 60 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$PAGES/$page" 2>/dev/null >"$RDMA_STEPS_RESULTS/$name.dom" ||
		fail "chromium could not load $page"
}

@test "render: a CJK font is installed, so that the Chinese pages show characters, not boxes" {
	run fc-list ':lang=zh' family
	assert_success
	assert_output --partial 'Noto Sans CJK'
}

@test "render: the front door and step 03's chapter open in Chromium, on a desktop and on a phone, in both languages, every figure loaded" {
	local lang page name
	for lang in en zh-CN; do
		suffix=.html
		[ "$lang" = zh-CN ] && suffix=.zh-CN.html
		for page in "TUTORIAL$suffix" "steps/03_cq_qp_rts/README$suffix"; do
			name=$(tr '/' '-' <<<"${page%.html}")
			open_page "$page" 1280,2000 "$name.desktop"
			open_page "$page" 390,1600 "$name.phone"
			grep -q '<h1' "$RDMA_STEPS_RESULTS/$name.desktop.dom" || fail "$page has no heading once loaded"
			run grep -o 'images: [0-9]*, not loaded: [0-9]*[^<]*' "$RDMA_STEPS_RESULTS/$name.desktop.dom"
			assert_success
			assert_output --regexp '^images: [0-9]+, not loaded: 0 *$'
		done
	done
	# Step 03's chapter shows its two figures, the QP state machine and the rdma_cm handshake.
	assert_output --regexp '^images: 2, not loaded: 0'
	grep -q '第 03 步' "$RDMA_STEPS_RESULTS/steps-03_cq_qp_rts-README.zh-CN.desktop.dom" || fail "the Chinese chapter's text is not in the page"
}
