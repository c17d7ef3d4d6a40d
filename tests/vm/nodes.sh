#!/usr/bin/env bash
# nodes.sh: 'make shell NODES=N': N VMs (2 to 4) on one virtual Ethernet segment, each with its own shell, side by side in a tmux session on this host.
#
# Usage: tests/vm/nodes.sh N VM_DIR RESULTS_DIR                  (the session, attached)
#        tests/vm/nodes.sh --node K N PORT VM_DIR RESULTS_DIR    (one pane's VM)
# Node K (198.18.0.K) is pane K, from the left (two nodes) or tiled (three or four).
# Ctrl-b o moves between them; closing every shell ends the session.  With
# RDMA_LAB_DETACHED=1 the session is left detached (tests/slow/lab.bats drives it
# with tmux send-keys), and its name is printed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1

die() { echo "shell: $*" >&2; exit 1; }

# shellcheck source=tests/vm/wire-port.bash
. tests/vm/wire-port.bash

# One pane: node K > 1 waits until node 1's QEMU listens on its port of the wire.
run_node() { # K N PORT VM_DIR RESULTS_DIR
	local k=$1 n=$2 port=$3
	if [ "$k" != 1 ]; then
		echo "shell: node $k waits for node 1's end of its wire (127.0.0.1 port $((port + k - 2)))"
		wait_listening "$((port + k - 2))" 60
	fi
	RDMA_VM_INTERACTIVE=1 RDMA_VM_PROJECT_RW=1 RDMA_VM_ASLR=1 RDMA_VM_NODE=$k RDMA_VM_NODES=$n RDMA_VM_WIRE_PORT=$port \
		RDMA_VM_CPUS=$(node_cpus "$n") tests/vm/boot.sh "$4" "$5/node$k" tests/vm/shell.sh
	status=$?
	[ "$status" = 0 ] || { echo "shell: node $k ended with status $status; press Enter to close"; read -r; }
	exit "$status"
}

if [ "${1:-}" = --node ]; then
	run_node "$2" "$3" "$4" "$5" "$6"
fi
usage="usage: nodes.sh N VM_DIR RESULTS_DIR"
n=${1:?$usage}
vm_dir=${2:?$usage}
results=${3:?$usage}
case $n in 2 | 3 | 4) ;; *) die "NODES must be 1 to 4, not '$n'" ;; esac
command -v tmux >/dev/null || die "several nodes need tmux on this machine: run 'make deps' as root"
port=$(wire_free_port $((n - 1))) || die "no $((n - 1)) free TCP ports in a row in 20000-29999 on 127.0.0.1 for the wire"
session=rdma-steps-nodes-$port
# A pane takes the tmux server's environment, not ours: what run.sh found running goes on its command line.
me="RDMA_VM_OTHER_SHELLS=$(printf '%q' "${RDMA_VM_OTHER_SHELLS:-}") RDMA_VM_NETEM=$(printf '%q' "${RDMA_VM_NETEM:-}") $root/tests/vm/nodes.sh"
# A session of its own, even from inside tmux: then the outer tmux takes Ctrl-b first.
TMUX='' tmux new-session -d -s "$session" -x "$(tput cols 2>/dev/null || echo 160)" -y "$(tput lines 2>/dev/null || echo 48)" \
	"$me --node 1 $n $port $vm_dir $results" || die "tmux could not start a session"
for ((k = 2; k <= n; k++)); do
	tmux split-window -t "$session" "$me --node $k $n $port $vm_dir $results"
	tmux select-layout -t "$session" "$([ "$n" = 2 ] && echo even-horizontal || echo tiled)" >/dev/null
done
tmux select-pane -t "$session:0.0"
tmux set-option -t "$session" pane-border-status top >/dev/null
tmux set-option -t "$session" pane-border-format ' node #{e|+:#{pane_index},1} (198.18.0.#{e|+:#{pane_index},1}) ' >/dev/null
if [ "${RDMA_LAB_DETACHED:-0}" = 1 ]; then
	echo "$session"
	exit 0
fi
TMUX='' tmux attach -t "$session"
# Detached (Ctrl-b d) rather than ended: the nodes still run.
if tmux has-session -t "$session" 2>/dev/null; then
	echo "shell: the $n nodes still run in tmux session $session: 'tmux attach -t $session' goes back to them, 'tmux kill-session -t $session' powers them off"
fi
