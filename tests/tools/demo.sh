#!/usr/bin/env bash
# demo.sh: run every command block of the book in reading order, as a reader would, on RDMA_DEV ('make demo').
#
# The blocks are the ```sh blocks of the chapters that book/chapters.txt lists, in
# its order (the quick reference of each step's "Files and options" is fenced as
# ```shell, and is not run).  Each line is one command; a
# comment after it says how a reader runs it:
#   "# terminal 1 ..."  runs in the background, like a server in a first terminal;
#                       the next command starts once its TCP port (-p, default
#                       18515) listens, or its rdma_cm port (--cm, rping -s).
#   "# terminal 2 ..."  runs next to it; when it ends, the terminal 1 commands
#                       are waited for.  A blank line also waits for them.
#   "# ... fails ..."   must exit with a non-zero status; every other command
#                       must exit with 0.
# A command with --pause runs in the background until it prints its "paused"
# line.  The next block then runs, as from another terminal, with the word N
# standing for the paused program's pid; then each paused program gets Enter.
# A block whose first line is a comment saying "as an ordinary user" runs as
# nobody when this runs as root.  "-d rxe0" becomes "-d $RDMA_DEV", and build/bin/ becomes
# $RDMA_STEPS_BIN/ when that is set (the sanitizer build).
#
# A chapter under steps/NN_name/ is step NN's.  The transcript marks each of
# its chapters with "######## step NN: TITLE ########" (TITLE, the chapter's
# first heading), each command with "$ COMMAND" (or "--- terminal K: $ COMMAND"),
# and ends with "######## all N command blocks ran as the book says ########" or
# with the commands that did not, each named by its chapter and line.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
dev=${RDMA_DEV:?RDMA_DEV must name the RDMA device}
bin=${RDMA_STEPS_BIN:-build/bin}
readonly COMMAND_TIMEOUT_S=60 LISTEN_WAIT_S=30 PAUSE_WAIT_S=60
work=$(mktemp -d)
NAP_DIR=$work
# shellcheck source=tests/lib/nap.bash
. tests/lib/nap.bash
# shellcheck source=tests/lib/listen.bash
. tests/lib/listen.bash
# shellcheck source=tests/lib/paused.bash
. tests/lib/paused.bash

block_step=() block_line=() block_text=()
# The background commands of the current block, one entry each in parallel arrays.
forget_background() {
	proc_pid=() proc_cmd=() proc_out=() proc_expect=() proc_label=() proc_shown=() proc_in=() proc_line=()
}
forget_background
failures=() run_as=()
blocks_run=0 fifos=0

# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
	local pid
	for pid in "${proc_pid[@]}"; do kill "$pid" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

banner() { printf '\n######## %s ########\n' "$*"; }

# One record per line: "S<TAB>NN<TAB>title" at the first heading of each step's
# chapter, "B<TAB>FILE line N" at each ```sh block, "L<TAB>TEXT" for each of its lines.
parse_book() {
	# shellcheck disable=SC2046  # the chapters' names have no spaces
	awk 'FNR == 1 { step = ""; if (match(FILENAME, /^steps\/[0-9][0-9]_/)) step = substr(FILENAME, 7, 2) }
	     step != "" && /^# / { title = $0; sub(/^# (Step [0-9][0-9]: *)?/, "", title)
	                           printf "S\t%s\t%s\n", step, title; step = "" }
	     /^```sh$/ { inblock = 1; printf "B\t%s line %d\n", FILENAME, FNR; next }
	     /^```/ { inblock = 0; next }
	     inblock { printf "L\t%s\n", $0 }' $(tests/tools/chapters.sh en)
}

load_blocks() {
	local kind a b step="" n=-1
	while IFS=$'\t' read -r kind a b; do
		case $kind in
		S) step="$a: $b" ;;
		B) n=$((n + 1)); block_step[n]=$step; block_line[n]=$a; block_text[n]="" ;;
		L) block_text[n]+="$a"$'\n' ;;
		esac
	done < <(parse_book)
}

# The helpers below use bash alone where they can: in the test VM a process
# costs about 80 ms, and they run for every command.

