#!/usr/bin/env bash
# nodes.sh: 'make shell NODES=N': N nodes (2 to 4) on one virtual Ethernet segment, network namespaces of one VM, each with its own shell, side by side in a tmux session on this host.
#
# Usage: tests/vm/nodes.sh N VM_DIR RESULTS_DIR                         (the session, attached)
#        tests/vm/nodes.sh --node K N CONSOLE_DIR VM_DIR RESULTS_DIR    (one pane)
# The nodes are those of make test-nodes (tests/vm/netns-nodes.sh): node K is the
# namespace nodeK, 198.18.0.K on eth0, its own rxe device rxeK.  They need a kernel
# whose rxe works per namespace (Linux 7.1 on), which make shell NODES=N boots
# (the Makefile's NODES_KERNEL).  Node K is pane K, from the left (two nodes) or tiled
# (three or four); Ctrl-b o moves between them.  Pane 1 runs the VM, whose serial
# console is node 1's shell; pane K connects with socat to node K's console, a Unix
# socket in CONSOLE_DIR, a folder only this user can enter.  The VM powers off once
# every node's shell is closed.  With RDMA_LAB_DETACHED=1 the session is left
# detached (tests/slow/lab.bats drives it with tmux send-keys), and its name printed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1

die() { echo "shell: $*" >&2; exit 1; }

# shellcheck source=tests/vm/kernel-choice.bash
. tests/vm/kernel-choice.bash

# Each pane's size, ROWSxCOLUMNS, in pane order: each node's console is given its pane's.
pane_sizes() { # SESSION
	tmux list-panes -t "$1" -F '#{pane_height}x#{pane_width}' | paste -sd' '
}

# Node K's pane: node 1 boots the VM once the panes are laid out (so that each console
# gets its pane's size); node K > 1 waits for its console's socket and connects to it.
run_node() { # K N CONSOLE_DIR VM_DIR RESULTS_DIR
	local k=$1 n=$2 dir=$3 sock=$3/node$1.sock status
	if [ "$k" = 1 ]; then
		tmux wait-for "rdma-steps-laid-out-${dir##*.}"
		RDMA_VM_INTERACTIVE=1 RDMA_VM_PROJECT_RW=1 RDMA_VM_ASLR=1 RDMA_VM_NETNS=$n RDMA_VM_CONSOLE_DIR=$dir \
			RDMA_VM_CONSOLE_SIZES=$(cat "$dir/sizes") RDMA_VM_MEM=${RDMA_VM_MEM:-$((1024 * n))} \
			tests/vm/boot.sh "$4" "$5" tests/vm/netns-nodes.sh "$n" tests/vm/shell.sh
		status=$?
		rm -rf "$dir"
		[ "$status" = 0 ] || { echo "shell: the VM of the $n nodes ended with status $status; press Enter to close"; read -r; }
		exit "$status"
	fi
	echo "shell: node $k waits for its console, which node 1's pane boots"
	for _ in $(seq 1 600); do
		[ -S "$sock" ] && break
		sleep 0.1
	done
	[ -S "$sock" ] || { echo "shell: node $k's console never appeared ($sock); press Enter to close"; read -r; exit 1; }
	# Until node 1's pane removes the folder, its VM may come back: a kernel that panicked
	# while booting is booted again (boot.sh), its consoles on the same sockets.
	while [ -d "$dir" ]; do
		socat -,raw,echo=0 "UNIX-CONNECT:$sock" 2>/dev/null
		sleep 1
	done
	exit 0
}

if [ "${1:-}" = --node ]; then
	run_node "$2" "$3" "$4" "$5" "$6"
fi
usage="usage: nodes.sh N VM_DIR RESULTS_DIR"
n=${1:?$usage}
vm_dir=${2:?$usage}
results=${3:?$usage}
case $n in 2 | 3 | 4) ;; *) die "NODES must be 1 to 4, not '$n'" ;; esac
{ command -v tmux && command -v socat; } >/dev/null ||
	die "several nodes need tmux and socat on this machine (the panes, and each node's console): run 'make deps' as root"
rxe_per_netns "$vm_dir" ||
	die "NODES=$n: the nodes are network namespaces of one VM, and the kernel in $vm_dir ($(cat "$vm_dir/kernel.version" 2>/dev/null)) keeps one rxe socket for the whole VM: boot Linux 7.1 or later, as 'make shell NODES=$n' does (RDMA_VM_KERNEL=trixie-backports)"
# A private folder (mktemp's mode 0700): a node's console is a root shell.
consoles=$(mktemp -d "${TMPDIR:-/tmp}/rdma-steps-nodes.XXXXXX") || die "cannot make a folder for the nodes' consoles"
session=rdma-steps-nodes-${consoles##*.}
# A pane takes the tmux server's environment, not ours: what run.sh found running goes on its command line.
me="RDMA_VM_OTHER_SHELLS=$(printf '%q' "${RDMA_VM_OTHER_SHELLS:-}") RDMA_VM_NETEM=$(printf '%q' "${RDMA_VM_NETEM:-}") $root/tests/vm/nodes.sh"
# A session of its own, even from inside tmux: then the outer tmux takes Ctrl-b first.
TMUX='' tmux new-session -d -s "$session" -x "$(tput cols 2>/dev/null || echo 160)" -y "$(tput lines 2>/dev/null || echo 48)" \
	"$me --node 1 $n $consoles $vm_dir $results" || die "tmux could not start a session"
for ((k = 2; k <= n; k++)); do
	tmux split-window -t "$session" "$me --node $k $n $consoles $vm_dir $results"
	tmux select-layout -t "$session" "$([ "$n" = 2 ] && echo even-horizontal || echo tiled)" >/dev/null
done
tmux select-pane -t "$session:0.0"
tmux set-option -t "$session" pane-border-status top >/dev/null
tmux set-option -t "$session" pane-border-format ' node #{e|+:#{pane_index},1} (198.18.0.#{e|+:#{pane_index},1}) ' >/dev/null
pane_sizes "$session" >"$consoles/sizes"
tmux wait-for -S "rdma-steps-laid-out-${consoles##*.}"
if [ "${RDMA_LAB_DETACHED:-0}" = 1 ]; then
	echo "$session"
	exit 0
fi
TMUX='' tmux attach -t "$session"
# Detached (Ctrl-b d) rather than ended: the nodes still run.
if tmux has-session -t "$session" 2>/dev/null; then
	echo "shell: the $n nodes still run in tmux session $session: 'tmux attach -t $session' goes back to them, 'tmux kill-session -t $session' powers them off"
fi
