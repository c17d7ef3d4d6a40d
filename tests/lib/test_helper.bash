# test_helper.bash: shared set-up and helpers for the bats suite; load it from every tests/*.bats.
#
# The suite runs where an RDMA device exists (in the test VM: rxe0).  RDMA_DEV
# names the device; RDMA_STEPS_BIN the folder of the programs under test.

# bats-support, then bats-assert, sourced file by file: their load.bash files run one
# $(dirname) per file, and in the VM, where a fork and exec cost about 80 ms, those 15
# processes took over a second of every test.
load_bats_library() {
	local dir f
	for dir in ${BATS_LIB_PATH//:/ }; do
		[ -d "$dir/$1/src" ] || continue
		for f in "$dir/$1"/src/*.bash; do
			# shellcheck source=/dev/null
			source "$f"
		done
		return 0
	done
	echo "test_helper: no $1 in BATS_LIB_PATH ($BATS_LIB_PATH): install the Debian package $1" >&2
	return 1
}
load_bats_library bats-support
load_bats_library bats-assert

# bats runs its DEBUG trap, about fifteen commands of its own, before every
# command of a test, and with set -T (errtrace's companion, functrace) before
# every command inside the functions a test calls too.  assert_line loops over
# every line of a program's output, so in the VM one assert_line on 100 lines
# took 340 ms, 60 ms without the trap, and the trap was half of the suite's time.
# Without functrace the trap stays out of functions, and a failure is still
# reported with the test file's line and the command that failed.
set +T

PROJECT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NAP_DIR=$BATS_TEST_TMPDIR
# shellcheck source=tests/lib/nap.bash
. "$PROJECT_ROOT/tests/lib/nap.bash"
# shellcheck source=tests/lib/gid.bash
. "$PROJECT_ROOT/tests/lib/gid.bash"
# shellcheck source=tests/lib/listen.bash
. "$PROJECT_ROOT/tests/lib/listen.bash"
# shellcheck source=tests/lib/paused.bash
. "$PROJECT_ROOT/tests/lib/paused.bash"
BIN=${RDMA_STEPS_BIN:-$PROJECT_ROOT/build/bin}
DEV=${RDMA_DEV:?RDMA_DEV must name the RDMA device under test; run the suite with make test}
# Every time bound of the suite, times TIME_SCALE (a whole number, 1 by default), so that
# a slower machine raises them all at once: TIME_SCALE=3 make test.  It multiplies the -t N
# a test gives a step (scale_step_args), STEP_TIMEOUT, wait_for_line's bound and the
# bounds the tests assert on, written $((N * TIME_SCALE)) where a test states one.
TIME_SCALE=${TIME_SCALE:-1}
[[ $TIME_SCALE =~ ^[1-9][0-9]?$ ]] || {
	echo "TIME_SCALE must be a whole number from 1 to 99, not '$TIME_SCALE'" >&2
	return 1
}
# A program that has not finished after this many seconds is killed: a hang is a failure.
STEP_TIMEOUT=${STEP_TIMEOUT:-$((30 * TIME_SCALE))}

# The command a failed test stopped in, with its status, on the test's output.  bats names
# the test file's line, and with functrace off (above) that is the line that called the
# helper, not the command inside it that failed.  A file with a teardown of its own calls it.
say_where_it_stopped() {
	[ -n "${BATS_TEST_COMPLETED:-}" ] || echo "the test stopped in: $BASH_COMMAND (status ${BATS_ERROR_STATUS:-unknown})"
}

teardown() {
	say_where_it_stopped
}

# Sets STEP_ARGS to ARGS..., a step's options, with the seconds after each -t times TIME_SCALE.
scale_step_args() {
	STEP_ARGS=()
	while [ $# -gt 0 ]; do
		if [ "$1" = -t ] && [ $# -gt 1 ] && [[ $2 =~ ^[0-9]+$ ]]; then
			STEP_ARGS+=(-t $(($2 * TIME_SCALE)))
			shift 2
		else
			STEP_ARGS+=("$1")
			shift
		fi
	done
}

# The program for STEP: $BIN/STEP, or STEP itself when it is a path.
step_program() {
	case $1 in
	*/*) echo "$1" ;;
	*) echo "$BIN/$1" ;;
	esac
}

