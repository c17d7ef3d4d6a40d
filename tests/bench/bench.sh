#!/usr/bin/env bash
# bench.sh: runs step 05 beside perftest, counts system calls and compares 06_gdr's tcp and rdma paths, over one RDMA device.
#
# Runs where the device is (in the test VM, or natively), from 'make bench'.
# It writes raw figures to $RDMA_STEPS_RESULTS, one per line, for report.sh:
#   raw.tsv       CASE TOOL REP VALUE   (latency in us, bandwidth in 10^6 B/s)
#   syscalls.tsv  MODE PHASE SYSCALL CALLS MESSAGES   (PHASE: set-up, loop or teardown; MESSAGES: the loop's)
#   cpu.tsv       SIZE PATH SIDE WALL_US USER_US SYSTEM_US COPIES
#   counts.tsv    CASE TOOL SIDE PASS MESSAGES PART COUNT   (callgrind, user space; PART: an object, check
#                 or sleep, and COUNT their instructions; or PART sleeps, and COUNT the events read)
#   meta.env      the kernel, device, provider and perftest version
# BENCH_REPS (default 15) repeats each case, step 05 and perftest back to back in each
# repetition; BENCH_QUICK=1 runs small sizes, to check the machinery ('make test-bench' does).
# BENCH_COUNT_PASSES (default 1; 2 when quick) counts each case's instructions that many times,
# BENCH_COUNT_JOBS (default 4) counted pairs at a time.  BENCH_ONLY=kv runs step 08's cases
# and UCX's alone (about 5 minutes), for the KV transfer's table.
#   ucx.tsv       TEST STATUS FIGURE LAST_LINE   (UCX's ucx_perftest, if installed: its figure in
#                 10^6 B/s, or why there is none)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
out=${RDMA_STEPS_RESULTS:?set RDMA_STEPS_RESULTS to the folder for the raw figures}
dev=${RDMA_DEV:?set RDMA_DEV to the RDMA device}
reps=${BENCH_REPS:-15}
quick=${BENCH_QUICK:-0}
bin=${RDMA_STEPS_BIN:-build/bin}
port=18700
work=$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

die() { echo "bench: $*" >&2; exit 1; }

# shellcheck source=tests/lib/gid.bash
. tests/lib/gid.bash
# shellcheck source=tests/lib/listen.bash
. tests/lib/listen.bash

# The kernel driver behind the device: a PCI device's driver, or a software device's module (rxe, siw).
provider() {
	local sys=/sys/class/infiniband/$dev
	if [ -e "$sys/device/driver" ]; then
		readlink -f "$sys/device/driver" | sed 's|.*/||'
	elif [ -d /sys/module/rdma_rxe ] && [[ $dev == rxe* ]]; then
		echo "rdma_rxe (soft-RoCE over $(cat "$sys/parent"))"
	elif [ -d /sys/module/siw ] && [[ $dev == siw* ]]; then
		echo "siw (soft-iWARP over $(cat "$sys/parent"))"
	else
		echo unknown
	fi
}

# Runs SERVER_CMD... -- CLIENT_CMD... as a pair over $port; the client's output goes to $work/cli.out.
run_pair() {
	local server=() srv status=0
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	"${server[@]}" >"$work/srv.out" 2>&1 &
	srv=$!
	wait_listening "$port" 20 || { kill "$srv" 2>/dev/null; die "the server never listened: $(cat "$work/srv.out")"; }
	timeout 300 "$@" >"$work/cli.out" 2>&1 || status=$?
	wait "$srv" || status=$?
	[ "$status" -eq 0 ] || die "failed ($status): $* -- server: $(tail -3 "$work/srv.out") client: $(tail -3 "$work/cli.out")"
}

# step 05's median latency, or its bandwidth (in 10^6 B/s), from the client's report.
ours_latency() { awk -F'median ' '/^latency \(us\)/ { split($2, f, ","); print f[1] }' "$work/cli.out"; }
ours_bandwidth() { awk '/^bandwidth / { print $3 }' "$work/cli.out"; }
# perftest's result line starts with the size: t_typical (its median) is the 5th field of a
# latency test; BW average the 4th of a bandwidth test, in MiB/s (2^20), made 10^6 B/s here.
# ib_send_lat and ib_write_lat report half their ping-pong's round trip.  Step 05's
# SEND latency is that half too, but its WRITE latency is post to completion: the
# WRITE and its ACK, a whole round trip, so ib_write_lat's figure is doubled to match.
# READ is post to completion in both.
perftest_latency() { # OP
	awk -v factor="$([ "$1" = write ] && echo 2 || echo 1)" \
		'$1 ~ /^[0-9]+$/ && NF >= 5 { v = $5 * factor } END { print v }' "$work/cli.out"
}
perftest_bandwidth() { awk '$1 ~ /^[0-9]+$/ && NF >= 4 { v = $4 * 1.048576 } END { printf "%.2f\n", v }' "$work/cli.out"; }

