# paused.bash: the pid in a program's "paused : pid N" line (--pause), read without starting a process; sourced by tests/tools/demo.sh and tests/lib/test_helper.bash.

# Whether FILE has a paused line yet; if so its pid goes in $paused_out.
read_paused_pid() { # FILE
	local line re="^paused +: pid ([0-9]+)"
	[ -r "$1" ] || return 1
	while IFS= read -r line; do
		[[ $line =~ $re ]] && { paused_out=${BASH_REMATCH[1]}; return 0; }
	done <"$1"
	return 1
}

# Prints the pid of FILE's paused line; fails if it has none.
paused_pid() { # FILE
	read_paused_pid "$1" && echo "$paused_out"
}