# The words of STEP_PREFIX into the array PREFIX, none when it is unset: the commands that
# run_step, start_step and run_two_sides put before a program, for a run under a process limit
# of its own (STEP_PREFIX="prlimit --memlock=N:N run_server_client ...").
step_prefix() {
	PREFIX=()
	[ -z "${STEP_PREFIX:-}" ] || read -ra PREFIX <<<"$STEP_PREFIX"
}

# The STEP_PREFIX of a process as an ordinary user's: no CAP_IPC_LOCK, and BYTES that it may
# pin (RLIMIT_MEMLOCK): STEP_PREFIX=$(memlock_prefix BYTES) run_step STEP ARGS...
memlock_prefix() { # BYTES
	echo "setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock prlimit --memlock=$1:$1"
}

# Runs build/bin/STEP ARGS... under the step timeout (after STEP_PREFIX's commands), as bats' run does.
run_step() {
	local step=$1
	shift
	scale_step_args "$@"
	step_prefix
	run timeout -k 2 "$STEP_TIMEOUT" "${PREFIX[@]}" "$BIN/$step" "${STEP_ARGS[@]}"
}

# The kernel's counts of pd, cq, qp, mr and rdma_cm ids on DEV, as "pd=N cq=N qp=N mr=N cm_id=N"
# (one rdma, one awk), or what went wrong and status 1.
rdma_counts() {
	local shown
	shown=$(rdma resource show 2>&1) || { echo "'rdma resource show' failed: $shown"; return 1; }
	awk -v dev="$DEV:" '
		$2 == dev { for (i = 3; i < NF; i++) n[$i] = $(i + 1) }
		END { printf "pd=%s cq=%s qp=%s mr=%s cm_id=%s\n", n["pd"], n["cq"], n["qp"], n["mr"], n["cm_id"] }' <<<"$shown"
}

# Sets the variable NAME to rdma_counts, or fails the test with what went wrong.
read_rdma_counts() { # NAME
	local counts
	counts=$(rdma_counts) || fail "the kernel's counts could not be read: ${counts:-nothing said}"
	printf -v "$1" '%s' "$counts"
}

# The IPv4 address of DEV's interface, for rdma_cm (127.0.0.1 is lo's, and no RDMA device is on lo):
# the VM exports it; elsewhere it is read from the IPv4-mapped GID.
rdma_cm_addr() {
	local gid
	if [ -n "${RDMA_STEPS_ADDR:-}" ]; then
		echo "$RDMA_STEPS_ADDR"
		return
	fi
	gid=$(cat "/sys/class/infiniband/$DEV/ports/1/gids/$(sysfs_ipv4_mapped_gid_index "$DEV")")
	gid=$(gid_to_ipv6 "$gid")
	echo "${gid#::ffff:}"
}

# Starts STEP ARGS... through rdma_cm as the server (srv) and waits until it listens.
start_cm_server() {
	local step=$1
	shift
	start_step srv "$step" -p "$CM_PORT" -t 10 --cm "$@"
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
}

# Runs STEP ARGS... through rdma_cm as the client of the server on this host's RDMA address.
run_cm_client() {
	local step=$1
	shift
	scale_step_args -p "$CM_PORT" -t 10 --cm "$@" "$CM_ADDR"
	run timeout -k 2 "$STEP_TIMEOUT" "$BIN/$step" "${STEP_ARGS[@]}"
}

# Records the kernel's counts of pd, cq, qp and mr, to compare after a run.
record_baseline() {
	read_rdma_counts BASELINE
}

# Fails unless the kernel's counts are back to what record_baseline saw.
assert_back_to_baseline() {
	local now
	read_rdma_counts now
	[ "$now" = "$BASELINE" ] || fail "verbs objects leaked: before the run $BASELINE, after it $now"
}