record() { # CASE TOOL REP VALUE
	[ -n "$4" ] || die "$1: $2 printed no figure: $(tail -5 "$work/cli.out")"
	printf '%s\t%s\t%s\t%s\n' "$@" >>"$out/raw.tsv"
}

libstdbuf=/usr/libexec/coreutils/libstdbuf.so
[ -e "$libstdbuf" ] || die "$libstdbuf is missing: it comes with coreutils, which marks ib_send_lat's phases"
# Both tools use the GID our programs choose.
gid=$(sysfs_ipv4_mapped_gid_index "$dev") || gid=0
ours_opts=(-d "$dev" -x "$gid" -p "$port")
perf_opts=(-d "$dev" -x "$gid" -p "$port" -F)

# The order of a case's two runs in repetition REP: step 05 first in odd repetitions, perftest
# first in even ones, so that neither tool always runs just after a case of its own or the other's.
turns() { (($1 % 2)) && echo ours perftest || echo perftest ours; }

# KIND CASE OP SIZE ITERS PERFTEST REP: one case, step 05 against PERFTEST.  KIND latency runs
# step 05 one message at a time; KIND bandwidth runs it with --depth 64, against PERFTEST's
# default of 128 in flight.
measure_case() {
	local kind=$1 name=$2 op=$3 size=$4 iters=$5 tool=$6 rep=$7 turn depth=()
	[ "$kind" = bandwidth ] && depth=(-D 64)
	for turn in $(turns "$rep"); do
		if [ "$turn" = ours ]; then
			run_pair "$bin/05_poll_destroy" "${ours_opts[@]}" -o "$op" -s "$size" -n "$iters" "${depth[@]}" -- \
				"$bin/05_poll_destroy" "${ours_opts[@]}" -o "$op" -s "$size" -n "$iters" "${depth[@]}" 127.0.0.1
			record "$name" ours "$rep" "$("ours_$kind")"
		else
			run_pair "$tool" "${perf_opts[@]}" -s "$size" -n "$iters" -- \
				"$tool" "${perf_opts[@]}" -s "$size" -n "$iters" 127.0.0.1
			record "$name" "${tool##*/}" "$rep" "$("perftest_$kind" "$op")"
		fi
	done
}

