#!/usr/bin/env bash
# node.sh: one node's job in make test-nodes (and make test-nodes8, with tests/nodes/cases8.tsv as its argument): step 07 across 2, 3 and 4 nodes (rank K-1 on node K), step 09 across 4, step 10's three ways across 4, a rank killed, and the peer collectives (tests/nodes/cases.tsv).
#
# Runs in each node that tests/vm/boot-nodes.sh starts (a VM, or a network namespace
# of one VM), with RDMA_VM_NODE, RDMA_STEPS_NODES and RDMA_DEV (the node's own rxe
# device: namespaces see every node's) set.  The nodes may share one PID space, so a
# rank is killed by its PID, never by its name.  A case of N nodes runs on nodes 1 to N; the others go on to
# the next case, whose ranks wait for rank 0 (node 1) at that case's own port, so a
# rank never meets another case's.  Kinds:
#   ring: 07_allreduce, node 1 capturing RoCE v2 into CASE.pcap;
#   moe:  09_moe, the same way: its full mesh, node 1 capturing;
#   weights: 10_weight_sync the same way (ranks 0 and 1 train on nodes 1 and 2, a
#         replica on nodes 3 and 4), its --way all: push, gather and TCP each round;
#         and its push with --serve-dtype fp8, whose staging slots the wire keeps in flight;
#   kill: 07_allreduce, the last rank killed (SIGKILL) once its stage 7 has begun;
#   gloo: tests/peers/allreduce.py under torchrun on every node, one process each;
#   train: make train's train.py the same way, its ring's rendezvous 1000 ports up;
#   mpi:  tests/peers/allreduce.py under mpirun, N processes on node 1 only (no
#         remote shell reaches the other nodes for Open MPI's launcher).
# Writes in RDMA_STEPS_RESULTS: CASE.log, status.tsv (CASE, exit status, seconds).
set -uo pipefail
bin=${RDMA_STEPS_BIN:-build/bin}
out=${RDMA_STEPS_RESULTS:?}
node=${RDMA_VM_NODE:?node.sh runs in a node that tests/vm/boot-nodes.sh starts}
dev=${RDMA_DEV:?node.sh runs in a node that tests/vm/boot-nodes.sh starts}
python=/usr/bin/python3
cases=${1:-tests/nodes/cases.tsv}

say() { echo "node $node: $*"; }

# shellcheck source=tests/lib/capture.bash
. tests/lib/capture.bash

# tcpdump on eth0: node 1's NIC is on the hub (or the flooding bridge), which sends it every node's frames.
# This one vCPU also runs rank 0, and one dropped packet would fail the byte count:
# tcpdump keeps only the headers (-s 128: up to the immediate data; frame.len stays
# the whole frame's), in a large buffer (-B, KiB), written to memory, not to the share.
start_capture() { # CASE
	start_tcpdump "$out/$1.tcpdump.log" -B 32768 -s 128 -w "$TMPDIR/$1.pcap" udp port 4791
}

stop_capture() { # CASE
	sleep 1
	kill -INT "$capture"
	wait "$capture"
	cp "$TMPDIR/$1.pcap" "$out/"
	say "$1 capture: $(tail -n 3 "$out/$1.tcpdump.log" | tr '\n' ' ')"
}

# STEP as this node's rank of N, one rank a node (rank K-1 on node K), rank 0's rendezvous
# at PORT on node 1, killed after SECONDS: into CASE.log.
run_rank() { # STEP SECONDS CASE N PORT ARGS...
	local step=$1 seconds=$2 name=$3 n=$4 port=$5
	shift 5
	timeout -k 5 "$seconds" "$bin/$step" -d "$dev" -p "$port" --rank $((node - 1)) --world-size "$n" "$@" 198.18.0.1 \
		>"$out/$name.log" 2>&1
}

# Steps 07, 09 and 10, each launched that way: CASE N PORT ARGS...
ring() { run_rank 07_allreduce 300 "$@"; }
moe() { run_rank 09_moe 120 "$@"; }
weights() { run_rank 10_weight_sync 120 "$@"; }