# The device's counts of RNR NAKs sent and received, from its hardware counters in sysfs:
# rxe's names.  A hardware NIC has other counters (mlx5's rnr_nak_retry_err counts only the
# NAKs that used up rnr_retry, book/real-nic.md), so a test reads these only if on_rxe.
rnr_naks() {
	local dir=/sys/class/infiniband/$DEV/ports/1/hw_counters
	[ -r "$dir/send_rnr_err" ] && [ -r "$dir/rcvd_rnr_err" ] || fail "$DEV has no RNR counters in $dir"
	echo "$(cat "$dir/send_rnr_err") $(cat "$dir/rcvd_rnr_err")"
}

# The indexes of the GIDs in use on port 1, as "0, 1", from sysfs.
sysfs_gid_indexes_in_use() {
	sysfs_gids_in_use "$DEV" | cut -d' ' -f1 | paste -sd, | sed 's/,/, /g'
}

# A GID as sysfs prints it (8 groups of 4 hex digits) in the IPv6 notation the programs print.
gid_to_ipv6() {
	local g=$1 a b c d
	case $g in
	0000:0000:0000:0000:0000:ffff:*)
		a=$((16#${g:30:2})) b=$((16#${g:32:2})) c=$((16#${g:35:2})) d=$((16#${g:37:2}))
		echo "::ffff:$a.$b.$c.$d" ;;
	*) echo "$g" ;;
	esac
}

# Starts STEP ARGS... in the background under the step timeout, its output in
# $BATS_TEST_TMPDIR/NAME.out; the background job's pid goes in NAME_pid.
start_step() {
	local name=$1 step=$2 out=$BATS_TEST_TMPDIR/$1.out
	shift 2
	# Emptied before the job starts, not by its own redirection, which may come later:
	# a wait_for_line right after must not find the lines of the last run that used NAME.
	: >"$out"
	scale_step_args "$@"
	step_prefix
	timeout -k 2 "$STEP_TIMEOUT" "${PREFIX[@]}" "$(step_program "$step")" "${STEP_ARGS[@]}" >"$out" 2>&1 &
	printf -v "${name}_pid" '%s' "$!"
}

# Whether FILE has a line matching the extended regex REGEX (bash alone: in the VM
# a fork and exec cost about 80 ms, so the helpers below run none where they can).
file_has_line() {
	local line
	[ -r "$1" ] || return 1
	while IFS= read -r line || [ -n "$line" ]; do
		[[ $line =~ $2 ]] && return 0
	done <"$1"
	return 1
}

# Waits up to SECONDS (default 20, by the clock) times TIME_SCALE for a line matching REGEX in FILE.
# A program that has failed (an "error:" line) or finished (its teardown line)
# prints nothing more, so the wait ends there, at once.
wait_for_line() {
	local file=$1 regex=$2 bound=$((${3:-20} * TIME_SCALE))
	local deadline=$((SECONDS + bound))
	until file_has_line "$file" "$regex"; do
		! file_has_line "$file" '^(error: |teardown +: )' ||
			fail "the program stopped before a line matching '$regex' in $file; it holds: $(cat "$file")"
		[ "$SECONDS" -lt "$deadline" ] || fail "no line matching '$regex' in $file after $bound s; it holds: $(cat "$file")"
		nap 0.05
	done
}

# Waits for the background job PID and sets "status" and "output" from NAME's log, as run does.
finish_step() {
	local name=$1 pid=$2
	status=0
	wait "$pid" || status=$?
	use_output_of "$name"
}

# Whether the verbs.h the programs were built against has FLUSH (rdma-core 45 and later), read
# from the header itself, as the Makefile's compile test decides whether step 04 builds -o flush.
verbs_has_flush() {
	grep -qw IBV_WR_FLUSH /usr/include/infiniband/verbs.h
}

# The sysfs the rxe gate below reads: /sys, or a made-up tree (tests/00_rxe_gate.bats).
SYSFS=${RDMA_STEPS_SYSFS:-/sys}