# The command as this run executes it, in $cmd_out.
localise() {
	local cmd=$1 pid=${2:-} word="(^|[^[:alnum:]_])N([^[:alnum:]_]|$)"
	cmd=${cmd//-d rxe0/-d $dev}
	[ "$bin" != build/bin ] && cmd=${cmd//build\/bin\//$bin/}
	# The word N becomes the paused program's pid.
	while [ -n "$pid" ] && [[ $cmd =~ $word ]]; do
		cmd=${cmd/"${BASH_REMATCH[0]}"/"${BASH_REMATCH[1]}$pid${BASH_REMATCH[2]}"}
	done
	cmd_out=$cmd
}

# The TCP port a command listens on, in $port_out: its -p or --port, else the default 18515.
port_of() {
	local re="(-p|--port)[ =]([0-9]+)"
	port_out=18515
	[[ $1 =~ $re ]] && port_out=${BASH_REMATCH[2]}
}

# Prints FILE from byte OFFSET on (LC_ALL=C: offsets count bytes).
print_from() {
	local LC_ALL=C text=""
	IFS= read -r -d '' text <"$1" || true
	printf '%s' "${text:$2}"
	text_len=${#text}
}

# Starts CMD in the background with its stdin on a fifo (for Enter); sets $started.
start_background() {
	local cmd=$1 expect=$2 label=$3 line=$4 i=${#proc_pid[@]} fd
	fifos=$((fifos + 1))
	mkfifo "$work/in.$fifos"
	exec {fd}<>"$work/in.$fifos"
	proc_in[i]=$fd
	proc_out[i]=$work/out.$i
	timeout "$COMMAND_TIMEOUT_S" "${run_as[@]}" bash -c "$cmd" <&"$fd" >"${proc_out[i]}" 2>&1 &
	proc_pid[i]=$!
	proc_cmd[i]=$cmd
	proc_expect[i]=$expect
	proc_label[i]=$label
	proc_shown[i]=0
	proc_line[i]=$line
	started=$i
}

# Waits until CHECK succeeds while process I runs; fails if it ends first or LIMIT seconds pass.
wait_until() {
	local i=$1 limit=$2 waited=0
	shift 2
	until "$@"; do
		kill -0 "${proc_pid[i]}" 2>/dev/null || return 1
		[ "$waited" -ge $((limit * 20)) ] && return 1
		nap 0.05
		waited=$((waited + 1))
	done
}

# Prints what process I printed since it was last shown (after Enter, if it was paused).
show_new_output() {
	local i=$1 after=""
	[ "${proc_shown[i]}" -gt 0 ] && after=", after Enter"
	echo "--- ${proc_label[i]}${after}: \$ ${proc_cmd[i]}"
	print_from "${proc_out[i]}" "${proc_shown[i]}"
	proc_shown[i]=$text_len
}

# Records a failure unless STATUS is what the book says the command does; LINE is "FILE line N".
check_status() {
	local cmd=$1 expect=$2 status=$3 line=$4
	if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
		failures+=("$line: '$cmd' did not end within ${COMMAND_TIMEOUT_S} s")
	elif [ "$expect" = fails ] && [ "$status" -eq 0 ]; then
		failures+=("$line: '$cmd' should fail, as the book says, but exited with 0")
	elif [ "$expect" = works ] && [ "$status" -ne 0 ]; then
		failures+=("$line: '$cmd' exited with status $status")
	fi
}

# Waits for every background command, shows the rest of its output, checks its status.
finish_background() {
	local i status fd
	for i in "${!proc_pid[@]}"; do
		wait "${proc_pid[i]}"
		status=$?
		show_new_output "$i"
		check_status "${proc_cmd[i]}" "${proc_expect[i]}" "$status" "${proc_line[i]}"
		fd=${proc_in[i]}
		exec {fd}>&-
	done
	forget_background
}

# Runs CMD in the foreground; a command without a terminal label is shown at once.
run_foreground() {
	local cmd=$1 expect=$2 label=$3 line=$4 status
	timeout "$COMMAND_TIMEOUT_S" "${run_as[@]}" bash -c "$cmd" </dev/null >"$work/fg" 2>&1
	status=$?
	if [ -z "$label" ]; then
		echo "\$ $cmd"
		print_from "$work/fg" 0
	fi
	check_status "$cmd" "$expect" "$status" "$line"
}

# Runs the commands of one block that starts at LINE ("FILE line N"); PID,
# if given, replaces the word N.  Programs started with --pause are left
# paused, and $paused names the first one's pid.
run_block() {
	local text=$1 line=$2 pid=${3:-} raw cmd comment expect label i
	paused=""
	run_as=()
	case ${text%%$'\n'*} in
	"#"*"as an ordinary user"*)
		if [ "$(id -u)" -eq 0 ]; then
			run_as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
			echo "--- as an ordinary user (nobody), not root:"
		fi ;;
	esac
	while IFS= read -r raw; do
		case $raw in
		"") [ -z "$pid" ] && finish_background; continue ;;
		"#"*) continue ;;
		esac
		cmd=${raw%%[[:space:]]#*}
		cmd=${cmd%"${cmd##*[![:space:]]}"}
		comment=""
		[ "$cmd" != "$raw" ] && comment=${raw#*[[:space:]]#}
		expect=works
		case $comment in *fails*) expect=fails ;; esac
		localise "$cmd" "$pid"
		cmd=$cmd_out
		label=""
		case $comment in
		*"terminal 1"*) label="terminal 1" ;;
		*"terminal 2"*) label="terminal 2" ;;
		esac
		if [ "$label" = "terminal 1" ] || [[ $cmd == *--pause* ]]; then
			start_background "$cmd" "$expect" "${label:-terminal 1}" "$line"
			port_of "$cmd"
			if [ "$label" = "terminal 1" ] && ! wait_until "$started" "$LISTEN_WAIT_S" port_listening "$port_out"; then
				failures+=("$line: '$cmd' did not listen on TCP port $port_out")
			fi
			continue
		fi
		run_foreground "$cmd" "$expect" "$label" "$line"
		if [ -n "$label" ]; then
			finish_background
			echo "--- $label: \$ $cmd"
			print_from "$work/fg" 0
		fi
	done <<<"${text%$'\n'}"
	[ -n "$pid" ] && return
	for i in "${!proc_pid[@]}"; do
		[[ ${proc_cmd[i]} == *--pause* ]] || continue
		if wait_until "$i" "$PAUSE_WAIT_S" read_paused_pid "${proc_out[i]}"; then
			paused=${paused:-$paused_out}
		else
			failures+=("$line: '${proc_cmd[i]}' never printed its paused line")
		fi
	done
	if [ -n "$paused" ]; then
		for i in "${!proc_pid[@]}"; do show_new_output "$i"; done
	else
		finish_background
	fi
}

