#!/bin/bash
# shell.sh: the job of 'make shell': an interactive root shell on the test VM's serial console, or on a node's console.
#
# rxe0 is already up (a node's rxeK, with nodes as network namespaces: RDMA_VM_TTY
# then names the node's console, tests/vm/netns-nodes.sh).  The shell runs on a
# pseudo-terminal that script(1) relays to the console: PID 1's console cannot be a
# controlling terminal, and tmux cannot draw on the serial port directly.  The terminal is sized like the one
# that ran 'make shell'.  HOME is a fresh directory, so the host's dotfiles
# stay out of the way.
export RDMA_VM_TTY=${RDMA_VM_TTY:-/dev/ttyS0}
tty=$RDMA_VM_TTY
# Held open to the end: a virtio console (hvc) takes the host's size, none, at each
# first open, and would lose the size set here when the banner's redirection closed it.
exec 9<>"$tty"
stty -F "$tty" sane
[ "${LINES:-0}" -gt 0 ] && stty -F "$tty" rows "$LINES" cols "$COLUMNS"
export TERM=${TERM:-vt100} HOME=$TMPDIR/home TMUX_TMPDIR=$TMPDIR
mkdir -p "$HOME"
cat >"$HOME/.bashrc" <<'RC'
PS1='\u@\h:\w\$ '
HISTFILE=$HOME/.bash_history
# A serial line carries no window size: ask the terminal where its far corner is.
fit() {
	local rows cols
	if [ -n "$TMUX" ]; then
		echo "fit: run it outside tmux (Ctrl-b d, fit, then 'tmux attach')" >&2
		return 1
	fi
	IFS='[;' read -rs -t 2 -d R -p $'\e7\e[999;999H\e[6n\e8' _ rows cols || return 1
	stty -F "$RDMA_VM_TTY" rows "$rows" cols "$cols" && echo "fit: $rows rows, $cols columns"
}
RC
echo 'set -g default-command bash' >"$HOME/.tmux.conf"
tests/vm/banner.sh >"$tty"
# shellcheck disable=SC2094  # the terminal is both its input and its output
setsid -c script -q -c 'bash -i' /dev/null <"$tty" >"$tty" 2>&1 9>&-
status=$?
# Nodes as namespaces: the VM runs on until every node's shell is closed.
if [ -n "${RDMA_VM_NETNS:-}" ]; then
	echo "node $RDMA_VM_NODE: this shell is closed; the VM powers off once every node's is ('exit' in each pane)" >"$tty"
fi
exit "$status"