# Whether DEV is soft-RoCE (rdma_rxe), from sysfs, with no process started.  rxe registers
# its device with no parent (Linux's rxe_register_device() passes none), so it sits under
# /sys/devices/virtual and has no "device" link, and it adds an attribute of its own,
# "parent", the netdev under it; its node type is a CA (1).  A hardware NIC's device links
# to the function it drives ("device", whose "driver" names mlx5_core for a ConnectX).
on_rxe() {
	local dir=$SYSFS/class/infiniband/$DEV node_type=
	[ ! -e "$dir/device" ] && [ -r "$dir/parent" ] || return 1
	read -r node_type _ <"$dir/node_type" || return 1
	[ "$node_type" = 1: ]
}

# DEV and its driver, in words, for a skip: "mlx5_0 (driver mlx5_core)".
rdma_dev_driver() {
	local dir=$SYSFS/class/infiniband/$DEV driver
	if [ -e "$dir/device/driver" ]; then
		driver=$(readlink -f "$dir/device/driver")
		echo "$DEV (driver ${driver##*/})"
	elif on_rxe; then
		echo "$DEV (rxe, soft-RoCE)"
	else
		echo "$DEV (no driver in sysfs: a software device that is not rxe)"
	fi
}

# Gates a test whose subject is what rxe does, where the verbs and the IBTA spec leave a
# device free to do otherwise (a counter's name, a limit's figure, a vendor error, how
# long a teardown takes): on rxe it does nothing; on any other device it skips the test,
# naming the device, its driver and WHY, "what rxe does, and what a hardware NIC does
# instead".  Where one assertion of a test is rxe's and the rest hold on every device,
# gate that assertion alone: if on_rxe; then ...; fi, with a comment that says why.
rxe_behaviour() { # WHY
	on_rxe || skip "rxe's behaviour, not the verbs': $(rdma_dev_driver) is not rxe: $1"
}

# The path MTU of a connection from DEV to itself: on rxe 1024, exactly (the VM's eth0 has
# an MTU of 1500, and the largest IB MTU within it is 1024); on another device its port's
# active MTU, which follows its netdev's MTU (4096 on a jumbo-frame fabric).
loopback_mtu() {
	if on_rxe; then
		echo 1024
		return
	fi
	ibv_devinfo -d "$DEV" -i 1 | awk '$1 == "active_mtu:" { print $2 }'
}

# Whether the kernel that runs the tests (the guest's, in the VM: RDMA_VM_KERNEL) is
# MAJOR.MINOR or later.  For the few answers rxe changed between the kernels the VM
# boots (CONTRIBUTING.md, "The guest kernel"): each such test asserts each kernel's
# answer exactly, gated by this, never a looser check that takes both.
kernel_at_least() { # MAJOR MINOR
	local major minor
	IFS=. read -r major minor _ < <(uname -r)
	minor=${minor%%[!0-9]*}
	[ "$major" -gt "$1" ] || { [ "$major" -eq "$1" ] && [ "$minor" -ge "$2" ]; }
}

# The WRs a queue holds when stage 3 asks rxe for N: 6.1's rxe writes back N; from Linux 6.6
# (e0ba8ff46704 "RDMA/rxe: Move work queue code to subroutines": rxe_init_sq and rxe_init_rq
# return the queue rxe_queue_init made) it writes back what it made, the next power of two
# above N, less one (16 gives 31), as mlx5 rounds up too.
queue_made() { # N
	local made=1
	kernel_at_least 6 6 || { echo "$1"; return; }
	while [ "$made" -le "$1" ]; do made=$((made * 2)); done
	echo $((made - 1))
}