# The last rank (this node) is killed outright once its collective has begun: by its
# PID, the child of its timeout (other nodes' ranks may share this PID space), which
# is why it starts its timeout itself, in the background, not in run_rank's function.
kill_last() { # CASE N PORT ARGS...
	local name=$1 n=$2 port=$3 rank
	shift 3
	timeout -k 5 300 "$bin/07_allreduce" -d "$dev" -p "$port" --rank $((node - 1)) --world-size "$n" "$@" 198.18.0.1 \
		>"$out/$name.log" 2>&1 &
	local pid=$!
	if [ "$node" = "$n" ]; then
		for _ in $(seq 1 600); do
			grep -q '^== stage 7' "$out/$name.log" 2>/dev/null && break
			sleep 0.1
		done
		sleep 1
		rank=$(pgrep -P "$pid" -x 07_allreduce)
		if [ -n "$rank" ]; then
			say "$name: killing rank $((node - 1)), pid $rank"
			kill -KILL "$rank"
		else
			say "$name: rank $((node - 1)) (the child of timeout, pid $pid) is not running"
		fi
	fi
	wait "$pid"
}

gloo() { # CASE N PORT ARGS...
	local name=$1 n=$2 port=$3
	shift 3
	# Gloo finds its own address from eth0, not from the host name (no node's name resolves here).
	# PYTHONPATH: Debian 13's torch without libuv (tests/tools/torch-store/sitecustomize.py).
	PYTHONPATH=$PWD/tests/tools/torch-store GLOO_SOCKET_IFNAME=$RDMA_STEPS_NETDEV timeout -k 5 600 torchrun --nnodes "$n" --node_rank $((node - 1)) \
		--nproc_per_node 1 --master_addr 198.18.0.1 --master_port "$port" --log_dir "$TMPDIR/torch-$name" \
		--redirects 1 --tee 1 tests/peers/allreduce.py gloo "$@" >"$out/$name.log" 2>&1
}

# make train's job across nodes: DDP's gradients through step 07's ring, one rank a node.
train() { # CASE N PORT ARGS...
	local name=$1 n=$2 port=$3
	shift 3
	PYTHONPATH=$PWD/tests/tools/torch-store GLOO_SOCKET_IFNAME=$RDMA_STEPS_NETDEV OMP_NUM_THREADS=1 timeout -k 5 600 torchrun --nnodes "$n" \
		--node_rank $((node - 1)) --nproc_per_node 1 --master_addr 198.18.0.1 --master_port "$port" \
		--log_dir "$TMPDIR/torch-$name" --redirects 1 --tee 1 steps/07_allreduce/train/train.py \
		--ring-port $((port + 1000)) --device "$dev" "$@" >"$out/$name.log" 2>&1
}

mpi() { # CASE N PORT ARGS...
	local name=$1 n=$2
	shift 3
	[ "$node" = 1 ] || return 0
	# self and vader: to itself, and through shared memory to the other processes on this node.
	timeout -k 5 300 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np "$n" "$python" tests/peers/allreduce.py mpi "$@" \
		>"$out/$name.log" 2>&1
}

say "device $dev, address ${RDMA_STEPS_ADDR:-?}"
: >"$out/status.tsv"
port=18600
capture=
while IFS=$'\t' read -r name n kind opts; do
	[ "$name" = case ] && continue
	port=$((port + 1))
	[ "$node" -le "$n" ] || continue
	[ "$kind" != mpi ] || [ "$node" = 1 ] || continue
	read -ra args <<<"$opts"
	say "$name: $kind on $n nodes, port $port: ${args[*]}"
	case $kind in ring | moe) [ "$node" = 1 ] && { start_capture "$name" || exit 1; } ;; esac
	start=$SECONDS
	case $kind in
	ring) ring "$name" "$n" "$port" "${args[@]}" ;;
	moe) moe "$name" "$n" "$port" "${args[@]}" ;;
	weights) weights "$name" "$n" "$port" "${args[@]}" ;;
	kill) kill_last "$name" "$n" "$port" "${args[@]}" ;;
	gloo) gloo "$name" "$n" "$port" "${args[@]}" ;;
	train) train "$name" "$n" "$port" "${args[@]}" ;;
	mpi) mpi "$name" "$n" "$port" "${args[@]}" ;;
	esac
	status=$?
	[ -z "$capture" ] || { stop_capture "$name"; capture=; }
	printf '%s\t%s\t%s\n' "$name" "$status" $((SECONDS - start)) >>"$out/status.tsv"
	say "$name: exit status $status in $((SECONDS - start)) s"
done <"$cases"
exit 0
