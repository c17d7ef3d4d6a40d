#!/bin/bash
# shell.sh: the job of 'make shell': an interactive root shell on the test VM's serial console.
#
# rxe0 is already up.  The shell runs on /dev/ttyS0 (PID 1's console cannot be
# a controlling terminal), sized like the terminal that ran 'make shell'.
tty=/dev/ttyS0
stty -F "$tty" sane
[ "${RDMA_STEPS_ROWS:-0}" -gt 0 ] && stty -F "$tty" rows "$RDMA_STEPS_ROWS" cols "$RDMA_STEPS_COLS"
export TERM=${RDMA_STEPS_TERM:-vt100} HISTFILE=$TMPDIR/bash_history TMUX_TMPDIR=$TMPDIR
export PS1='rdma-vm:\w# '
cat >"$tty" <<TEXT

Soft-RoCE VM: rxe0 is up on $(ip -4 -br addr show dev rxenet0 | awk '{print $1, $3}').
You are root in $PWD, which is read-only here (build it with 'make' on the host).
Run TUTORIAL.md's commands as written.  For a second terminal, start 'tmux':
Ctrl-b % splits the window, Ctrl-b o moves between panes, 'exit' closes one.
'exit' (or Ctrl-d) here powers the VM off.

TEXT
# shellcheck disable=SC2094  # the terminal is both its input and its output
setsid -c bash --norc -i <"$tty" >"$tty" 2>&1
