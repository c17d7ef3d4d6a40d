#!/usr/bin/env bats
# 00_docs.bats: the prose holds together: internal links resolve, the entry pages' steps tables list every step folder, the contents list every chapter, INTERVIEW.md's figures are the book's, and the reading times follow from the word and character counts.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	TUTORIAL=$PROJECT_ROOT/TUTORIAL.md
	INTERVIEW=$PROJECT_ROOT/INTERVIEW.md
}

@test "docs: every internal link in every Markdown file of the project (the chapters of the book in both languages, README.md, INTERVIEW.md) resolves" {
	cd "$PROJECT_ROOT"
	mapfile -t files < <(tests/tools/chapters.sh en; tests/tools/chapters.sh zh-CN; git ls-files '*.md' 2>/dev/null || find . -name '*.md' -not -path './build/*')
	[ "${#files[@]}" -gt 30 ] || fail "only ${#files[@]} Markdown files found"
	run tests/tools/check-links.sh $(printf '%s\n' "${files[@]}" | sort -u)
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
	run "$PROJECT_ROOT/tests/tools/check-links.sh" "$dir/TUTORIAL.zh-CN.md"
	assert_success
	printf '[x](#目标-2) [y](missing.md) [z](other.md#nope) [w](#step-08-nothing)\n' >>"$dir/TUTORIAL.zh-CN.md"
	run "$PROJECT_ROOT/tests/tools/check-links.sh" "$dir/TUTORIAL.zh-CN.md"
	assert_failure
	assert_output --partial 'link to "#目标-2"'
	assert_output --partial 'link to "missing.md": no file'
	assert_output --partial 'link to "other.md#nope"'
	assert_output --partial 'link to "#step-08-nothing"'
	assert_output --partial "4 broken links"
}

# Prints, one a line, where the steps tables of ROOT/README.md and ROOT/README.zh-CN.md (the section
# "## The steps" or "## 各步", a row "| [`NN_name`](steps/NN_name/README.md) | ... |" for each step, the
# Chinese row linking README.zh-CN.md) and the folders ROOT/steps/NN_name disagree; nothing when they agree.
steps_table_problems() {
	local root=$1 page chapter folders rows names LC_ALL=C
	folders=$(find "$root/steps" -mindepth 1 -maxdepth 1 -type d -name '[0-9][0-9]_*' -printf '%f\n' | sort)
	[ -n "$folders" ] || { echo "no step folders under $root/steps"; return; }
	for page in README.md README.zh-CN.md; do
		chapter=README.md
		[ "$page" = README.zh-CN.md ] && chapter=README.zh-CN.md
		rows=$(awk '/^## / { on = ($0 == "## The steps" || $0 == "## 各步"); next } on && /^\| *[^ |-]/' "$root/$page" | tail -n +2)
		[ -n "$rows" ] || { echo "$page: no steps table (a section \"## The steps\" or \"## 各步\" with a row for each step)"; continue; }
		names=$(sed -nE 's/^\| \[`([^`]*)`\]\(steps\/([^/)]*)\/([^)]*)\) \|.*/\1 \2 \3/p' <<<"$rows")
		[ "$(wc -l <<<"$rows")" = "$(wc -l <<<"$names")" ] ||
			grep -vE '^\| \[`[^`]*`\]\(steps/[^/)]*/[^)]*\) \|' <<<"$rows" | sed "s/^/$page: a row not in the form | [\`NN_name\`](steps\/NN_name\/$chapter) | ... |: /"
		while read -r name dir file; do
			[ -z "$name" ] || { [ "$name" = "$dir" ] && [ "$file" = "$chapter" ]; } ||
				echo "$page: the row of $name links steps/$dir/$file, not steps/$name/$chapter"
		done <<<"$names"
		names=$(cut -d ' ' -f 1 <<<"$names")
		comm -23 <(echo "$folders") <(sort <<<"$names") | sed "s|^|$page: the steps table has no row for the folder steps/|"
		comm -13 <(echo "$folders") <(sort <<<"$names") | sed "s|\$|, which is not a folder under steps/|; s|^|$page: the steps table has a row for |"
		# The order, over the steps that have both a folder and a row.
		[ "$(grep -Fx -f <(echo "$folders") <<<"$names")" = "$(grep -Fx -f <(echo "$names") <<<"$folders")" ] ||
			echo "$page: the steps table's rows are not in the order of the folders under steps/"
	done
}

