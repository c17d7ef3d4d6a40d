#!/usr/bin/env bats
# 02_reg_mr.bats: step 02 registers memory: the kernel lists the MR, its pages are pinned, failures are explained.

setup() {
	load lib/test_helper
}

teardown() {
	say_where_it_stopped
	rm -rf "${NOBODY_DIR:-}"
}

# Copies step 02 into a fresh folder that the user nobody can enter, and sets NOBODY_BIN
# to it: the checkout may sit under a folder only root may cross (/root is 0700), and
# then nobody cannot reach $BIN/02_reg_mr ("prlimit: failed to execute ...: Permission denied").
# The folder goes in the first writable place nobody can reach: in the VM, /tmp is the
# host's, read-only, when the checkout itself lives under /tmp; TMPDIR is a tmpfs there.
copy_step_for_nobody() {
	local base
	for base in ${TMPDIR:+"$TMPDIR"} /tmp /dev/shm /run; do
		[ -d "$base" ] && [ -w "$base" ] || continue
		NOBODY_DIR=$(mktemp -d "$base/02_reg_mr.nobody.XXXXXX" 2>/dev/null) || continue
		chmod 0755 "$NOBODY_DIR" && install -m 0755 "$BIN/02_reg_mr" "$NOBODY_DIR/" ||
			fail "cannot copy $BIN/02_reg_mr into $NOBODY_DIR"
		NOBODY_BIN=$NOBODY_DIR/02_reg_mr
		setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$NOBODY_BIN" && return 0
		rm -rf "$NOBODY_DIR"
	done
	fail "no writable folder (TMPDIR, /tmp, /dev/shm, /run) that the user nobody can reach, for a copy of step 02"
}

# Starts step 02 registering SIZE with ACCESS and pausing; sets log, pid and rkey, and checks
# the kernel's own view while the program holds the MR: its rkey, LENGTH bytes, its pid.
paused_mr() { # SIZE ACCESS LENGTH
	start_step reg 02_reg_mr -d "$DEV" -s "$1" -a "$2" --pause
	log=$BATS_TEST_TMPDIR/reg.out
	wait_for_line "$log" '^paused +: pid [0-9]+'
	pid=$(paused_pid "$log")
	rkey=$(sed -nE 's/^rkey +: (0x[0-9a-f]+) .*/\1/p' "$log")
	[ -n "$rkey" ] || fail "no rkey printed: $(cat "$log")"
	run rdma resource show mr
	assert_line --regexp "dev $DEV .*rkey $rkey .*mrlen $3 .*pid $pid "
}

@test "02_reg_mr: the kernel lists the MR with the printed rkey, and VmPin grows by the registered size" {
	record_baseline
	paused_mr 1M local_write,remote_read 1048576
	pinned_kb=$(awk '$1 == "VmPin:" { print $2 }' "/proc/$pid/status")
	[ "$pinned_kb" -ge 1024 ] || fail "VmPin of pid $pid is $pinned_kb kB while 1 MiB is registered"
	kill -USR1 "$pid"
	finish_step reg "$reg_pid"
	assert_success
	assert_line --regexp '^ibv_reg_mr +: memory region registered: .* length 1048576, access local_write,remote_read$'
	assert_line --regexp '^VmPin +: [0-9]+ kB before, [0-9]+ kB after: 1024 kB pinned$'
	assert_line --regexp '^resumed +: by SIGUSR1$'
	assert_in_order '^ibv_alloc_pd ' '^ibv_reg_mr ' '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_close_device '
	assert_back_to_baseline
}

@test "02_reg_mr: relaxed_ordering, an optional flag no verb reports on, registers on rxe: the access lines show it and the kernel lists the MR" {
	record_baseline
	# ibv_reg_mr took the flag (the optional range goes through ibv_reg_mr_iova2): the kernel holds the MR.
	paused_mr 64K local_write,remote_write,relaxed_ordering 65536
	kill -USR1 "$pid"
	finish_step reg "$reg_pid"
	assert_success
	assert_line --regexp '^access +: local_write,remote_write,relaxed_ordering: as -a asked$'
	assert_line --regexp '^ibv_reg_mr +: memory region registered: .* length 65536, access local_write,remote_write,relaxed_ordering$'
	assert_line --regexp '^VmPin +: [0-9]+ kB before, [0-9]+ kB after: 64 kB pinned$'
	assert_back_to_baseline
}

@test "02_reg_mr: Ctrl-C at the --pause prompt stops the program as it does anywhere else: the stop named, the MR and PD released, status 1" {
	record_baseline
	start_step reg 02_reg_mr -d "$DEV" -s 64K --pause
	log=$BATS_TEST_TMPDIR/reg.out
	wait_for_line "$log" '^paused +: pid [0-9]+'
	kill -INT "$(paused_pid "$log")"
	finish_step reg "$reg_pid"
	assert_failure 1
	assert_line 'error: stopped by SIGINT (Ctrl-C): releasing what this program created, in reverse order'
	refute_line --regexp '^resumed '
	# A failure's release lines come without the teardown heading, as after any other error.
	refute_line --partial '== teardown'
	assert_in_order '^paused ' '^error: stopped by SIGINT' '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_close_device '
	assert_back_to_baseline
}