# Fails unless lines matching the regexes appear in OUTPUT in the order given (each after the last).
assert_in_order() {
	local -a text
	local prev=0 i regex
	mapfile -t text <<<"$output"
	for regex in "$@"; do
		for ((i = prev; i < ${#text[@]}; i++)); do
			[[ ${text[i]} =~ $regex ]] && break
		done
		[ "$i" -lt "${#text[@]}" ] || fail "no line matching '$regex' after line $prev"
		prev=$((i + 1))
	done
}

# A TCP port for one test's side channel, unlikely to collide with the last test's, and
# below Linux's ephemeral ports (32768 up: ip_local_port_range), where a live connection's
# own end may hold it (valgrind.bats once drew 38550, and its server said "cannot listen
# on TCP port 38550: Address already in use").
pick_port() {
	echo $((20000 + RANDOM % 12000))
}

# Starts step 05 as server (srv) and client (cli) for a million round trips on a fresh
# port, ARGS... given to both: a run to stop in the middle.
start_long_run() {
	local port
	port=$(pick_port)
	start_step srv 05_poll_destroy -d "$DEV" -p "$port" -t 5 -n 1000000 "$@"
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	start_step cli 05_poll_destroy -d "$DEV" -p "$port" -t 5 -n 1000000 "$@" 127.0.0.1
}

# The hex value after "KEY" in a "who thing : ... KEY 0x..." line of FILE, e.g. field_of f '^local QP' QPN.
field_of() {
	local line regex="$2.* $3 (0x[0-9a-f]+)"
	while IFS= read -r line; do
		[[ $line =~ $regex ]] && { echo "${BASH_REMATCH[1]}"; return; }
	done <"$1"
}

# Runs STEP ARGS... as a server in the background and as a client against
# 127.0.0.1, on a fresh port.  Their outputs go to $BATS_TEST_TMPDIR/srv.out
# and cli.out; their exit statuses to srv_status and cli_status.
run_server_client() {
	local step=$1
	shift
	run_two_sides "$step" "$*" "$*"
}

# As run_server_client, with the server's options in the words of SERVER_ARGS
# and the client's in CLIENT_ARGS (no quoting inside them).
run_two_sides() {
	local step=$1 port
	local -a srv_args cli_args
	read -ra srv_args <<<"$2"
	read -ra cli_args <<<"$3"
	port=$(pick_port)
	start_step srv "$step" -d "$DEV" -p "$port" -t 20 "${srv_args[@]}"
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	cli_status=0
	scale_step_args -d "$DEV" -p "$port" -t 20 "${cli_args[@]}" 127.0.0.1
	step_prefix
	timeout -k 2 "$STEP_TIMEOUT" "${PREFIX[@]}" "$(step_program "$step")" "${STEP_ARGS[@]}" \
		>"$BATS_TEST_TMPDIR/cli.out" 2>&1 || cli_status=$?
	srv_status=0
	wait "$srv_pid" || srv_status=$?
}

# Fails unless both sides of the last run_two_sides (or a run like it) exited 0,
# naming WHAT and both statuses, then DETAILS (default: both sides' output).
assert_both_succeeded() { # [WHAT [DETAILS]]
	[ "$srv_status" -eq 0 ] && [ "$cli_status" -eq 0 ] ||
		fail "${1:+$1: }server $srv_status, client $cli_status: ${2-$(cat "$BATS_TEST_TMPDIR"/*.out)}"
}

# Runs STEP with SERVER_ARGS and CLIENT_ARGS (as run_two_sides) and checks that
# both sides stop before any data moves, each naming both sets of options.
assert_options_refused() {
	local step=$1 srv_opts=$3 cli_opts=$5
	run_two_sides "$step" "$2" "$4"
	[ "$srv_status" -eq 1 ] && [ "$cli_status" -eq 1 ] || fail "server $srv_status, client $cli_status (both should be 1): $(cat "$BATS_TEST_TMPDIR"/*.out)"
	use_output_of srv
	assert_output --partial "error: peer: $cli_opts; here: $srv_opts: give both sides the same options"
	refute_output --partial 'ibv_post_'
	use_output_of cli
	assert_output --partial "error: peer: $srv_opts; here: $cli_opts: give both sides the same options"
	refute_output --partial 'ibv_post_'
}

# Loads NAME's log (srv or cli) into output and lines, for assert_line and friends.
use_output_of() {
	output=""
	IFS= read -r -d '' output <"$BATS_TEST_TMPDIR/$1.out" || true # read ends at EOF, not at a NUL
	# As $(cat FILE) would: without the trailing newlines.
	output=${output%"${output##*[!$'\n']}"}
	lines=()
	mapfile -t lines <<<"$output"
}

# Stops background job PID (a timeout wrapping a program) if it still runs; it may have ended already.
stop_background() {
	local ignored=0
	pkill -P "$1" 2>/dev/null || ignored=$?
	wait "$1" 2>/dev/null || ignored=$?
}