@test "README.md and README.zh-CN.md: the steps table has one row for each folder under steps/, in order, linking its chapter" {
	run steps_table_problems "$PROJECT_ROOT"
	assert_success
	assert_output ""
}

@test "steps_table_problems: a step folder with no row, a row with no folder, a row out of order and a wrong link each fail, named" {
	root=$BATS_TEST_TMPDIR/root
	mkdir -p "$root/steps"
	cp "$PROJECT_ROOT/README.md" "$PROJECT_ROOT/README.zh-CN.md" "$root/"
	for dir in "$PROJECT_ROOT"/steps/[0-9][0-9]_*/; do mkdir "$root/steps/$(basename "$dir")"; done
	run steps_table_problems "$root"
	assert_output ""
	mkdir "$root/steps/10_new_step"
	sed -i '/^| \[`09_moe`\]/d' "$root/README.zh-CN.md"
	sed -i '/^| \[`02_reg_mr`\]/{h;d}; /^| \[`03_cq_qp_rts`\]/G' "$root/README.md"
	sed -i 's#(steps/04_post_wr/README.zh-CN.md)#(steps/04_post_wr/README.md)#' "$root/README.zh-CN.md"
	run steps_table_problems "$root"
	assert_output --partial "README.md: the steps table has no row for the folder steps/10_new_step"
	assert_output --partial "README.md: the steps table's rows are not in the order of the folders under steps/"
	assert_output --partial "README.zh-CN.md: the steps table has no row for the folder steps/09_moe"
	assert_output --partial "README.zh-CN.md: the steps table has no row for the folder steps/10_new_step"
	assert_output --partial "README.zh-CN.md: the row of 04_post_wr links steps/04_post_wr/README.md, not steps/04_post_wr/README.zh-CN.md"
	rmdir "$root/steps/10_new_step" "$root/steps/01_open_pd"
	run steps_table_problems "$root"
	assert_output --partial "README.md: the steps table has a row for 01_open_pd, which is not a folder under steps/"
}

# The text of the front door FILE's first section, its contents (## Contents or ## 目录).
contents_of() {
	awk '/^## / { on = ($0 == "## Contents" || $0 == "## 目录"); next } on' "$1"
}

@test "TUTORIAL.md and TUTORIAL.zh-CN.md: the contents link every section of the front door and every chapter, each chapter's parts named, and a heading keeps each old deep link" {
	cd "$PROJECT_ROOT"
	for lang in en zh-CN; do
		mapfile -t chapters < <(tests/tools/chapters.sh "$lang")
		front=${chapters[0]}
		contents=$(contents_of "$front")
		[ -n "$contents" ] || fail "$front: no contents section (## Contents or ## 目录) before the first section"
		n=0
		# Every section of the front door (but the contents, and the old deep links' headings) and section 3's part.
		while IFS=$'\t' read -r level anchor text; do
			[ "$level" = 2 ] || [ "$anchor" = the-fabric-in-2026 ] || [ "$anchor" = 2026-年的网络 ] || continue
			case $anchor in contents | 目录 | the-chapters | 各章) continue ;; esac
			grep -qF "](#$anchor)" <<<"$contents" || fail "$front: the contents do not link \"$text\" (#$anchor)"
			n=$((n + 1))
		done < <(tests/tools/check-links.sh --slugs "$front")
		[ "$n" -ge 8 ] || fail "$front: only $n sections found"
		# Every chapter, at its first heading, and each has a heading on the front door that links it.
		for chapter in "${chapters[@]:1}"; do
			read -r _ anchor text < <(tests/tools/check-links.sh --slugs "$chapter" | head -n 1)
			grep -qF "]($chapter#$anchor)" <<<"$contents" || fail "$front: the contents do not link the chapter $chapter (#$anchor)"
			tests/tools/check-links.sh --slugs "$front" | grep -qP "^3\t\Q$anchor\E\t" ||
				fail "$front: no heading \"### $text\" to keep the old link #$anchor landing on its chapter"
			n=$((n + 1))
		done
	done
	# The parts within chapters that the contents name as well.
	grep -qF '](steps/05_poll_destroy/when-a-completion-fails.md#when-a-completion-fails)' TUTORIAL.md || fail "no link to When a completion fails"
	grep -qF '](steps/07_allreduce/README.md#step-07-across-nodes)' TUTORIAL.md || fail "no link to Step 07 across nodes"
}

