# shells.bash: the VMs of 'make shell' that this user runs already, and what one more means.
#
# Sourced by tests/tools/run.sh before it boots a 'make shell'; tests/00_shells.bats
# checks it against processes named as boot.sh names a lab VM's QEMU.  Each VM
# is a machine of its own, with its own rxe0 on a network of its own at the same
# address (198.18.0.1, or 198.18.0.K on a wire of its own): a server in one and a
# client in another never meet, and nothing else says which VM a shell is in.

# boot.sh names an interactive VM's QEMU "rdma-steps-shell:HOSTNAME" (QEMU's -name).
SHELL_VM_TAG=rdma-steps-shell

# Prints "HOSTNAME PID" for each VM of a 'make shell' this user runs, from any clone.
running_shell_vms() {
	ps -u "$(id -u)" -o pid=,args= |
		sed -n "s/^ *\([0-9][0-9]*\) [^ ]*qemu-system-x86_64 .*-name $SHELL_VM_TAG:\([^ ]*\).*/\2 \1/p"
}

# The first of rdma-vm, rdma-vm2, rdma-vm3, ... that no VM in RUNNING (running_shell_vms' lines) is named.
free_shell_hostname() { # RUNNING
	local name k
	for ((k = 1; ; k++)); do
		name=rdma-vm
		[ "$k" = 1 ] || name=rdma-vm$k
		cut -d' ' -f1 <<<"$1" | grep -qx "$name" || break
	done
	echo "$name"
}

# RUNNING's VMs as "rdma-vm (QEMU pid 123), node1 (QEMU pid 456)".
list_shell_vms() { # RUNNING
	awk 'NF == 2 { printf "%s%s (QEMU pid %s)", n++ ? ", " : "", $1, $2 } END { if (n) print "" }' <<<"$1"
}

# What booting THESE (the new VMs' names, "rdma-vm2" or "node1 and node2") beside RUNNING means, for the host's terminal.
other_shells_note() { # RUNNING THESE
	local vms
	vms=$(list_shell_vms "$1")
	cat <<TEXT
shell: another 'make shell' is running already: $vms.
shell: This one boots $2.  Each VM is a machine of its own, with its own
shell: rxe0 on a network of its own, at the same address as the others'.  A server in one
shell: VM and a client in another never meet: the client's connection is refused, though
shell: the server runs.  Run both sides of a step in one VM, in panes of its tmux; 'exit'
shell: in a VM powers it off.
TEXT
}
