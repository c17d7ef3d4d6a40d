#!/usr/bin/env bats
# 00_tutorial.bats: the book stays true to the sources: generated diffs, code and chapter links current, derived numbers recomputed, every step chapter in the same shape.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	TUTORIAL=$PROJECT_ROOT/TUTORIAL.md
}

@test "the book: the 'what changed' diffs, the quoted verbs code and the links between chapters match the sources and book/chapters.txt (make tutorial-diffs)" {
	run "$PROJECT_ROOT/tests/tools/tutorial-diffs.sh" --check
	assert_success
	for step in 02_reg_mr 03_cq_qp_rts 04_post_wr 05_poll_destroy 06_gdr 07_allreduce; do
		grep -Eqx "<!-- BEGIN generated diff $step( from [0-9]{2}_[a-z_0-9]+)? -->" "$PROJECT_ROOT/steps/$step/README.md" || fail "no generated diff in $step's chapter"
	done
	# Step 03's chapter links step 02's and step 04's, the contents and its Chinese twin, at its top.
	run sed -n 2p "$PROJECT_ROOT/steps/03_cq_qp_rts/README.md"
	assert_output '← [Step 02: register memory](../02_reg_mr/README.md) · [Contents](../../TUTORIAL.md#contents) · [Step 04: post work requests](../04_post_wr/README.md) → · [中文](README.zh-CN.md)'
}

@test "tutorial-diffs.sh: a chapter added to book/chapters.txt, or one whose generated links are stale, fails the check, named" {
	cp -r "$PROJECT_ROOT"/{book,steps,runtime,tests,Makefile,TUTORIAL.md,TUTORIAL.zh-CN.md} "$BATS_TEST_TMPDIR/"
	cd "$BATS_TEST_TMPDIR"
	sed -i '0,/^← \[/s//← [Step 02 renamed](/' steps/03_cq_qp_rts/README.md
	run tests/tools/tutorial-diffs.sh --check
	assert_failure
	assert_output --partial "the generated parts of steps/03_cq_qp_rts/README.md are stale: run 'make tutorial-diffs'"
	cp "$PROJECT_ROOT/steps/03_cq_qp_rts/README.md" steps/03_cq_qp_rts/
	echo book/extra.md >>book/chapters.txt
	run tests/tools/tutorial-diffs.sh --check
	assert_failure
	assert_output --partial 'chapters.sh: book/chapters.txt names book/extra.md, but there is no book/extra.md'
}

# The first number captured by the sed expression $1 in TUTORIAL.md.
tutorial_number() {
	sed -nE "s/$1/\\1/p" "$TUTORIAL" | head -n 1
}

# A bandwidth in GB/s from "N GB/s" or "N TB/s".
in_gb() {
	awk -v v="$1" -v u="$2" 'BEGIN { printf "%g\n", (u == "TB/s") ? v * 1000 : v }'
}

@test "TUTORIAL.md: every derived number of the tensor-parallel example follows from its inputs, for each of the three generations" {
	b=$(tutorial_number '.*With b = ([0-9]+), s = [0-9]+ and h = [0-9]+.*')
	s=$(tutorial_number '.*With b = [0-9]+, s = ([0-9]+) and h = [0-9]+.*')
	h=$(tutorial_number '.*With b = [0-9]+, s = [0-9]+ and h = ([0-9]+).*')
	t=$(tutorial_number '.*ring all-reduce over t = ([0-9]+) GPUs.*')
	per_layer=$(tutorial_number '.*each transformer layer does ([0-9]+) of these all-reduces per training step.*')
	layers=$(tutorial_number '.*A model with L = ([0-9]+) layers.*')
	[ -n "$b" ] && [ -n "$s" ] && [ -n "$h" ] && [ -n "$t" ] && [ -n "$per_layer" ] && [ -n "$layers" ] ||
		fail "an input of the worked example is missing: b=$b s=$s h=$h t=$t per_layer=$per_layer layers=$layers"
	grep -qF "A ring all-reduce over N GPUs sends 2(N-1)/N times the buffer from each GPU" "$TUTORIAL" ||
		fail "the ring's factor 2(N-1)/N is not stated"
	# The link table: columns 2, 3 and 4 are H100, B200 and B300 (cut's fields 3 to 5).
	nvrow=$(grep -E '^\| NVLink through NVSwitch \|' "$TUTORIAL") || fail "no NVLink row in the link table"
	nicrow=$(grep -E '^\| NIC \|' "$TUTORIAL") || fail "no NIC row in the link table"
	words=(zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen)
	checked=0
	for col in 3 4 5; do
		nvcell=$(cut -d'|' -f"$col" <<<"$nvrow") niccell=$(cut -d'|' -f"$col" <<<"$nicrow")
		gen=$(sed -nE 's/^ *NVLink ([0-9]+): .*/\1/p' <<<"$nvcell")
		read -r nv_v nv_u < <(sed -nE 's/.*: ([0-9.]+) (GB\/s|TB\/s) *$/\1 \2/p' <<<"$nvcell")
		nic_gbit=$(sed -nE 's/.*: ([0-9]+) Gb\/s = [0-9]+ GB\/s *$/\1/p' <<<"$niccell")
		[ -n "$gen" ] && [ -n "$nv_v" ] && [ -n "$nic_gbit" ] ||
			fail "column $col of the link table: NVLink '$nvcell', NIC '$niccell'"
		nvlink=$(in_gb "$nv_v" "$nv_u")
		run awk -v b="$b" -v s="$s" -v h="$h" -v t="$t" -v nv="$nvlink" -v nic="$nic_gbit" -v k="$per_layer" -v l="$layers" 'BEGIN {
			mb = b * s * h * 2 / 1e6; ring = 2 * (t - 1) / t * sprintf("%.0f", mb)
			nic_gb = nic / 8; nv_dir = nv / 2; n = k * l
			printf "%.0f %d %.0f %.0f %d %.2f %.1f %.0f %d %.0f %.0f\n", mb, t - 1, ring, nic_gb, nv_dir,
				ring / nv_dir, ring / nic_gb, nv_dir / nic_gb, n, n * ring / nv_dir, n * ring / nic_gb }'
		read -r mb t1 ring nic_gb nv_dir nv_ms nic_ms ratio total nv_step nic_step <<<"$output"
		grep -qF "that is $mb MB." "$TUTORIAL" || fail "b·s·h·2 is $mb MB"
		grep -qF "2·($t1/$t)·$mb MB ≈ $ring MB from each GPU" "$TUTORIAL" || fail "the ring sends 2·($t1/$t)·$mb ≈ $ring MB"
		grep -qF "$nic_gbit Gb/s = $nic_gb GB/s |" "$TUTORIAL" || fail "$nic_gbit Gb/s is $nic_gb GB/s"
		grep -qF "Over NVLink $gen, at $nv_dir GB/s in each direction, this takes about $nv_ms ms." "$TUTORIAL" ||
			fail "over NVLink $gen it takes $nv_ms ms at $nv_dir GB/s"
		grep -qF "Over one $nic_gb GB/s NIC, it takes about $nic_ms ms, ${words[$ratio]} times longer" "$TUTORIAL" ||
			fail "over a $nic_gb GB/s NIC it takes $nic_ms ms, ${words[$ratio]} times longer"
		grep -qF "$per_layer · $layers = $total per step" "$TUTORIAL" || fail "$per_layer · $layers is $total all-reduces per step"
		grep -qE "about $nv_step ms (of communication per step )?over NVLink $gen, and about $nic_step ms over one( $nic_gbit Gb/s)? NIC" "$TUTORIAL" ||
			fail "per step: $nv_step ms over NVLink $gen and $nic_step ms over one $nic_gbit Gb/s NIC"
		checked=$((checked + 1))
	done
	[ "$checked" = 3 ] || fail "checked $checked generations, not 3"
}

