#!/bin/bash
# banner.sh: what 'make shell' prints when its shell comes up: where you are, what is writable, and the lab's surprises.
#
# Run in the VM by shell.sh, with HOME and TMPDIR set as the shell has them;
# tests/slow/lab.bats runs it too, and checks each claim.
if [ -w /tmp ]; then tmp_note="/tmp, $TMPDIR (TMPDIR) and $HOME"; else tmp_note="$TMPDIR (TMPDIR) and $HOME (/tmp is the host's, read-only)"; fi
cat <<TEXT

Soft-RoCE VM: rxe0 is up on $(ip -4 -br addr show dev rxenet0 | awk '{print $1, $3}').
You are root in $PWD, the project itself, writable and uncached: edit and run
'make' here or on the host, and the rebuilt step runs here at once.
Writable too: $tmp_note; the rest of / is the host's, read-only.
Run TUTORIAL.md's commands as written.  For more terminals, start 'tmux':
Ctrl-b % splits left/right, Ctrl-b " splits top/bottom, Ctrl-b o moves to the
next pane, 'exit' closes one.  After resizing your window, run 'fit' outside
tmux: Ctrl-b d, fit, then 'tmux attach' (if your own terminal already runs
tmux, the outer one takes Ctrl-b: press it twice, Ctrl-b Ctrl-b d).
'rdma resource show' starts at pd 1, cq 1, qp 1: ib_core's own (QP1, the GSI QP
for management datagrams, with its CQ and PD).  Ctrl-C on a step leaves nothing
behind: the kernel frees what a process held, as 'rdma resource show' shows.
'exit' (or Ctrl-d) here powers the VM off.

TEXT

