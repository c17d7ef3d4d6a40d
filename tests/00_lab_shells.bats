#!/usr/bin/env bats
# 00_lab_shells.bats: a second 'make shell' finds the VM of the first, takes another hostname, and says that the two never meet; the banner names tmux's zoom and scrollback, and whether addresses are randomised.
# Needs no RDMA device and boots nothing: stand-in processes carry the name that
# boot.sh gives the QEMU of a lab VM, under a tag of the test's own, so that a
# real 'make shell' running on this machine does not count.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	# shellcheck source=tests/vm/shells.bash
	. "$PROJECT_ROOT/tests/vm/shells.bash"
	SHELL_VM_TAG=rdma-steps-test-$$-$BATS_TEST_NUMBER
	stand_ins=()
}

teardown() {
	[ ${#stand_ins[@]} -eq 0 ] || kill "${stand_ins[@]}" 2>/dev/null
	true
}

# Starts a process whose command line, as ps shows it, is PROGRAM's with -name TAG:NAME among its options.
stand_in() { # NAME [PROGRAM]
	(exec -a "${2:-qemu-system-x86_64} -nodefaults -name $SHELL_VM_TAG:$1 -m 1024" sleep 60) &
	stand_ins+=($!)
}

@test "shells.bash: with no lab VM running, none is listed and the VM is rdma-vm" {
	run running_shell_vms
	assert_success
	assert_output ''
	run free_shell_hostname ''
	assert_output rdma-vm
}

@test "shells.bash: a second make shell lists the first one's VM by name and pid, takes rdma-vm2, and says that the two never meet" {
	stand_in rdma-vm
	pid=${stand_ins[0]}
	# A process that only names the tag, such as a grep for it, is no VM.
	stand_in rdma-vm5 grep
	for _ in $(seq 1 20); do [ -n "$(running_shell_vms)" ] && break; sleep 0.1; done
	running=$(running_shell_vms)
	[ "$running" = "rdma-vm $pid" ] || fail "listed '$running', not 'rdma-vm $pid'"
	run free_shell_hostname "$running"
	assert_output rdma-vm2
	run other_shells_note "$running" "another VM, rdma-vm2"
	assert_line "shell: another 'make shell' is running already: rdma-vm (QEMU pid $pid)."
	assert_line --regexp "^shell: This one boots another VM, rdma-vm2\.  Each VM is a machine of its own, with its own$"
	assert_output --partial 'A server in one
shell: VM and a client in another never meet'
	# The first free name: rdma-vm2 between rdma-vm and rdma-vm3, then rdma-vm4.
	run free_shell_hostname "$(printf 'rdma-vm 1\nrdma-vm3 2')"
	assert_output rdma-vm2
	run free_shell_hostname "$(printf 'rdma-vm 1\nrdma-vm2 2\nrdma-vm3 3')"
	assert_output rdma-vm4
	run list_shell_vms "$(printf 'node1 7\nnode2 8')"
	assert_output 'node1 (QEMU pid 7), node2 (QEMU pid 8)'
}

@test "banner.sh: tmux's zoom and scrollback, whether addresses are randomised here, and another make shell's VM, named" {
	run env RDMA_VM_OTHER_SHELLS='rdma-vm (QEMU pid 12)' TMPDIR=/run/tmp HOME=/run/tmp/home "$PROJECT_ROOT/tests/vm/banner.sh"
	assert_success
	assert_line "ANOTHER 'make shell' RUNS BESIDE THIS ONE: rdma-vm (QEMU pid 12)."
	assert_line "server there and a client here never meet.  Run both sides of a step here."
	assert_output --regexp "Ctrl-b z zooms a pane to the whole window and
back; Ctrl-b \[ scrolls back through its output"
	# The line follows this machine's own setting, read as the VM's banner reads it.
	if [ "$(cat /proc/sys/kernel/randomize_va_space)" = 0 ]; then
		assert_line --regexp '^Address randomisation is off in this VM: '
	else
		assert_line --regexp '^Address randomisation is on, as on any host: each run prints new buffer$'
	fi
	run env TMPDIR=/run/tmp HOME=/run/tmp/home "$PROJECT_ROOT/tests/vm/banner.sh"
	refute_output --partial 'ANOTHER'
}