@test "the book: every step's chapter ends its walkthrough with two or three 'predict, then run' questions, each answer folded away, then its files and options" {
	# The walkthrough is the chapter's sections up to "Files and options" or a part of its own
	# ("## Step NN across nodes"); its last section is the questions.
	run awk '
		FNR == 1 { if (step != "") report(); step = FILENAME; sub(/.*steps\//, "", step); sub(/\/.*/, "", step); last = ""; q = 0; d = 0; done = 0; files = 0 }
		/^## / && !done && ($0 == "## Files and options" || $0 ~ /^## Step [0-9][0-9] across/) { done = 1 }
		/^## Files and options$/ { files = 1 }
		/^## / && !done { last = $0 }
		!done && last == "## Predict, then run" && /^[0-9]+\. / { q++ }
		!done && last == "## Predict, then run" && /^<details><summary>Answer<\/summary>$/ { d++ }
		function report() {
			if (last != "## Predict, then run") printf "step %s: its walkthrough ends with \"%s\", not ## Predict, then run\n", step, last
			else if (q < 2 || q > 3 || d != q) printf "step %s: %d questions and %d folded answers\n", step, q, d
			if (!files) printf "step %s: no ## Files and options\n", step
		}
		END { if (step != "") report() }' "$PROJECT_ROOT"/steps/[0-9][0-9]_*/README.md
	assert_success
	assert_output ""
	steps=("$PROJECT_ROOT"/steps/[0-9][0-9]_*)
	[ "$(cat "$PROJECT_ROOT"/steps/[0-9][0-9]_*/README.md | grep -c '^## Predict, then run$')" = "${#steps[@]}" ] || fail "expected one 'Predict, then run' per step"
}

@test "the book: the quoted verbs code holds every verb of an RC program, in the step that introduces it or a later one" {
	# For each step's chapter: the verbs its "New verbs" table lists, and those its "The verbs code" quotes.
	run awk '
		FNR == 1 { step = FILENAME; sub(/.*steps\//, "", step); step = substr(step, 1, 2); sec = "" }
		/^## / { sec = $0 }
		sec == "## New verbs" && /^\| `ibv_[a-z_]+\(/ {
			match($0, /ibv_[a-z_]+/); print "new", step, substr($0, RSTART, RLENGTH) }
		sec == "## The verbs code" {
			line = $0
			while (match(line, /ibv_[a-z_]+\(/)) { print "quoted", step, substr(line, RSTART, RLENGTH - 1); line = substr(line, RSTART + RLENGTH) }
		}' "$PROJECT_ROOT"/steps/[0-9][0-9]_*/README.md
	assert_success
	listing=$output
	for verb in ibv_get_device_list ibv_open_device ibv_alloc_pd ibv_reg_mr ibv_create_cq ibv_create_qp \
		ibv_modify_qp ibv_post_recv ibv_post_send ibv_poll_cq; do
		introduced=$(awk -v v="$verb" '$1 == "new" && $3 == v { print $2; exit }' <<<"$listing")
		[ -n "$introduced" ] || fail "no step's 'New verbs' table lists $verb"
		awk -v v="$verb" -v from="$introduced" '$1 == "quoted" && $3 == v && $2 + 0 >= from + 0 { found = 1 } END { exit !found }' <<<"$listing" ||
			fail "$verb is introduced in step $introduced, but no 'The verbs code' from step $introduced on quotes a call to it"
	done
}
