#!/usr/bin/env bash
# bench.sh: runs step 05 beside perftest, counts system calls and compares 06_gdr's tcp and rdma paths, over one RDMA device.
#
# Runs where the device is (in the test VM, or natively), from 'make bench'.
# It writes raw figures to $RDMA_STEPS_RESULTS, one per line, for report.sh:
#   raw.tsv       CASE TOOL REP VALUE   (latency in us, bandwidth in 10^6 B/s)
#   syscalls.tsv  MODE PHASE SYSCALL CALLS MESSAGES   (PHASE: set-up, loop or teardown; MESSAGES: the loop's)
#   cpu.tsv       SIZE PATH SIDE WALL_US USER_US SYSTEM_US COPIES
#   meta.env      the kernel, device, provider and perftest version
# BENCH_REPS (default 15) repeats each case, step 05 and perftest back to back in each
# repetition; BENCH_QUICK=1 runs small sizes, to check the machinery ('make test-bench' does).
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

# shellcheck source=tests/gid.bash
. tests/gid.bash
# shellcheck source=tests/listen.bash
. tests/listen.bash

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

rm -f "$out/raw.tsv" "$out/syscalls.tsv" "$out/cpu.tsv"
{
	echo "kernel=$(uname -r)"
	echo "device=$dev"
	echo "provider=$(provider)"
	echo "node_type=$(cat "/sys/class/infiniband/$dev/node_type" 2>/dev/null)"
	echo "perftest=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
	echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	echo "reps=$reps"
	echo "quick=$quick"
} >"$out/meta.env"

trace_iters=1000
if [ "$quick" = 1 ]; then
	lat_sizes=(2 4096) bw_sizes=(65536) lat_iters=200 bw_iters=(200) cpu_sizes=(4096 65536)
else
	lat_sizes=(2 4096 65536) bw_sizes=(65536 1048576) lat_iters=1000 bw_iters=(1000 100)
	cpu_sizes=(4096 65536 1048576 4194304)
fi
echo "bench: $dev, GID index $gid, $reps repetition(s) of each case"
for ((rep = 1; rep <= reps; rep++)); do
	for size in "${lat_sizes[@]}"; do
		measure_case latency "send_lat $size" send "$size" "$lat_iters" ib_send_lat "$rep"
	done
	measure_case latency "write_lat 2" write 2 "$lat_iters" ib_write_lat "$rep"
	measure_case latency "read_lat 2" read 2 "$lat_iters" ib_read_lat "$rep"
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
for size in "${cpu_sizes[@]}"; do
	cpu_case "$size"
done
echo "bench: 06_gdr's tcp and rdma paths measured"
