#!/usr/bin/env bats
# 00_diagrams.bats: every diagrams/NAME.dot has a committed diagrams/NAME.svg, and dot renders the .dot to exactly that SVG.
# Needs no RDMA device: it runs on the host, before the test VM boots.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
}

@test "every SVG in diagrams/ is what dot renders from its .dot source today" {
	command -v dot >/dev/null || fail "dot is not installed: run make deps (it installs graphviz)"
	local dir=$PROJECT_ROOT/diagrams file name problems=()
	compgen -G "$dir/*.dot" >/dev/null || fail "diagrams/ holds no .dot source"
	for file in "$dir"/*.dot; do
		name=$(basename "$file" .dot)
		if [ ! -f "$dir/$name.svg" ]; then
			problems+=("diagrams/$name.dot has no diagrams/$name.svg: run make diagrams")
			continue
		fi
		run dot -Tsvg -o "$BATS_TEST_TMPDIR/$name.svg" "$file"
		assert_success
		cmp -s "$BATS_TEST_TMPDIR/$name.svg" "$dir/$name.svg" ||
			problems+=("diagrams/$name.svg is stale: it is not what dot renders from diagrams/$name.dot; run make diagrams")
	done
	for file in "$dir"/*.svg; do
		[ -e "$file" ] || continue
		name=$(basename "$file" .svg)
		[ -f "$dir/$name.dot" ] ||
			problems+=("diagrams/$name.svg has no diagrams/$name.dot: restore its source or delete the SVG")
	done
	[ ${#problems[@]} -eq 0 ] || fail "$(printf '%s\n' "${problems[@]}")"
}
