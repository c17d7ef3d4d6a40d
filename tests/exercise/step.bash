# step.bash: the step a learner names with STEP=, shared by make-exercise.sh and check.sh.

# Prints the step directory's name (02_reg_mr) for WANT (02 or 02_reg_mr); on a
# bad or missing WANT, says what to give, as TOOL (make TOOL STEP=...), and fails.
resolve_step() { # TOOL WANT
	local tool=$1 want=$2 s steps=(steps/[0-9][0-9]_*) last
	last=${steps[-1]#steps/}
	last=${last%%_*}
	if [ -z "$want" ]; then
		echo "$tool: say which step, 01 to $last: make $tool STEP=02" >&2
		return 1
	fi
	for s in steps/[0-9][0-9]_*; do
		s=${s#steps/}
		case $want in "$s" | "${s%%_*}") echo "$s"; return 0 ;; esac
	done
	echo "$tool: no step '$want': give STEP=01 to $last (or a name such as 02_reg_mr)" >&2
	return 1
}