@test "INTERVIEW.md: every figure it states, in English or Chinese, is one the book's chapters state" {
	cd "$PROJECT_ROOT"
	# shellcheck disable=SC2046  # the chapters' names have no spaces
	run tests/tools/figures-agree.sh "$INTERVIEW" $(tests/tools/chapters.sh en)
	assert_success
	assert_output ""
}

@test "figures-agree.sh: a figure that the book does not state fails, named, in either language" {
	cd "$PROJECT_ROOT"
	copy=$BATS_TEST_TMPDIR/INTERVIEW.md
	sed 's/0x8915/0x8916/' "$INTERVIEW" >"$copy"
	printf '中文：RNR 至少等 0.65 毫秒，公式是 2(N-2)/N。\n' >>"$copy"
	# shellcheck disable=SC2046  # the chapters' names have no spaces
	run tests/tools/figures-agree.sh "$copy" $(tests/tools/chapters.sh en)
	assert_failure
	assert_output --partial 'states "0x8916", which the book does not state'
	assert_output --partial 'states "0.65 ms"'
	assert_output --partial "3 figures of $copy are not in the book"
	# The figure matches only whole: 4.3 s is not found inside 14.3 s.
	printf 'a 14.3 s wait\n' >"$BATS_TEST_TMPDIR/tut.md"
	printf 'about 4.3 s\n' >"$BATS_TEST_TMPDIR/sum.md"
	run "$PROJECT_ROOT/tests/tools/figures-agree.sh" "$BATS_TEST_TMPDIR/sum.md" "$BATS_TEST_TMPDIR/tut.md"
	assert_failure
	assert_output --partial 'states "4.3 s"'
}

# INTERVIEW.md's Chinese: the Han characters of the lines with Chinese (of a table row, its third column), and
# the English terms kept among them, each read as one more.
interview_chinese_counts() {
	perl -CSD -ne 'next unless /\p{Han}/; $_ = (split /\|/)[3] // "" if /^\|/;
		$n += () = /\p{Han}/g; $t += () = /[A-Za-z][\w-]*/g; END { print $n + 0, " ", $t + 0, "\n" }' "$INTERVIEW"
}

# English words of INTERVIEW.md: lines without Chinese, and the first two columns of a table row with Chinese.
interview_english_words() {
	perl -CSD -ne 'if (/\p{Han}/) { if (/^\|/) { my @c = split /\|/; $e += () = ($c[1] . $c[2]) =~ /\S+/g } }
		else { $e += () = /\S+/g } END { print $e + 0, "\n" }' "$INTERVIEW"
}

@test "INTERVIEW.md: four spoken answers of at most 80 words, at least 10 follow-up chains, each with its Chinese, and each language read in at most 13 minutes" {
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
	# The 15-minute path of TUTORIAL.md: the sheet read in one language, then the four answers said once (2 minutes).
	# So each language must read in 13 minutes at most: 2,699 English words at 200 a minute, or 5,399 Chinese
	# characters and English terms kept at 400 a minute. Set once for every chain of the round of issues 55 to 57
	# (2,610 words and 4,236 characters and terms with chains 18 and 19), with room for a row of the numbers card.
	words=$(interview_english_words)
	[ $(((words + 100) / 200)) -le 13 ] ||
		fail "INTERVIEW.md has $words English words, $(((words + 100) / 200)) minutes at 200 a minute: more than the 13 the 15-minute path allows"
	read -r zh_chars zh_terms < <(interview_chinese_counts)
	zh=$((zh_chars + zh_terms))
	[ $(((zh + 200) / 400)) -le 13 ] ||
		fail "INTERVIEW.md's Chinese has $zh characters and terms, $(((zh + 200) / 400)) minutes at 400 a minute: more than the 13 the 15-minute path allows"
}