@test "02_reg_mr: over the memlock limit, registration fails with a message saying how to raise it" {
	record_baseline
	# As root the limit does not apply (CAP_IPC_LOCK): run as nobody with 64 KiB.
	copy_step_for_nobody
	run timeout "$STEP_TIMEOUT" setpriv --reuid=65534 --regid=65534 --clear-groups \
		prlimit --memlock=65536:65536 "$NOBODY_BIN" -d "$DEV" -s 1M
	assert_failure 1
	assert_line --regexp '^RLIMIT_MEMLOCK +: 65536 bytes$'
	assert_output --partial "error: ibv_reg_mr failed"
	assert_output --partial "error: registering 1048576 bytes pins them, but RLIMIT_MEMLOCK allows 65536: raise it with 'ulimit -l unlimited'"
	assert_in_order '^ibv_alloc_pd ' '^ibv_dealloc_pd ' '^ibv_close_device '
	# Under the limit the same user registers fine.
	run timeout "$STEP_TIMEOUT" setpriv --reuid=65534 --regid=65534 --clear-groups \
		prlimit --memlock=65536:65536 "$NOBODY_BIN" -d "$DEV" -s 16K
	assert_success
	assert_line --regexp '^VmPin +: [0-9]+ kB before, [0-9]+ kB after: 16 kB pinned$'
	assert_back_to_baseline
}

@test "02_reg_mr: bad access flags and sizes are refused with the fix named" {
	record_baseline
	run_step 02_reg_mr -d "$DEV" -a remote_write
	assert_failure 1
	assert_output --partial "error: remote_write and remote_atomic need local_write too: add it to -a"
	run_step 02_reg_mr -d "$DEV" -a local_write,remote_fly
	assert_failure 2
	assert_output "error: --access: unknown flag 'remote_fly'; use a comma-separated list of local_write, remote_write, remote_read, remote_atomic, mw_bind, relaxed_ordering"
	run_step 02_reg_mr -d "$DEV" -s 0
	assert_failure 2
	assert_output --partial "error: --size: '0' is not a size from 1 to"
	# strtoull would take ' -5' as a huge number: a size must start with a digit.
	run_step 02_reg_mr -d "$DEV" -s ' -5'
	assert_failure 2
	assert_output --partial "error: --size: ' -5' is not a size from 1 to"
	run_step 02_reg_mr -d "$DEV" -a ''
	assert_failure 2
	assert_output "error: --access: the list is empty; name at least local_write (an MR always allows local reads), or leave -a out"
	# A long list is read to its end, not cut at a buffer's size.
	run_step 02_reg_mr -d "$DEV" -a "$(printf 'local_write,%.0s' {1..20})remote_fly"
	assert_failure 2
	assert_output "error: --access: unknown flag 'remote_fly'; use a comma-separated list of local_write, remote_write, remote_read, remote_atomic, mw_bind, relaxed_ordering"
	run_step 02_reg_mr -d "$DEV" -a local_write,
	assert_failure 2
	assert_output "error: --access: unknown flag ''; use a comma-separated list of local_write, remote_write, remote_read, remote_atomic, mw_bind, relaxed_ordering"
	assert_back_to_baseline
}

@test "02_reg_mr --fork: after a pinned registration the child touches a copy of its own; under RDMAV_FORK_SAFE its end agrees with what the kernel says of the mapping (dc: no page there)" {
	record_baseline
	# The kernel copies pinned pages into the child at fork (it says so: IBV_FORK_UNNEEDED).
	run_step 02_reg_mr -d "$DEV" -s 64K --fork
	assert_success
	assert_line --regexp '^ibv_is_fork_initialized *: IBV_FORK_UNNEEDED \(the kernel copies pinned pages into a child at fork\); RDMAV_FORK_SAFE unset$'
	assert_line "VmFlags             : the buffer's mapping has no dc: a child gets a copy of its own"
	assert_line --regexp '^child +: read 0xaa from the buffer, wrote 0x55 there, and exits$'
	assert_line --regexp '^fork +: the child exited 0; our byte is still 0xaa: '
	assert_in_order '^VmPin ' '^ibv_is_fork_initialized' '^VmFlags ' '^child ' '^fork ' '^ibv_dereg_mr '
	# Whether libibverbs then marks the range MADV_DONTFORK depends on its release (rdma-core 44
	# does, 56 does not: the chapter's "fork"): the kernel's flag on the mapping says which, and
	# the child's end must agree with it: no page (SIGSEGV at the first touch), or its own copy.
	RDMAV_FORK_SAFE=1 run_step 02_reg_mr -d "$DEV" -s 64K --fork
	assert_success
	assert_line --regexp '^ibv_is_fork_initialized *: IBV_FORK_UNNEEDED .*; RDMAV_FORK_SAFE set: libibverbs may mark each pinned MR MADV_DONTFORK$'
	if [[ $output == *"VmFlags             : the buffer's mapping has dc (VM_DONTCOPY, set by MADV_DONTFORK): a child gets no page there"* ]]; then
		refute_line --regexp '^child '
		assert_line --regexp '^fork +: the child was killed by Segmentation fault when it touched the buffer: the range was MADV_DONTFORK, so the child has no page there at all; our byte is still 0xaa$'
	else
		assert_line "VmFlags             : the buffer's mapping has no dc: a child gets a copy of its own"
		assert_line --regexp '^child +: read 0xaa from the buffer, wrote 0x55 there, and exits$'
		assert_line --regexp '^fork +: the child exited 0; our byte is still 0xaa: '
	fi
	assert_back_to_baseline
}

