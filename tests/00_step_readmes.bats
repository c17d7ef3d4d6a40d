#!/usr/bin/env bats
# 00_step_readmes.bats: every steps/NN_name/README.md names each .c file beside it and each option its program's --help prints.
# Needs no RDMA device: --help prints before any device is opened, so it runs on the host.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
}

# The options STEP's --help prints, one a line: the letter where it has one (-d), else the long name (--pause).
help_options() { # STEP
	"$BIN/$1" --help | sed -nE 's/^ +(-[a-zA-Z]), --[a-z0-9_-]+.*/\1/p; s/^ +(--[a-z0-9_-]+).*/\1/p'
}

@test "each step's README names every .c file of the step and every option of its --help" {
	local dir step readme f opt missing=() options
	for dir in "$PROJECT_ROOT"/steps/[0-9][0-9]_*/; do
		step=$(basename "$dir")
		readme=$dir/README.md
		[ -f "$readme" ] || { missing+=("$step: no README.md"); continue; }
		for f in "$dir"*.c; do
			grep -qF "\`$(basename "$f")\`" "$readme" || missing+=("steps/$step/README.md does not name $(basename "$f")")
		done
		options=$(help_options "$step") || fail "$step --help failed"
		[ -n "$options" ] || fail "$step --help printed no option: the pattern here no longer matches its format"
		while read -r opt; do
			# Quoted as code, alone or with its value: `-s`, `-s BYTES`, `--peer=rc_pingpong`.
			grep -qE -- "\`$opt([ =][^\`]*)?\`" "$readme" || missing+=("steps/$step/README.md does not name $opt")
		done <<<"$options"
	done
	[ ${#missing[@]} -eq 0 ] || fail "$(printf '%s\n' "${missing[@]}")"
}