# prose_count en|zh-CN ideas|all FILE...: the words (en), or the Chinese characters and the English terms kept
# among them (zh-CN), outside code blocks, comments and the generated links; "ideas" counts only sections 1 to 5,
# "hands-on" only sections 1, 2 and 4.
prose_count() {
	perl -CSD -e '
		my ($lang, $sel, @files) = @ARGV; my ($w, $n, $t) = (0, 0, 0);
		for my $f (@files) {
			open(my $fh, "<:encoding(UTF-8)", $f) or die "cannot read $f\n";
			my ($fence, $nav, $top) = (0, 0, "");
			while (<$fh>) {
				if (/^```/) { $fence = !$fence; next }
				next if $fence;
				if (/^<!-- BEGIN generated nav -->/) { $nav = 1; next }
				if (/^<!-- END generated nav -->/) { $nav = 0; next }
				next if $nav || /^<!--/;
				$top = $_ if /^## /;
				next if $sel eq "ideas" && $top !~ /^## [1-5]\. /;
				next if $sel eq "hands-on" && $top !~ /^## [124]\. /;
				if ($lang eq "en") { $w += () = /\S+/g }
				else { $n += () = /\p{Han}/g; $t += () = /[A-Za-z][\w-]*/g }
			}
		}
		print $lang eq "en" ? "$w\n" : "$n $t\n";' "$@"
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

@test "TUTORIAL.md and TUTORIAL.zh-CN.md: the reading paths' counts and times follow from the chapters, at 200 English words or 400 Chinese characters a minute" {
	cd "$PROJECT_ROOT"
	fails=steps/05_poll_destroy/when-a-completion-fails
	row15=$(grep -F '| **Preparing for an interview, with 15 minutes** |' "$TUTORIAL")
	rowhour=$(grep -F '| **Preparing for an interview, with an hour** |' "$TUTORIAL")
	rowhands=$(grep -F '| **New to an RDMA team, with an hour, hands on** |' "$TUTORIAL")
	rowday=$(grep -F '| **Joining an RDMA team, with a day** |' "$TUTORIAL")
	[ -n "$row15" ] && [ -n "$rowhour" ] && [ -n "$rowhands" ] && [ -n "$rowday" ] || fail "a reading path is missing"
	read -r en en_min < <(sed -nE 's/.*its English is about ([0-9,]+) words \(([0-9]+) minutes\).*/\1 \2/p' <<<"$row15")
	read -r zh zh_min < <(sed -nE 's/.*its Chinese about ([0-9,]+) characters and the English terms it keeps \(([0-9]+) minutes\).*/\1 \2/p' <<<"$row15")
	[ -n "$en" ] && [ -n "$zh" ] || fail "the 15-minute path states no word and character counts"
	en_actual=$(interview_english_words)
	check_count "INTERVIEW.md's English words" "$en" "$en_actual"
	check_minutes "INTERVIEW.md's English" "$en_actual" "$en_min" 200
	# The Chinese: its characters, and each English term kept in it read as one more.
	read -r zh_chars zh_terms < <(interview_chinese_counts)
	check_count "INTERVIEW.md's Chinese characters" "$zh" "$zh_chars"
	check_minutes "INTERVIEW.md's Chinese" "$((zh_chars + zh_terms))" "$zh_min" 400
	# The English paths, from the English chapters.
	read -r s15 s15_min < <(sed -nE 's/.* to \[5\]\(#5-the-gpudirect-family\), about ([0-9,]+) words \(([0-9]+) minutes\).*/\1 \2/p' <<<"$rowhour")
	read -r wf wf_min < <(sed -nE 's/.*the chapter after step 05, about ([0-9,]+) words of prose \(([0-9]+) minutes\).*/\1 \2/p' <<<"$rowhour")
	[ -n "$s15" ] && [ -n "$wf" ] || fail "the hour path states no word counts"
	n=$(prose_count en ideas TUTORIAL.md)
	check_count "sections 1 to 5" "$s15" "$n"
	check_minutes "sections 1 to 5" "$n" "$s15_min" 200
	n=$(prose_count en all "$fails.md")
	check_count "When a completion fails" "$wf" "$n"
	check_minutes "When a completion fails" "$n" "$wf_min" 200
	read -r s124 s124_min < <(sed -nE 's/.*\[4\]\(#4-the-verbs-workflow\), about ([0-9,]+) words \(([0-9]+) minutes\).*/\1 \2/p' <<<"$rowhands")
	[ -n "$s124" ] || fail "the hands-on path states no word count"
	n=$(prose_count en hands-on TUTORIAL.md)
	check_count "sections 1, 2 and 4" "$s124" "$n"
	check_minutes "sections 1, 2 and 4" "$n" "$s124_min" 200
	read -r all all_h < <(sed -nE 's/.*about ([0-9,]+) words of prose besides the command blocks and outputs, ([0-9]+) hours of reading.*/\1 \2/p' <<<"$rowday")
	[ -n "$all" ] || fail "the day path states no word count"
	# shellcheck disable=SC2046  # the chapters' names have no spaces
	n=$(prose_count en all $(tests/tools/chapters.sh en))
	check_count "the whole book's prose" "$all" "$n"
	[ "$all_h" = "$(((n / 200 + 30) / 60))" ] || fail "$n words of prose take $(((n / 200 + 30) / 60)) hours at 200 a minute, not $all_h"
	# The Chinese paths, from the Chinese chapters, in characters (each English term kept read as one more).
	zh_tutorial=TUTORIAL.zh-CN.md
	rowhour=$(grep -F '| **准备面试，有一个小时** |' "$zh_tutorial")
	rowhands=$(grep -F '| **刚加入 RDMA 团队，动手一小时** |' "$zh_tutorial")
	rowday=$(grep -F '| **刚加入 RDMA 团队，有一天时间** |' "$zh_tutorial")
	[ -n "$rowhour" ] && [ -n "$rowhands" ] && [ -n "$rowday" ] || fail "a reading path is missing from $zh_tutorial"
	iv_min=$(sed -nE 's/.*\[INTERVIEW.md\]\(INTERVIEW.md\) 的中文（([0-9]+) 分钟）.*/\1/p' <<<"$rowhour")
	[ "$iv_min" = "$zh_min" ] || fail "$zh_tutorial's hour path gives INTERVIEW.md's Chinese $iv_min minutes, the 15-minute path $zh_min"
	read -r s15 s15_min < <(sed -nE 's/.*节，约 ([0-9,]+) 个汉字，外加其中的英文术语（([0-9]+) 分钟）.*/\1 \2/p' <<<"$rowhour")
	read -r wf wf_min < <(sed -nE 's/.*正文约 ([0-9,]+) 个汉字，外加其中的英文术语（([0-9]+) 分钟）.*/\1 \2/p' <<<"$rowhour")
	[ -n "$s15" ] && [ -n "$wf" ] || fail "$zh_tutorial's hour path states no character counts"
	read -r chars terms < <(prose_count zh-CN ideas "$zh_tutorial")
	check_count "sections 1 to 5, in Chinese characters" "$s15" "$chars"
	check_minutes "sections 1 to 5, in Chinese" "$((chars + terms))" "$s15_min" 400
	read -r chars terms < <(prose_count zh-CN all "$fails.zh-CN.md")
	check_count "When a completion fails, in Chinese characters" "$wf" "$chars"
	check_minutes "When a completion fails, in Chinese" "$((chars + terms))" "$wf_min" 400
	read -r s124 s124_min < <(sed -nE 's/.*\[4\]\(#4-verbs-流程\) 节，约 ([0-9,]+) 个汉字，外加其中的英文术语（([0-9]+) 分钟）.*/\1 \2/p' <<<"$rowhands")
	[ -n "$s124" ] || fail "$zh_tutorial's hands-on path states no character count"
	read -r chars terms < <(prose_count zh-CN hands-on "$zh_tutorial")
	check_count "sections 1, 2 and 4, in Chinese characters" "$s124" "$chars"
	check_minutes "sections 1, 2 and 4, in Chinese" "$((chars + terms))" "$s124_min" 400
	read -r all all_h < <(sed -nE 's/.*中文版正文约 ([0-9,]+) 个汉字，外加其中保留的英文术语，读完要 ([0-9]+) 小时.*/\1 \2/p' <<<"$rowday")
	[ -n "$all" ] || fail "$zh_tutorial's day path states no character count"
	# shellcheck disable=SC2046  # the chapters' names have no spaces
	read -r chars terms < <(prose_count zh-CN all $(tests/tools/chapters.sh zh-CN))
	check_count "the whole book, in Chinese characters" "$all" "$chars"
	n=$((chars + terms))
	[ "$all_h" = "$(((n / 400 + 30) / 60))" ] || fail "$n Chinese characters and terms take $(((n / 400 + 30) / 60)) hours at 400 a minute, not $all_h"
}