@test "02_reg_mr --odp: odp_caps read first; on 7.x an ODP MR pins nothing, passes RLIMIT_MEMLOCK and forks as plain memory; on 6.1 refused naming the kernel that has it" {
	record_baseline
	# rxe's ODP came in Linux 6.15 (d03fb5c6599e "RDMA/rxe: Allow registering MRs for On-Demand Paging").
	if ! kernel_at_least 6 15; then
		run_step 02_reg_mr -d "$DEV" --odp
		assert_failure 1
		assert_line --regexp '^odp_caps +: general_caps 0x0, RC: none$'
		assert_output --partial "error: --odp: $DEV does no on-demand paging (odp_caps.general_caps has no IBV_ODP_SUPPORT), so ibv_reg_mr would refuse IBV_ACCESS_ON_DEMAND with EINVAL; rxe has it in Linux 7.3 but not in 6.1 or 6.12: boot the VM with RDMA_VM_KERNEL=trixie-backports, or drop --odp"
		refute_line --regexp '^ibv_reg_mr '
		assert_in_order '^ibv_alloc_pd ' '^odp_caps ' '^error: --odp' '^ibv_dealloc_pd ' '^ibv_close_device '
		assert_back_to_baseline
		return
	fi
	# As nobody with a memlock limit of 64 KiB (the test above: 1 MiB pinned fails), 1 MiB on demand.
	copy_step_for_nobody
	run timeout "$STEP_TIMEOUT" setpriv --reuid=65534 --regid=65534 --clear-groups \
		prlimit --memlock=65536:65536 "$NOBODY_BIN" -d "$DEV" -s 1M --odp --fork
	assert_success
	assert_line --regexp '^odp_caps +: general_caps 0x1 \(IBV_ODP_SUPPORT\), RC: [a-z_,]*write[a-z_,]*$'
	assert_line --regexp '^buffer +: 1048576 bytes at 0x[0-9a-f]+, aligned to the 4096-byte page, never touched$'
	assert_line --regexp '^access +: local_write,remote_write,remote_read, on_demand: '
	assert_line --regexp '^ibv_reg_mr +: memory region registered: .* length 1048576, '
	assert_line --regexp '^VmPin +: 0 kB before, 0 kB after: 0 kB pinned$'
	# Registration faulted none of the 1024 kB in (a few kB of the library's own may come).
	faulted=$(sed -nE 's/^VmRSS +: [0-9]+ kB before, [0-9]+ kB after: (-?[0-9]+) kB faulted in .*/\1/p' <<<"$output")
	[ -n "$faulted" ] && [ "$faulted" -lt 64 ] || fail "ODP registration faulted in '$faulted' kB of 1024"
	assert_line --regexp "^memlock +: 1048576 bytes registered, over RLIMIT_MEMLOCK's 65536: the limit counts pinned pages, and an ODP MR pins none\$"
	assert_line --regexp '^ibv_advise_mr +: Operation not supported \(errno 95\): this provider has no prefetch \(rxe.s has it from rdma-core 59 on\), so the first access pays the fault$'
	# ODP pages are not pinned, so not MADV_DONTFORK'd either: the child copies on write.
	assert_line --regexp '^child +: read 0xaa from the buffer, wrote 0x55 there, and exits$'
	assert_line --regexp '^fork +: the child exited 0; our byte is still 0xaa: '
	RDMAV_FORK_SAFE=1 run_step 02_reg_mr -d "$DEV" -s 64K --odp --fork
	assert_success
	assert_line "VmFlags             : the buffer's mapping has no dc: a child gets a copy of its own"
	assert_line --regexp '^fork +: the child exited 0; our byte is still 0xaa: '
	assert_back_to_baseline
}
