#!/usr/bin/env bats
# 00_docs.bats: the prose holds together: internal links resolve, the contents list every section, INTERVIEW.md's figures are TUTORIAL.md's, and the reading times follow from the word counts.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load test_helper
	TUTORIAL=$PROJECT_ROOT/TUTORIAL.md
	INTERVIEW=$PROJECT_ROOT/INTERVIEW.md
}

@test "docs: every internal link in README.md, TUTORIAL.md (and its translations) and INTERVIEW.md resolves" {
	cd "$PROJECT_ROOT"
	files=(README.md INTERVIEW.md TUTORIAL.md)
	for f in TUTORIAL.*.md; do [ -f "$f" ] && files+=("$f"); done
	run tests/check-links.sh "${files[@]}"
	assert_success
	assert_output ""
}

@test "check-links.sh: finds anchors of Chinese headings, repeated headings and a later step, and names each broken link" {
	dir=$BATS_TEST_TMPDIR/links
	mkdir -p "$dir"
	cat >"$dir/TUTORIAL.zh-CN.md" <<-'EOF'
		# RDMA verbs 教程
		## 1. RDMA 是什么，为什么比 TCP 快
		## Step 07: all-reduce over a ring
		### 目标
		### 目标
		## `timeout` 和 `retry_cnt`：status 12 从哪来
		[a](#1-rdma-是什么为什么比-tcp-快) [b](#step-07-all-reduce-over-a-ring) [c](#目标-1)
		[d](#timeout-和-retry_cnt status-12-从哪来) [e](#timeout-和-retry_cntstatus-12-从哪来) [f](other.md#其他)
		[g](#%E7%9B%AE%E6%A0%87) [h](https://example.com/#anything) `[i](#in-inline-code)`
		```
		[j](#in-a-fence)
		```
	EOF
	printf '## 其他\n' >"$dir/other.md"
	# [d] has a space, so it is not a link; every other link resolves.
	run "$PROJECT_ROOT/tests/check-links.sh" "$dir/TUTORIAL.zh-CN.md"
	assert_success
	printf '[x](#目标-2) [y](missing.md) [z](other.md#nope) [w](#step-08-nothing)\n' >>"$dir/TUTORIAL.zh-CN.md"
	run "$PROJECT_ROOT/tests/check-links.sh" "$dir/TUTORIAL.zh-CN.md"
	assert_failure
	assert_output --partial 'link to "#目标-2"'
	assert_output --partial 'link to "missing.md": no file'
	assert_output --partial 'link to "other.md#nope"'
	assert_output --partial 'link to "#step-08-nothing"'
	assert_output --partial "4 broken links"
}

@test "TUTORIAL.md: the contents at the top link every section, every step and section 3's 'The fabric in 2026'" {
	contents=$(sed -n '/^\*\*Contents\.\*\*/,/^## /p' "$TUTORIAL")
	[ -n "$contents" ] || fail "no **Contents.** paragraph before the first section"
	run "$PROJECT_ROOT/tests/check-links.sh" --slugs "$TUTORIAL"
	assert_success
	n=0
	while IFS=$'\t' read -r level anchor text; do
		[ "$level" = 2 ] || [ "$anchor" = the-fabric-in-2026 ] || [ "$anchor" = when-a-completion-fails ] || continue
		grep -qF "](#$anchor)" <<<"$contents" || fail "the contents do not link \"$text\" (#$anchor)"
		n=$((n + 1))
	done <<<"$output"
	[ "$n" -ge 22 ] || fail "only $n sections found"
}

@test "INTERVIEW.md: every figure it states, in English or Chinese, is one TUTORIAL.md states" {
	run "$PROJECT_ROOT/tests/figures-agree.sh" "$INTERVIEW" "$TUTORIAL"
	assert_success
	assert_output ""
}

@test "figures-agree.sh: a figure that TUTORIAL.md does not state fails, named, in either language" {
	copy=$BATS_TEST_TMPDIR/INTERVIEW.md
	sed 's/0x8915/0x8916/' "$INTERVIEW" >"$copy"
	printf '中文：RNR 至少等 0.65 毫秒，公式是 2(N-2)/N。\n' >>"$copy"
	run "$PROJECT_ROOT/tests/figures-agree.sh" "$copy" "$TUTORIAL"
	assert_failure
	assert_output --partial 'states "0x8916"'
	assert_output --partial 'states "0.65 ms"'
	assert_output --partial "3 figures of $copy are not in"
	# The figure matches only whole: 4.3 s is not found inside 14.3 s.
	printf 'a 14.3 s wait\n' >"$BATS_TEST_TMPDIR/tut.md"
	printf 'about 4.3 s\n' >"$BATS_TEST_TMPDIR/sum.md"
	run "$PROJECT_ROOT/tests/figures-agree.sh" "$BATS_TEST_TMPDIR/sum.md" "$BATS_TEST_TMPDIR/tut.md"
	assert_failure
	assert_output --partial 'states "4.3 s"'
}

# English words of INTERVIEW.md: lines without Chinese, and the first two columns of a table row with Chinese.
interview_english_words() {
	perl -CSD -ne 'if (/\p{Han}/) { if (/^\|/) { my @c = split /\|/; $e += () = ($c[1] . $c[2]) =~ /\S+/g } }
		else { $e += () = /\S+/g } END { print $e + 0, "\n" }' "$INTERVIEW"
}

@test "INTERVIEW.md: four spoken answers of at most 80 words, at least 10 follow-up chains, each with its Chinese, and about 1,800 English words" {
	run awk '/^## Four spoken answers/ { on = 1; next } /^## / { on = 0 } on && /^> / { print NF - 1 }' "$INTERVIEW"
	assert_success
	[ "${#lines[@]}" = 4 ] || fail "expected 4 spoken answers, found ${#lines[@]}"
	for w in "${lines[@]}"; do [ "$w" -le 80 ] || fail "a spoken answer has $w words, more than 80"; done
	chains=$(grep -cE '^\*\*[0-9]+\. .*\*\* \*Probes:\*' "$INTERVIEW")
	[ "$chains" -ge 10 ] || fail "only $chains follow-up chains"
	# Each chain's paragraph is followed by its Chinese, before the next chain begins.
	run awk '/^\*\*[0-9]+\. .*\*Probes:\*/ { if (open) print "chain " open " has no Chinese"; open = $1; next }
		/^中文：/ { open = "" } END { if (open) print "chain " open " has no Chinese" }' "$INTERVIEW"
	assert_success
	assert_output ""
	words=$(interview_english_words)
	[ "$words" -le 1900 ] || fail "INTERVIEW.md has $words English words, more than about 1,800"
}

# Words outside fenced code blocks in the parts of TUTORIAL.md that the awk condition $1 selects ($2: ## title, $3: ### title).
prose_words() {
	awk -v sel="$1" '
		/^```/ { f = !f; next }
		/^## / { top = $0; sub3 = "" }
		/^### / { sub3 = $0 }
		f { next }
		(sel == "sections" && top ~ /^## [1-5]\. /) || (sel == "fails" && sub3 == "### When a completion fails") || sel == "all" { n += NF }
		END { print n + 0 }' "$TUTORIAL"
}

# Fails unless STATED (such as "5,200") is within 10% of ACTUAL.
check_count() {
	local what=$1 stated=${2//,/} actual=$3
	awk -v s="$stated" -v a="$actual" 'BEGIN { d = s - a; exit !(d <= a / 10 && -d <= a / 10) }' ||
		fail "$what: stated as about $stated, counted $actual"
}

# Fails unless MINUTES is COUNT at RATE a minute, rounded.
check_minutes() {
	local what=$1 count=$2 minutes=$3 rate=$4
	[ "$minutes" = "$(((count + rate / 2) / rate))" ] ||
		fail "$what: $count at $rate a minute is $(((count + rate / 2) / rate)) minutes, not $minutes"
}

@test "TUTORIAL.md: the reading paths' word counts and times follow from the words, at 200 English words or 400 Chinese characters a minute" {
	row15=$(grep -F '| **Preparing for an interview, with 15 minutes** |' "$TUTORIAL")
	rowhour=$(grep -F '| **Preparing for an interview, with an hour** |' "$TUTORIAL")
	rowday=$(grep -F '| **Joining an RDMA team, with a day** |' "$TUTORIAL")
	[ -n "$row15" ] && [ -n "$rowhour" ] && [ -n "$rowday" ] || fail "a reading path is missing"
	read -r en en_min < <(sed -nE 's/.*its English is about ([0-9,]+) words \(([0-9]+) minutes\).*/\1 \2/p' <<<"$row15")
	read -r zh zh_min < <(sed -nE 's/.*its Chinese about ([0-9,]+) characters and the English terms it keeps \(([0-9]+) minutes\).*/\1 \2/p' <<<"$row15")
	[ -n "$en" ] && [ -n "$zh" ] || fail "the 15-minute path states no word and character counts"
	en_actual=$(interview_english_words)
	check_count "INTERVIEW.md's English words" "$en" "$en_actual"
	check_minutes "INTERVIEW.md's English" "$en_actual" "$en_min" 200
	# The Chinese: its characters, and each English term kept in it read as one more.
	read -r zh_chars zh_terms < <(perl -CSD -ne 'next unless /\p{Han}/; $_ = (split /\|/)[3] // "" if /^\|/;
		$n += () = /\p{Han}/g; $t += () = /[A-Za-z][\w-]*/g; END { print $n + 0, " ", $t + 0, "\n" }' "$INTERVIEW")
	check_count "INTERVIEW.md's Chinese characters" "$zh" "$zh_chars"
	check_minutes "INTERVIEW.md's Chinese" "$((zh_chars + zh_terms))" "$zh_min" 400
	read -r s15 s15_min < <(sed -nE 's/.* to \[5\]\(#5-the-gpudirect-family\), about ([0-9,]+) words \(([0-9]+) minutes\).*/\1 \2/p' <<<"$rowhour")
	read -r wf wf_min < <(sed -nE 's/.*after step 05, about ([0-9,]+) words of prose \(([0-9]+) minutes\).*/\1 \2/p' <<<"$rowhour")
	[ -n "$s15" ] && [ -n "$wf" ] || fail "the hour path states no word counts"
	n=$(prose_words sections)
	check_count "sections 1 to 5" "$s15" "$n"
	check_minutes "sections 1 to 5" "$n" "$s15_min" 200
	n=$(prose_words fails)
	check_count "When a completion fails" "$wf" "$n"
	check_minutes "When a completion fails" "$n" "$wf_min" 200
	read -r all all_h < <(sed -nE 's/.*about ([0-9,]+) words of prose besides the command blocks and outputs, ([0-9]+) hours of reading.*/\1 \2/p' <<<"$rowday")
	[ -n "$all" ] || fail "the day path states no word count"
	n=$(prose_words all)
	check_count "the whole tutorial's prose" "$all" "$n"
	[ "$all_h" = "$(((n / 200 + 30) / 60))" ] || fail "$n words of prose take $(((n / 200 + 30) / 60)) hours at 200 a minute, not $all_h"
}
