#!/usr/bin/env bats
# 00_tutorial.bats: TUTORIAL.md stays true to the sources: generated diffs current, derived numbers recomputed.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=host

setup() {
	load test_helper
	TUTORIAL=$PROJECT_ROOT/TUTORIAL.md
}

@test "TUTORIAL.md: the 'what changed' diffs and the quoted verbs code match the step sources (make tutorial-diffs)" {
	run "$PROJECT_ROOT/tests/tutorial-diffs.sh" --check
	assert_success
	for step in 02_reg_mr 03_cq_qp_rts 04_post_wr 05_poll_destroy 06_gdr; do
		grep -qx "<!-- BEGIN generated diff $step -->" "$TUTORIAL" || fail "no generated diff for $step"
	done
}

# The first number captured by the sed expression $1 in TUTORIAL.md.
tutorial_number() {
	sed -nE "s/$1/\\1/p" "$TUTORIAL" | head -n 1
}

@test "TUTORIAL.md: every derived number of the tensor-parallel example follows from its inputs" {
	b=$(tutorial_number '.*With b = ([0-9]+), s = [0-9]+ and h = [0-9]+.*')
	s=$(tutorial_number '.*With b = [0-9]+, s = ([0-9]+) and h = [0-9]+.*')
	h=$(tutorial_number '.*With b = [0-9]+, s = [0-9]+ and h = ([0-9]+).*')
	t=$(tutorial_number '.*ring all-reduce over t = ([0-9]+) GPUs.*')
	nvlink=$(tutorial_number '^\| NVLink 4 through NVSwitch \| ([0-9]+) GB\/s \| both directions added.*')
	nic_gbit=$(tutorial_number '^\| ConnectX-7 InfiniBand NDR \| ([0-9]+) Gb\/s = [0-9]+ GB\/s \|.*')
	[ -n "$b" ] && [ -n "$s" ] && [ -n "$h" ] && [ -n "$t" ] && [ -n "$nvlink" ] && [ -n "$nic_gbit" ] ||
		fail "an input of the worked example is missing: b=$b s=$s h=$h t=$t nvlink=$nvlink nic=$nic_gbit"
	run awk -v b="$b" -v s="$s" -v h="$h" -v t="$t" -v nv="$nvlink" -v nic="$nic_gbit" 'BEGIN {
		mb = b * s * h * 2 / 1e6; ring = 2 * (t - 1) / t * sprintf("%.0f", mb)
		nic_gb = nic / 8; nv_dir = nv / 2
		printf "%.0f %d %.0f %.0f %d %.2f %.1f %.0f\n", mb, t - 1, ring, nic_gb, nv_dir,
			ring / nv_dir, ring / nic_gb, nv_dir / nic_gb }'
	read -r mb t1 ring nic_gb nv_dir nv_ms nic_ms ratio <<<"$output"
	grep -qF "that is $mb MB." "$TUTORIAL" || fail "b·s·h·2 is $mb MB"
	grep -qF "2·($t1/$t)·$mb MB ≈ $ring MB from each GPU" "$TUTORIAL" || fail "the ring sends 2·($t1/$t)·$mb ≈ $ring MB"
	grep -qF "| $nic_gbit Gb/s = $nic_gb GB/s |" "$TUTORIAL" || fail "$nic_gbit Gb/s is $nic_gb GB/s"
	grep -qF "Over NVLink, at $nv_dir GB/s in each direction, this takes about $nv_ms ms." "$TUTORIAL" ||
		fail "over NVLink it takes $nv_ms ms at $nv_dir GB/s"
	grep -qF "Over one $nic_gb GB/s NIC, it takes about $nic_ms ms" "$TUTORIAL" || fail "over the NIC it takes $nic_ms ms"
	words=(zero one two three four five six seven eight nine ten eleven twelve)
	grep -qF "$nic_ms ms, ${words[$ratio]} times longer" "$TUTORIAL" || fail "the NIC takes ${words[$ratio]} times longer"
	# The total per training step: all-reduces per layer times layers, each at the cost above.
	per_layer=$(tutorial_number '.*each transformer layer does ([0-9]+) of these all-reduces per training step.*')
	layers=$(tutorial_number '.*A model with L = ([0-9]+) layers.*')
	[ -n "$per_layer" ] && [ -n "$layers" ] ||
		fail "an input of the per-step total is missing: per_layer=$per_layer layers=$layers"
	run awk -v b="$b" -v s="$s" -v h="$h" -v t="$t" -v nv="$nvlink" -v nic="$nic_gbit" \
		-v k="$per_layer" -v l="$layers" 'BEGIN {
		ring = 2 * (t - 1) / t * sprintf("%.0f", b * s * h * 2 / 1e6); n = k * l
		printf "%d %.0f %.0f\n", n, n * ring / (nv / 2), n * ring / (nic / 8) }'
	read -r total nv_step nic_step <<<"$output"
	grep -qF "$per_layer · $layers = $total per step" "$TUTORIAL" || fail "$per_layer · $layers is $total all-reduces per step"
	grep -qF "about $nv_step ms of communication per step over NVLink, and about $nic_step ms over one NIC" "$TUTORIAL" ||
		fail "per step: $nv_step ms over NVLink and $nic_step ms over one NIC"
}

@test "TUTORIAL.md: every step section ends with two or three 'predict, then run' questions, each answer folded away" {
	run awk '
		/^## / { if (step != "") report(); step = ($0 ~ /^## Step [0-9][0-9]:/) ? $3 : ""; last = ""; q = 0; d = 0; next }
		step != "" && /^### / { last = $0 }
		step != "" && last == "### Predict, then run" && /^[0-9]+\. / { q++ }
		step != "" && last == "### Predict, then run" && /^<details><summary>Answer<\/summary>$/ { d++ }
		function report() {
			if (last != "### Predict, then run") printf "step %s: its last subsection is \"%s\", not ### Predict, then run\n", step, last
			else if (q < 2 || q > 3 || d != q) printf "step %s: %d questions and %d folded answers\n", step, q, d
		}
		END { if (step != "") report() }' "$TUTORIAL"
	assert_success
	assert_output ""
	steps=("$PROJECT_ROOT"/steps/[0-9][0-9]_*)
	[ "$(grep -c '^### Predict, then run$' "$TUTORIAL")" = "${#steps[@]}" ] || fail "expected one 'Predict, then run' per step"
}