# Presses Enter for every paused program and waits for them.
resume_paused() {
	local i
	echo "--- Enter in each paused program's terminal"
	for i in "${!proc_pid[@]}"; do echo >&"${proc_in[i]}"; done
	finish_background
}

# Runs every block in order; a block that leaves programs paused is followed
# by the next block, run while they wait, and then by Enter.
run_all_blocks() {
	local k=0 shown_step="" step_start=$SECONDS block_start first_line
	while [ "$k" -lt "${#block_text[@]}" ]; do
		if [ "${block_step[k]}" != "$shown_step" ]; then
			[ -n "$shown_step" ] && echo "(step ${shown_step%%:*} took $((SECONDS - step_start)) s)"
			shown_step=${block_step[k]}
			step_start=$SECONDS
			banner "step $shown_step"
		fi
		block_start=${EPOCHREALTIME/./} first_line=${block_line[k]}
		run_block "${block_text[k]}" "${block_line[k]}"
		blocks_run=$((blocks_run + 1))
		if [ -n "$paused" ] && [ $((k + 1)) -lt "${#block_text[@]}" ]; then
			k=$((k + 1))
			echo "--- another terminal, while pid $paused is paused:"
			run_block "${block_text[k]}" "${block_line[k]}" "$paused"
			blocks_run=$((blocks_run + 1))
		fi
		[ "${#proc_pid[@]}" -gt 0 ] && resume_paused
		block_ms+=("$(((${EPOCHREALTIME/./} - block_start) / 1000)) $first_line")
		k=$((k + 1))
	done
	echo "(step ${shown_step%%:*} took $((SECONDS - step_start)) s)"
}

# The slowest blocks, as "  12.3 s  the block at FILE line N": where the demo's time goes.
show_slowest_blocks() {
	local ms line
	echo "slowest command blocks (of $((${EPOCHREALTIME/./} / 1000000 - demo_start)) s):"
	printf '%s\n' "${block_ms[@]}" | sort -rn | head -n 5 | while read -r ms line; do
		printf '  %4d.%d s  the block at %s\n' $((ms / 1000)) $((ms % 1000 / 100)) "$line"
	done
}

demo_start=${EPOCHREALTIME%.*} block_ms=()
load_blocks
run_all_blocks
show_slowest_blocks
if [ "${#failures[@]}" -eq 0 ]; then
	banner "all $blocks_run command blocks ran as the book says"
	exit 0
fi
banner "${#failures[@]} command(s) did not run as the book says"
printf '%s\n' "${failures[@]}"
exit 1
