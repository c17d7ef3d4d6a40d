#!/usr/bin/env bash
# two-nodes.sh: 'make shell NODES=2': two VMs joined by one virtual wire, each with its own shell, side by side in a tmux session on this host.
#
# Usage: tests/vm/two-nodes.sh VM_DIR RESULTS_DIR          (the session, attached)
#        tests/vm/two-nodes.sh --node N PORT VM_DIR RESULTS_DIR   (one pane's VM)
# Node 1 (198.18.0.1) is the left pane, node 2 (198.18.0.2) the right one.  Ctrl-b o
# moves between them; closing both shells ends the session.  With RDMA_LAB_DETACHED=1
# the session is left detached (tests/slow/lab.bats drives it with tmux send-keys),
# and its name is printed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1

die() { echo "shell: $*" >&2; exit 1; }

# shellcheck source=tests/vm/wire-port.bash
. tests/vm/wire-port.bash

# One pane: node 2 waits until node 1's QEMU listens on the wire.
run_node() { # N PORT VM_DIR RESULTS_DIR
	if [ "$1" = 2 ]; then
		echo "shell: node 2 waits for node 1's end of the wire (127.0.0.1 port $2)"
		wait_listening "$2" 30
	fi
	RDMA_VM_INTERACTIVE=1 RDMA_VM_PROJECT_RW=1 RDMA_VM_NODE=$1 RDMA_VM_WIRE_PORT=$2 \
		tests/vm/boot.sh "$3" "$4/node$1" tests/vm/shell.sh
	status=$?
	[ "$status" = 0 ] || { echo "shell: node $1 ended with status $status; press Enter to close"; read -r; }
	exit "$status"
}

if [ "${1:-}" = --node ]; then
	run_node "$2" "$3" "$4" "$5"
fi
vm_dir=${1:?usage: two-nodes.sh VM_DIR RESULTS_DIR}
results=${2:?usage: two-nodes.sh VM_DIR RESULTS_DIR}
command -v tmux >/dev/null || die "two nodes need tmux on this machine: run 'make deps' as root"
port=$(wire_free_port) || die "no free TCP port in 20000-29999 on 127.0.0.1 for the wire"
session=rdma-steps-nodes-$port
me=$root/tests/vm/two-nodes.sh
# A session of its own, even from inside tmux: then the outer tmux takes Ctrl-b first.
TMUX='' tmux new-session -d -s "$session" -x "$(tput cols 2>/dev/null || echo 160)" -y "$(tput lines 2>/dev/null || echo 48)" \
	"$me --node 1 $port $vm_dir $results" || die "tmux could not start a session"
tmux split-window -h -t "$session" "$me --node 2 $port $vm_dir $results"
tmux select-pane -t "$session:0.0"
tmux set-option -t "$session" pane-border-status top >/dev/null
tmux set-option -t "$session" pane-border-format ' #{?#{==:#{pane_index},0},node 1 (198.18.0.1),node 2 (198.18.0.2)} ' >/dev/null
if [ "${RDMA_LAB_DETACHED:-0}" = 1 ]; then
	echo "$session"
	exit 0
fi
TMUX='' tmux attach -t "$session"
# Detached (Ctrl-b d) rather than ended: the nodes still run.
if tmux has-session -t "$session" 2>/dev/null; then
	echo "shell: the two nodes still run in tmux session $session: 'tmux attach -t $session' goes back to them, 'tmux kill-session -t $session' powers both off"
fi