# The system calls of one client run of MESSAGES 64-byte SENDs, ping-pong: step 05's (MODE busy
# or events) or ib_send_lat's, traced by strace and split into phases at the lines the program
# writes to stdout, which strace shows as write(1, "...") calls.  Each marker is a regex over
# the traced string; the phase it starts follows it.
# - step 05: set-up (stages 1-3) ends at its "stages 4 and 5" heading; the loop runs from its
#   "iterations" line (after the first message, which it shows in full) to its next line,
#   MESSAGES - 1 messages; teardown (stage 5) starts at its "stage 5" heading.  The loop itself
#   prints nothing, so its next line, whichever it is, marks the loop's end.
# - ib_send_lat, its stdout line-buffered by coreutils' libstdbuf (what stdbuf -oL preloads;
#   loading it adds a few calls to set-up): set-up ends at its "#bytes" header, printed just
#   before its loop; the loop, MESSAGES messages and one handshake on its socket, ends at its
#   result line; teardown follows.
# The marker writes themselves count in no phase, nor does what lies between the loop and set-up or teardown.
# The server runs under strace too, though its calls are not reported: strace slows the program
# it traces several times over, and a traced client facing an untraced server would find
# every reply already there, and never sleep in event mode.
count_syscalls() { # MODE MESSAGES
	local mode=$1 n=$2 trace=$work/strace.$1 markers phases looped wait_opt=()
	local server_strace=(strace -f -qq -c -o "$work/strace.server")
	if [ "$mode" = ib_send_lat ]; then
		run_pair "${server_strace[@]}" ib_send_lat "${perf_opts[@]}" -s 64 -n "$n" -- \
			strace -f -qq -e signal=none -s 40 -o "$trace" -E LD_PRELOAD="$libstdbuf" -E _STDBUF_O=L \
			ib_send_lat "${perf_opts[@]}" -s 64 -n "$n" 127.0.0.1
		markers=$(printf '%s\t%s' '^ *#bytes' '^ *64 +[0-9]+ ') phases='loop teardown' looped=$n
	else
		[ "$mode" = events ] && wait_opt=(-e)
		run_pair "${server_strace[@]}" "$bin/05_poll_destroy" "${ours_opts[@]}" -o send -s 64 -n "$n" "${wait_opt[@]}" -- \
			strace -f -qq -e signal=none -s 40 -o "$trace" "$bin/05_poll_destroy" "${ours_opts[@]}" \
			-o send -s 64 -n "$n" "${wait_opt[@]}" 127.0.0.1
		markers=$(printf '%s\t%s\t%s\t%s' '^\\n== stages 4 and 5' '^iterations ' '' '^\\n== stage 5:')
		phases='first loop report teardown' looped=$((n - 1))
	fi
	MARKERS=$markers awk -v mode="$mode" -v phases="$phases" -v looped="$looped" '
		BEGIN { markers = split(ENVIRON["MARKERS"], marker, "\t"); split(phases, starts, " ")
			phase = "set-up"; next_marker = 1 }
		# strace -f: "PID name(arguments) = result".
		{ name = $2; sub(/\(.*/, "", name) }
		next_marker <= markers && $2 == "write(1," && substr($0, index($0, "\"") + 1) ~ marker[next_marker] {
			phase = starts[next_marker++]; next }
		# "+++ exited", and the rest of what strace writes that is no call.
		name !~ /^[a-z_0-9]+$/ { next }
		phase == "set-up" || phase == "loop" || phase == "teardown" { calls[phase, name]++ }
		END {
			if (next_marker <= markers) {
				printf "marker %d (%s) never came\n", next_marker, marker[next_marker] > "/dev/stderr"
				exit 1
			}
			for (k in calls) {
				split(k, part, SUBSEP)
				printf "%s\t%s\t%s\t%d\t%d\n", mode, part[1], part[2], calls[k], looped
			}
		}' "$trace" >>"$out/syscalls.tsv" || die "$mode: the system calls could not be split into phases"
}

# 06_gdr's tcp and rdma paths for one SIZE: each side's wall time, CPU time and extra copies.
cpu_case() {
	local size=$1
	run_pair "$bin/06_gdr" -d "$dev" -x "$gid" -p "$port" -s "$size" -P tcp -- \
		"$bin/06_gdr" -d "$dev" -x "$gid" -p "$port" -s "$size" -P tcp 127.0.0.1
	cat "$work/srv.out" "$work/cli.out" >"$work/gdr.out"
	run_pair "$bin/06_gdr" -d "$dev" -x "$gid" -p "$port" -s "$size" -P rdma -- \
		"$bin/06_gdr" -d "$dev" -x "$gid" -p "$port" -s "$size" -P rdma 127.0.0.1
	cat "$work/srv.out" "$work/cli.out" >>"$work/gdr.out"
	awk -v size="$size" '
		/^path (tcp|rdma) / { path = $2; side = $4; sub(/,/, "", side); copies = $5
			match($0, /in [0-9]+ us/); wall = substr($0, RSTART + 3, RLENGTH - 6) }
		/^cpu (tcp|rdma) / { match($0, /user [0-9]+/); user = substr($0, RSTART + 5, RLENGTH - 5)
			match($0, /system [0-9]+/); sys = substr($0, RSTART + 7, RLENGTH - 7)
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", size, path, side, wall, user, sys, copies }
	' "$work/gdr.out" >>"$out/cpu.tsv"
}

# The instructions a process ran in user space, from callgrind's output FILE: one line per PART
# (program, libibverbs, provider, libc, other; PROGRAM is the program's file name), each the
# instructions that ran in that object, then three lines that are no object's:
# - check: step 05's data check, the functions that fill and check the pattern and what they
#   call (memcpy, memcmp), wherever those ran;
# - sleep: the event wait, the functions that arm the CQ, sleep on the completion channel and
#   read and acknowledge its event, and what they call (the system calls' wrappers in libc),
#   with step 05's polls after its first look found the CQ empty;
# - sleeps: the events read, callgrind's count of the calls of ibv_get_cq_event.
# The bench runs callgrind with --separate-callers, so every function's cost comes split by
# its chain of callers, nearest first ("read'ibv_get_cq_event'wait_for_event'..."): a cost
# whose chain holds a check function is the check's, one whose chain holds a wait function the
# sleep's, whatever object it ran in.  Left out: perftest's clock calibration for its report,
# which spins on gettimeofday for 200 x 100 us, as many instructions as the clock allows: every
# function that calls gettimeofday, and gettimeofday with what it calls; and the printf family
# with what it calls, which formats the lines both tools print before and after the loop (none
# inside it): its count depends on the figures' digits, so on the timing.  Left out too: step
# 05's waits for its peer outside the event wait (accepting the client, the barriers), each in
# slices of 100 ms with a look at the clock and for Ctrl-C between two (common/wait.c's
# wait_fd): as many slices as the peer took to start under valgrind, so on the load.
callgrind_parts() { # FILE PROGRAM
	awk -v program="$2" -v check_functions="$check_functions" -v wait_functions="$wait_functions" -v look="$look_function" \
		-v peer_wait_functions="$peer_wait_functions" '
		BEGIN { split(check_functions, f, " "); for (i in f) checking[f[i]] = 1
			split(wait_functions, f, " "); for (i in f) waiting[f[i]] = 1
			split(peer_wait_functions, f, " "); for (i in f) waiting_for_peer[f[i]] = 1
			looking[look] = 1 }
		function part(object) {
			if (object ~ "/" program "$") return "program"
			if (object ~ /\/libibverbs\.so/) return "libibverbs"
			if (object ~ /\/libibverbs\/lib[a-z0-9_]+-rdmav[0-9]+\.so$/) return "provider"
			if (object ~ /\/libc\.so/) return "libc"
			return "other"
		}
		# Whether a function of the chain CONTEXT is in SET (checking or waiting).  A
		# function that gcc cloned is named with a suffix ("wait_for_event.constprop.0").
		function within(context, set,    n, chain, i) {
			n = split(context, chain, "'"'"'")
			for (i = 1; i <= n; i++) { sub(/\..*/, "", chain[i]); if (chain[i] in set) return 1 }
			return 0
		}
		function function_of(context) { sub(/'"'"'.*/, "", context); return context }
		/^ob=/ { object = substr($0, 4); next }
		/^fn=/ { context = substr($0, 4); here = object SUBSEP context
			objects[here] = object; contexts[here] = context; functions[here] = object SUBSEP function_of(context); next }
		/^cfn=/ { callee = function_of(substr($0, 5)); sub(/\..*/, "", callee)
			if (callee ~ /gettimeofday/) calibrating[functions[here]] = 1; next }
		/^calls=/ { in_call = 1; sub(/^calls=/, "")
			if (callee == "ibv_get_cq_event") sleeps += $1
			if (callee == "poll_after_waiting") empty_looks += $1
			if (callee == look) { if (within(contexts[here], waiting)) wait_looks += $1; else first_looks += $1 }
			next }
		# A cost line: position, then the instruction count.  After calls=, it is the call
		# inclusive cost, which the callee'"'"'s own lines already hold: skipped.
		/^[0-9+*-]/ { if (in_call) in_call = 0; else own[here] += $NF }
		END {
			for (here in own) {
				if (functions[here] in calibrating || contexts[here] ~ /gettimeofday/) continue
				if (contexts[here] ~ /printf/) continue
				if (within(contexts[here], waiting_for_peer) && !within(contexts[here], waiting)) continue
				o = part(objects[here])
				if (within(contexts[here], waiting)) {
					sleep += own[here]
					if (within(contexts[here], looking)) wait_look[o] += own[here]
				} else if (within(contexts[here], checking)) {
					check += own[here]
				} else {
					counted[o] += own[here]
					if (within(contexts[here], looking)) first_look[o] += own[here]
				}
			}
			n = split("program libibverbs provider libc other", parts, " ")
			# Step 05 only: E first looks found the CQ empty (each a call of
			# poll_after_waiting), S found a completion; the wait looked W times, E of
			# them finding the completion it waited for, X = W - E finding none.  In
			# each object, S found + E empty = the first looks'"'"' count, E found + X
			# empty = the wait'"'"'s: solved for the cost of a look that finds (found)
			# and of one that does not (empty).  The work then holds one found look
			# per completion and no empty one: E x (found - empty) moves from the
			# sleep to the work, whatever the timing made E.
			if (empty_looks > 0) {
				S = first_looks - empty_looks; E = empty_looks; X = wait_looks - empty_looks
				D = S * X - E * E
				if (D == 0) { print "callgrind_parts: " FILENAME ": the looks cannot be solved (" S " found, " E " empty, " X " empty in the wait)" > "/dev/stderr"; exit 1 }
				for (i = 1; i <= n; i++) {
					o = parts[i]
					found[o] = (first_look[o] * X - wait_look[o] * E) / D
					empty[o] = (S * wait_look[o] - E * first_look[o]) / D
					moved = E * (found[o] - empty[o]); counted[o] += moved; sleep -= moved
					found_all += found[o]; empty_all += empty[o]
				}
			}
			for (i = 1; i <= n; i++) printf "%s\t%.0f\n", parts[i], counted[parts[i]]
			printf "check\t%d\nsleep\t%.0f\nsleeps\t%d\n", check, sleep, sleeps
			if (empty_looks > 0) printf "look_found\t%.2f\nlook_empty\t%.2f\n", found_all, empty_all
		}' "$1"
}

# Step 05's data check: its pattern's fill and check (steps/04_post_wr/pattern.c).
check_functions="fill_pattern check_pattern blocks_match row_for_block"
# The event wait.  Step 05's poll_after_waiting (all that a wait does once its first poll
# found the CQ empty: arm, poll again, sleep, poll), wait_for_event (poll() on the channel's
# file descriptor, then ibv_get_cq_event and ibv_ack_cq_events) and arm (ibv_req_notify_cq),
# in steps/05_poll_destroy/poller.c, kept out of line so that they have a name; and
# libibverbs's exported functions, which perftest calls from a function that has none (it is
# stripped): ibv_get_cq_event, ibv_ack_cq_events, and ibv_cmd_req_notify_cq, where rxe's
# provider sends ibv_req_notify_cq (an inline call through the context's table of provider
# functions).  perftest sleeps before it polls, so it makes no empty poll to leave out.
wait_functions="poll_after_waiting wait_for_event arm ibv_get_cq_event ibv_ack_cq_events ibv_cmd_req_notify_cq"
# Step 05's bounded wait on a file descriptor (common/wait.c): in the event wait it is the
# sleep's; anywhere else, a wait for the peer, left out.
peer_wait_functions="wait_fd"
# Step 05's every poll in event mode (steps/05_poll_destroy/poller.c): its first look, in the
# work, and the wait's, in the sleep.  A first look that finds the CQ empty is cheaper than one
# that finds a completion, which the wait then takes: how often that happens follows the timing,
# so callgrind_parts solves both costs from the call counts and counts one found look per
# completion in the work, none empty.
look_function=look_at_cq
# Both tools sort their latencies for the report, with qsort, after the loop: that costs
# n log n, not so much per message, so collection stops while qsort runs.  (Naming a
# function to toggle at turns collection off at the start: --collect-atstart turns it on.)
# --separate-callers=5: each function's cost split by its last 5 callers, deep enough for
# every call under the wait (ibv_cmd_req_notify_cq, then 3 calls down to ioctl) and the check.
# LD_BIND_NOW=1: the dynamic linker binds every symbol at start, in both counts of a pair, not
# at a function's first call, which a run makes or not as the timing has it (a peer check after
# a long wait): that had moved a side's "other" by 700 instructions between two runs.
callgrind=(env LD_BIND_NOW=1 valgrind --tool=callgrind --dump-instr=no --compress-strings=no --compress-pos=no
	--toggle-collect=qsort --collect-atstart=yes --separate-callers=5)

# One counted pair on PORT, both sides under callgrind: step 05 (TOOL ours) or perftest's TOOL.
# Their outputs go to $work/TAG.{target,initiator}; what each side counted, to $work/TAG.counts,
# or why the pair failed, to $work/TAG.failed.  The client starts once its server listens:
# perftest's would give up, and step 05's would retry its connect, as many times as the timing
# makes it, in one count of a pair and not the other (it had moved the work by 1%).
counted_pair() { # TAG PORT CASE TOOL PASS MESSAGES ARGS...
	local tag=$1 port=$2 name=$3 tool=$4 pass=$5 n=$6 prog srv status=0 side patience=()
	shift 6
	if [ "$tool" = ours ]; then
		prog=$bin/05_poll_destroy patience=(-t 600)
	else
		prog=$(command -v "$tool")
	fi
	local args=("$@" -p "$port" -n "$n" "${patience[@]}")
	"${callgrind[@]}" --callgrind-out-file="$work/$tag.target" "$prog" "${args[@]}" >"$work/$tag.target.out" 2>&1 &
	srv=$!
	wait_listening "$port" 600 "$srv" || status=1
	[ "$status" -ne 0 ] || timeout 900 "${callgrind[@]}" --callgrind-out-file="$work/$tag.initiator" \
		"$prog" "${args[@]}" 127.0.0.1 >"$work/$tag.initiator.out" 2>&1 || status=$?
	wait "$srv" || status=$?
	if [ "$status" -ne 0 ]; then
		echo "counting $name ($tool, $n messages) failed ($status): $(tail -3 "$work/$tag.target.out") / $(tail -3 "$work/$tag.initiator.out")" >"$work/$tag.failed"
		return 1
	fi
	for side in initiator target; do
		callgrind_parts "$work/$tag.$side" "${prog##*/}" |
			awk -v prefix="$name	${tool##*/}	$side	$pass	$n" '{ print prefix "\t" $0 }'
	done >"$work/$tag.counts"
	rm -f "$work/$tag".{target,initiator}
}

# The counted pairs run count_jobs at a time, each on a port of its own, from 18710 up.  What
# costs the time is valgrind starting under emulation, one process after the other for
# perftest's pair, which leaves a CPU idle while a pair runs alone; several at once keep both
# busy.  Timing changes with the load, and with it how often a wait sleeps, but not the work.
count_jobs=${BENCH_COUNT_JOBS:-4} counted_tags=()
start_counted_pair() { # CASE TOOL PASS MESSAGES ARGS...
	local tag=pair${#counted_tags[@]}
	while [ "$(jobs -pr | wc -l)" -ge "$count_jobs" ]; do wait -n; done
	counted_pair "$tag" $((18710 + ${#counted_tags[@]})) "$@" &
	counted_tags+=("$tag")
}

# KIND CASE OP SIZE PERFTEST PASS: one case counted, step 05 and PERFTEST, each at two message
# counts; report.sh divides the difference of the counts by the difference of the messages, so
# that set-up and teardown cancel.  Both run event-driven (step 05 -e, perftest -e): a busy
# poll's empty polls would be counted too, as many as the wait lasts, and under callgrind that
# changes from run to run.  Event-driven, a wait sleeps instead, and how often still depends on
# timing where the program polls first (step 05), so the sleeps are counted apart from the
# work (callgrind_parts).  perftest has no event mode for WRITE (ib_write_lat, ib_write_bw):
# those run busy-polled, their empty polls counted.
count_case() {
	local kind=$1 name=$2 op=$3 size=$4 tool=$5 pass=$6 n depth=() events=(-e)
	[ "$kind" = bandwidth ] && depth=(-D 64)
	[[ $tool == ib_write_* ]] && events=()
	for n in "${count_messages[@]}"; do
		start_counted_pair "$name" ours "$pass" "$n" -d "$dev" -x "$gid" -o "$op" -s "$size" -e "${depth[@]}"
		start_counted_pair "$name" "$tool" "$pass" "$n" -d "$dev" -x "$gid" -F -s "$size" "${events[@]}"
	done
}

# Waits for every counted pair, then writes their counts to counts.tsv in the order they started.
finish_counts() {
	local tag
	wait
	for tag in "${counted_tags[@]}"; do
		[ ! -e "$work/$tag.failed" ] || die "$(cat "$work/$tag.failed")"
		[ -s "$work/$tag.counts" ] || die "counted pair $tag left no counts"
		cat "$work/$tag.counts"
	done >"$out/counts.tsv"
}

# Step 08's KV cache transfer beside perftest: one request of 8 layers x 8 blocks of 64 KiB
# (4 MiB in 64 WRs, the largest one request a default pool allows an ordinary user), its blocks
# scattered on both sides, pulled (RDMA READ, against ib_read_bw) or pushed (WRITE with
# immediate, against ib_write_bw), over QPS QPs.  perftest moves the same bytes at the same
# message size over as many QPs, with step 08's 64 WRs in flight on each (-t 64).  Both sides
# get --no-overlap, so that the prefiller's stand-in compute (filling the blocks) is done
# before the first post.  Ours is the initiator's 'posted to done' line: the request's bytes
# over the time from its first post to its last completion (the decoder's in pull mode, the
# prefiller's in push mode, whose last WRITE completes once the decoder has ACKed it);
# perftest's, its average over its loop.
kv_shape=(--layers 8 --blocks 8 --block-bytes 64K --pool 1 --requests 1 --no-overlap)
ours_kv_bandwidth() { # OUTPUT
	awk '/^posted to done +: request 0: / { match($0, /[0-9.]+ MB\/s/); print substr($0, RSTART, RLENGTH - 5) }' "$1"
}
measure_kv() { # MODE QPS REP
	local mode=$1 qps=$2 rep=$3 tool=ib_write_bw turn name
	[ "$mode" = pull ] && tool=ib_read_bw
	name="kv_${mode}_q$qps 65536"
	for turn in $(turns "$rep"); do
		if [ "$turn" = ours ]; then
			run_pair "$bin/08_kv_transfer" "${ours_opts[@]}" --mode "$mode" --qps "$qps" "${kv_shape[@]}" -- \
				"$bin/08_kv_transfer" "${ours_opts[@]}" --mode "$mode" --qps "$qps" "${kv_shape[@]}" 127.0.0.1
			record "$name" ours "$rep" "$(ours_kv_bandwidth "$work/$([ "$mode" = pull ] && echo cli || echo srv).out")"
		else
			run_pair "$tool" "${perf_opts[@]}" -s 65536 -q "$qps" -t 64 -n $((64 / qps)) -- \
				"$tool" "${perf_opts[@]}" -s 65536 -q "$qps" -t 64 -n $((64 / qps)) 127.0.0.1
			record "$name" "$tool" "$rep" "$(perftest_bandwidth)"
		fi
	done
}

# UCX, NIXL's default backend, the same 64 KiB one-sided operations over rc_verbs on this
# device: ucp_get as pull, ucp_put_bw as push.  UCX's verbs transports need an auxiliary
# transport to connect (ud_verbs), and UD takes the GID index of the IPv4 address as ours
# does.  Upstream has not tested soft-RoCE (openucx/ucx#8633): each run is bounded, and
# a run that gives no figure is recorded with the last line it printed.  The bound is
# 20 s a run; 6 s with BENCH_QUICK, which checks only that the outcome is recorded.
ucx_case() { # TEST
	local test=$1 srv status=0 figure line bound=$((quick == 1 ? 6 : 20))
	local env=(UCX_NET_DEVICES="$dev:1" "UCX_TLS=rc_verbs,ud_verbs" UCX_IB_GID_INDEX="$gid")
	env "${env[@]}" timeout "$bound" stdbuf -oL ucx_perftest -p "$port" >"$work/ucx.srv" 2>&1 &
	srv=$!
	wait_listening "$port" "$bound" "$srv" || status=1
	[ "$status" -ne 0 ] || env "${env[@]}" timeout "$bound" stdbuf -oL ucx_perftest 127.0.0.1 -p "$port" \
		-t "$test" -s 65536 -n 1000 >"$work/ucx.cli" 2>&1 || status=$?
	wait "$srv" 2>/dev/null
	# The result row: "Final:", then the iterations, the latency percentiles and averages,
	# then the bandwidth average and overall (MB/s, 2^20).
	figure=$(awk '$1 == "Final:" { printf "%.2f", $7 * 1.048576 }' "$work/ucx.cli")
	line=$(grep -v '^[+|]' "$work/ucx.cli" | grep -v '^ *[0-9]* *0x' | tail -n 1 | tr '\t' ' ')
	if [ -n "$figure" ]; then
		printf '%s\tran\t%s\t-\n' "$test" "$figure"
	elif [ "$status" = 124 ]; then
		printf '%s\tno figure in %d s\t-\t%s\n' "$test" "$bound" "${line:-(nothing printed but the table header)}"
	else
		printf '%s\tfailed (%s)\t-\t%s\n' "$test" "$status" "${line:-(nothing printed)}"
	fi >>"$out/ucx.tsv"
}
measure_ucx() {
	if ! command -v ucx_perftest >/dev/null; then
		printf 'ucp_get\tnot installed\t-\ttests/tools/deps.sh bench installs ucx-utils\n' >>"$out/ucx.tsv"
		return
	fi
	echo "ucx=$(dpkg-query -W -f='${Version}' ucx-utils 2>/dev/null)" >>"$out/meta.env"
	ucx_case ucp_get
	ucx_case ucp_put_bw
}

rm -f "$out/raw.tsv" "$out/syscalls.tsv" "$out/cpu.tsv" "$out/counts.tsv" "$out/ucx.tsv"
{
	echo "kernel=$(uname -r)"
	echo "device=$dev"
	echo "provider=$(provider)"
	echo "node_type=$(cat "/sys/class/infiniband/$dev/node_type" 2>/dev/null)"
	echo "perftest=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
	echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	echo "reps=$reps"
	echo "quick=$quick"
	echo "only=${BENCH_ONLY:-}"
} >"$out/meta.env"

trace_iters=1000 count_messages=(100 500)
if [ "$quick" = 1 ]; then
	lat_sizes=(2 4096) lat_iters=(200 200) bw_sizes=(65536) bw_iters=(200) cpu_sizes=(4096 65536)
	count_lat_sizes=(2) count_bw_sizes=() count_passes=${BENCH_COUNT_PASSES:-2}
else
	# Messages per timed run, fewer for the large sizes: a ratio's spread comes from run to run,
	# not from the messages within one, and a run of 1000 round trips at 64 KiB, or of 100 MiB,
	# takes about 10 s here.  That keeps the whole bench within half an hour.
	lat_sizes=(2 4096 65536) lat_iters=(1000 1000 200) bw_sizes=(65536 1048576) bw_iters=(300 30)
	cpu_sizes=(4096 65536 1048576 4194304)
	# A counted case takes minutes, valgrind starting under emulation: the bandwidth cases are
	# counted at 64 KiB only.  Beyond the data check, a message's count does not grow with its size.
	count_lat_sizes=("${lat_sizes[@]}") count_bw_sizes=(65536) count_passes=${BENCH_COUNT_PASSES:-1}
fi
echo "bench: $dev, GID index $gid, $reps repetition(s) of each case"
kv_qps=(1 4)
[ "$quick" = 1 ] && kv_qps=(2)
if [ "${BENCH_ONLY:-}" = kv ]; then
	for ((rep = 1; rep <= reps; rep++)); do
		for qps in "${kv_qps[@]}"; do measure_kv pull "$qps" "$rep"; measure_kv push "$qps" "$rep"; done
	done
	measure_ucx
	touch "$out/syscalls.tsv" "$out/cpu.tsv" "$out/counts.tsv"
	echo "bench: step 08 and UCX measured (BENCH_ONLY=kv)"
	exit 0
fi
for ((rep = 1; rep <= reps; rep++)); do
	for qps in "${kv_qps[@]}"; do measure_kv pull "$qps" "$rep"; measure_kv push "$qps" "$rep"; done
	for i in "${!lat_sizes[@]}"; do
		measure_case latency "send_lat ${lat_sizes[i]}" send "${lat_sizes[i]}" "${lat_iters[i]}" ib_send_lat "$rep"
	done
	measure_case latency "write_lat 2" write 2 "${lat_iters[0]}" ib_write_lat "$rep"
	measure_case latency "read_lat 2" read 2 "${lat_iters[0]}" ib_read_lat "$rep"
	for i in "${!bw_sizes[@]}"; do
		measure_case bandwidth "write_bw ${bw_sizes[i]}" write "${bw_sizes[i]}" "${bw_iters[i]}" ib_write_bw "$rep"
		measure_case bandwidth "send_bw ${bw_sizes[i]}" send "${bw_sizes[i]}" "${bw_iters[i]}" ib_send_bw "$rep"
	done
	echo "bench: repetition $rep of $reps done"
done
count_syscalls busy "$trace_iters"
count_syscalls events "$trace_iters"
count_syscalls ib_send_lat "$trace_iters"
echo "bench: system calls counted"
measure_ucx
for ((pass = 1; pass <= count_passes; pass++)); do
	for size in "${count_lat_sizes[@]}"; do
		count_case latency "send_lat $size" send "$size" ib_send_lat "$pass"
	done
	if [ "$quick" = 0 ]; then
		count_case latency "write_lat 2" write 2 ib_write_lat "$pass"
		count_case latency "read_lat 2" read 2 ib_read_lat "$pass"
	fi
	for size in "${count_bw_sizes[@]}"; do
		count_case bandwidth "write_bw $size" write "$size" ib_write_bw "$pass"
		count_case bandwidth "send_bw $size" send "$size" ib_send_bw "$pass"
	done
done
finish_counts
echo "bench: instructions counted, $count_passes pass(es), ${#counted_tags[@]} counted pairs, $count_jobs at a time"
for size in "${cpu_sizes[@]}"; do
	cpu_case "$size"
done
echo "bench: 06_gdr's tcp and rdma paths measured"
