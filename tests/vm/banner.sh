#!/bin/bash
# banner.sh: what 'make shell' prints when its shell comes up: where you are, what is writable, and the lab's surprises.
#
# Run in the VM by shell.sh, with HOME and TMPDIR set as the shell has them;
# tests/slow/lab.bats runs it too, and checks each claim.
netdev=${RDMA_STEPS_NETDEV:-rxenet0}
dev=${RDMA_DEV:-rxe0}
where="Soft-RoCE VM: $dev is up on $(ip -4 -br addr show dev "$netdev" | awk '{print $1, $3}')."
closing="'exit' (or Ctrl-d) here powers the VM off."
# make shell NODES=N: node K is a network namespace of one VM, its device rxeK (tests/vm/nodes.sh).
if [ -n "${RDMA_VM_NODE:-}" ]; then
	closing="'exit' (or Ctrl-d) here closes this node's shell; the VM powers off once every
node's is closed."
	netns_note="
The nodes are network namespaces of one VM, each with its own eth0 and its own
rxe device, rxe1 to rxe$RDMA_STEPS_NODES.  Every node lists every node's device ('rdma
system show': netns shared), so give each step -d $dev, this node's: without -d a
step opens the first listed, node 1's rxe1."
fi
if [ -n "${RDMA_VM_NODE:-}" ] && [ "${RDMA_STEPS_NODES:-2}" = 2 ]; then
	where="NODE $RDMA_VM_NODE of 2 ($(hostname)): $dev is up on $netdev, $RDMA_STEPS_ADDR, wired to node $((3 - RDMA_VM_NODE)) at $RDMA_STEPS_PEER_ADDR.$netns_note
The two nodes are the two panes of a tmux session on your host: Ctrl-b o moves
between them.  Run a step's server on one node and its client on the other, with
the server's address: 'build/bin/04_post_wr -d rxe1 -o write' on node 1, then
'build/bin/04_post_wr -d rxe2 -o write 198.18.0.1' on node 2.  See the packets with
'tshark -i eth0 -f \"udp port 4791\" -O infiniband' (decoded) or 'tcpdump -i eth0 -n
udp port 4791', in a tmux of the node's own: its keys take Ctrl-b twice."
elif [ -n "${RDMA_VM_NODE:-}" ]; then
	n=$RDMA_STEPS_NODES
	where="NODE $RDMA_VM_NODE of $n ($(hostname)): $dev is up on $netdev, $RDMA_STEPS_ADDR, on one segment with nodes 1 to $n at 198.18.0.1 to 198.18.0.$n.$netns_note
The $n nodes are the $n panes of a tmux session on your host: Ctrl-b o moves to
the next.  Step 07 across them, rank K-1 on node K, rank 0 at node 1:
'build/bin/07_allreduce -d $dev --rank $((RDMA_VM_NODE - 1)) --world-size $n --qp-timeout 20 -b 1M --maxbytes 1M 198.18.0.1' here,
and the same with each node's own rank and device on the others.  --qp-timeout 20 is NCCL's
default: with step 03's 14 (67 ms), a busy emulated node draws retransmissions,
which rxe can cut wrongly (step 07's chapter shows one).  The bridge that joins
them floods every frame to every node, so 'tcpdump -i eth0 -n udp port 4791' on
node 1 sees every node's packets."
fi
if [ -w /tmp ]; then tmp_note="/tmp, $TMPDIR (TMPDIR) and $HOME"; else tmp_note="$TMPDIR (TMPDIR) and $HOME (/tmp is the host's, read-only)"; fi
# guest-init.sh turns address randomisation off for every job but make shell's (RDMA_VM_ASLR).
if [ "$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null)" = 0 ]; then
	aslr_note="Address randomisation is off in this VM: every run prints the same buffer
addresses, on both sides of a step, so an address shows nothing crossed: compare rkeys."
else
	aslr_note="Address randomisation is on, as on any host: each run prints new buffer
addresses, so a client's 'remote buffer' equal to its server's 'local buffer'
shows the address crossed ('make test' turns it off, for speed under emulation)."
fi
# Another make shell ran already (tests/vm/shells.bash): that VM is another machine.
other_note=
if [ -n "${RDMA_VM_OTHER_SHELLS:-}" ]; then
	other_note="
ANOTHER 'make shell' RUNS BESIDE THIS ONE: $RDMA_VM_OTHER_SHELLS.
That VM is another machine, on another network, even at the same address: a
server there and a client here never meet.  Run both sides of a step here."
fi
cat <<TEXT

$where$other_note
You are root in $PWD, the project itself, writable and uncached: edit and run
'make' here or on the host, and the rebuilt step runs here at once.
Writable too: $tmp_note; the rest of / is the host's, read-only.
Run each chapter's commands as written (steps/NN_name/README.md).  For more
terminals, start 'tmux':
Ctrl-b % splits left/right, Ctrl-b " splits top/bottom, Ctrl-b o moves to the
next pane, 'exit' closes one.  Ctrl-b z zooms a pane to the whole window and
back; Ctrl-b [ scrolls back through its output (arrows, PgUp; q ends it).
After resizing your window, run 'fit' outside tmux: Ctrl-b d, fit, then
'tmux attach' (if your own terminal already runs tmux, the outer one takes
Ctrl-b: press it twice, Ctrl-b Ctrl-b d).
$aslr_note
'rdma resource show' starts at pd 1, cq 1, qp 1: ib_core's own (QP1, the GSI QP
for management datagrams, with its CQ and PD).  Ctrl-C on a step leaves nothing
behind: the kernel frees what a process held, as 'rdma resource show' shows.
$closing

TEXT

