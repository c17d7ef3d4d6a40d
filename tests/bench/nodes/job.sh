#!/usr/bin/env bash
# job.sh: one node's part of the bench across nodes: ib_write_bw one pair alone, on every ring link and on every pair at once, step 07 over RDMA and TCP, Gloo, Open MPI, step 09 over RDMA and TCP, step 10's three ways.
#
# Runs in each VM that tests/bench/nodes/bench.sh boots (tests/vm/boot-nodes.sh), node K of
# N.  In order, each part on its own TCP port, so that a node early to a part waits for
# that part's peer, never another's:
#   lat:   ib_write_lat at 2 bytes, node 2 to node 1 alone: the latency term of the ring's model;
#   pair:  ib_write_bw, node 2 to node 1 alone (the others idle);
#   links: ib_write_bw on every ring link at the same time, node K to node K+1 (mod N);
#   ring:  07_allreduce, rank K-1 here, RDMA then TCP, at BENCH_NODES_SIZES;
#   gloo:  tests/peers/allreduce.py under torchrun, one process per node;
#   mpi:   the same under mpirun, N processes on node 1 only (its launcher needs a remote shell to reach the others);
#   atomic: ib_atomic_lat, FETCH_ADD of 8 bytes (step 09's default signal), node 2 to node 1 alone;
#   mesh:  ib_write_bw on every ordered pair at the same time, at step 09's ACK timeout: node K serves each peer and drives its own link to each;
#   moe:   09_moe, rank K-1 here, RDMA then TCP, at BENCH_NODES_MOE_SIZES, its QPs' ACK timeout NCCL's (--qp-timeout 20);
#   weights: 10_weight_sync, rank K-1 here, --way all (push, gather to rank 0, TCP) for 3 rounds, the
#          model of --model-dim BENCH_NODES_WEIGHTS_DIM (256: 11.6 MB in BF16), N - P trainers and one
#          replica of --tp P (P 2 from 3 nodes, else 1), the ACK timeout NCCL's.
# Writes PART.log in RDMA_STEPS_RESULTS (links: links.server.log and links.client.log; mesh:
# mesh.server.P.log and mesh.client.P.log, P the peer), and PART.counters: what each of rxe0's
# hardware counters gained over the part ("NAME DELTA"); for links, ring, mesh and moe, PART.cpu:
# each process's CPU time, user and system, and its wall time, in s.
# shellcheck disable=SC2317  # the parts are called by name, through part()
set -uo pipefail
bin=${RDMA_STEPS_BIN:-build/bin}
out=${RDMA_STEPS_RESULTS:?}
node=${RDMA_VM_NODE:?job.sh runs in a VM booted as a node (tests/vm/boot-nodes.sh)}
n=${RDMA_STEPS_NODES:?}
python=/usr/bin/python3
counters=/sys/class/infiniband/rxe0/ports/1/hw_counters
# 64 KiB messages, as make bench's write_bw: rxe's bandwidth is reached there.
bw=(ib_write_bw -d rxe0 -x 1 -s 65536 -D 5 -F)
# The sizes and counts of the collectives, as nccl-tests' -b, --maxbytes, -f, -n, -w.
read -ra sizes <<<"${BENCH_NODES_SIZES:--b 4K --maxbytes 4M -f 4 -n 5 -w 2}"
# Step 09's rows: 4 to 256 tokens of 7168 B a rank, a few minutes in all on 4 nodes.
read -ra moe_sizes <<<"${BENCH_NODES_MOE_SIZES:--b 28K --maxbytes 1792K -f 4 -n 5 -w 1}"
next=$((node % n + 1))

say() { echo "node $node: $*"; }

# shellcheck source=tests/lib/perftest.bash
. tests/lib/perftest.bash

lat() { # PORT
	case $node in
	1) timeout -k 5 120 ib_write_lat -d rxe0 -x 1 -s 2 -n 200 -F -p "$1" >"$out/lat.log" 2>&1 ;;
	2) perftest_client "$out/lat.log" ib_write_lat -d rxe0 -x 1 -s 2 -n 200 -F -p "$1" 198.18.0.1 ;;
	esac
}

# Runs COMMAND... with bash's time, adding "NAME USER SYSTEM WALL" to FILE.
timed() { # FILE NAME COMMAND...
	local file=$1 name=$2 TIMEFORMAT
	shift 2
	TIMEFORMAT="$name %U %S %R"
	{ time "$@" 2>&3; } 3>&2 2>>"$file"
}

pair() { # PORT
	case $node in
	1) timeout -k 5 120 "${bw[@]}" -p "$1" >"$out/pair.log" 2>&1 ;;
	2) perftest_client "$out/pair.log" "${bw[@]}" -p "$1" 198.18.0.1 ;;
	esac
}

# This node serves the link from the one before it on PORT + K, and drives its own on PORT + K + 1.
links() { # PORT
	local server status=0
	: >"$out/links.cpu"
	timed "$out/links.cpu" server timeout -k 5 120 "${bw[@]}" -p $(($1 + node)) >"$out/links.server.log" 2>&1 &
	server=$!
	timed "$out/links.cpu" client perftest_client "$out/links.client.log" "${bw[@]}" -p $(($1 + next)) "198.18.0.$next" || status=$?
	wait "$server" || status=$?
	return "$status"
}

ring() { # PORT
	: >"$out/ring.cpu"
	timed "$out/ring.cpu" rank timeout -k 5 900 "$bin/07_allreduce" -d rxe0 -p "$1" -t 120 --rank $((node - 1)) --world-size "$n" \
		--datatype int32 --transport both "${sizes[@]}" 198.18.0.1 >"$out/ring.log" 2>&1
}

gloo() { # PORT
	# PYTHONPATH: Debian 13's torch without libuv (tests/tools/torch-store/sitecustomize.py).
	PYTHONPATH=$PWD/tests/tools/torch-store GLOO_SOCKET_IFNAME=$RDMA_STEPS_NETDEV timeout -k 5 900 torchrun --nnodes "$n" --node_rank $((node - 1)) \
		--nproc_per_node 1 --master_addr 198.18.0.1 --master_port "$1" --log_dir "$TMPDIR/torch" \
		--redirects 1 --tee 1 tests/peers/allreduce.py gloo "${sizes[@]}" >"$out/gloo.log" 2>&1
}

mpi() { # PORT (unused: mpirun finds its own)
	[ "$node" = 1 ] || return 0
	timeout -k 5 900 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np "$n" \
		"$python" tests/peers/allreduce.py mpi "${sizes[@]}" >"$out/mpi.log" 2>&1
}

# The signal's latency: perftest reports an atomic's whole round trip, as step 09's sender waits it.
atomic() { # PORT
	case $node in
	1) timeout -k 5 120 ib_atomic_lat -d rxe0 -x 1 -A FETCH_AND_ADD -n 200 -F -p "$1" >"$out/atomic.log" 2>&1 ;;
	2) perftest_client "$out/atomic.log" ib_atomic_lat -d rxe0 -x 1 -A FETCH_AND_ADD -n 200 -F -p "$1" 198.18.0.1 ;;
	esac
}

# This node serves peer P's link to it on PORT + P, and drives its own to each peer Q on PORT + K.
# With step 09's ACK timeout (-u 20): at perftest's 14, 12 links at once sent packets again, and
# one ended with a completion error.
mesh() { # PORT
	local peer pid pids=() status=0 mesh_bw=("${bw[@]}" -u 20)
	: >"$out/mesh.cpu"
	for ((peer = 1; peer <= n; peer++)); do
		[ "$peer" = "$node" ] && continue
		timed "$out/mesh.cpu" server timeout -k 5 120 "${mesh_bw[@]}" -p $(($1 + peer)) >"$out/mesh.server.$peer.log" 2>&1 &
		pids+=($!)
	done
	for ((peer = 1; peer <= n; peer++)); do
		[ "$peer" = "$node" ] && continue
		timed "$out/mesh.cpu" client perftest_client "$out/mesh.client.$peer.log" "${mesh_bw[@]}" -p $(($1 + node)) "198.18.0.$peer" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || status=$?
	done
	return "$status"
}

# Step 09 at its default ACK timeout sends packets again between nodes (make test-nodes' moe4): NCCL's avoids it.
moe() { # PORT
	: >"$out/moe.cpu"
	timed "$out/moe.cpu" rank timeout -k 5 900 "$bin/09_moe" -d rxe0 -p "$1" -t 120 --rank $((node - 1)) --world-size "$n" \
		--qp-timeout 20 --transport both "${moe_sizes[@]}" 198.18.0.1 >"$out/moe.log" 2>&1
}

# Step 10's three ways: trainers on the first nodes, one replica of --tp 2 (of 1 on two nodes) on the last.
weights() { # PORT
	local tp=$((n >= 3 ? 2 : 1))
	timeout -k 5 600 "$bin/10_weight_sync" -d rxe0 -p "$1" -t 120 --rank $((node - 1)) --world-size "$n" \
		--trainers $((n - tp)) --tp "$tp" --model-dim "${BENCH_NODES_WEIGHTS_DIM:-256}" --layers 2 --updates 3 \
		--way all --qp-timeout 20 198.18.0.1 >"$out/weights.log" 2>&1
}

# Every counter, one "NAME VALUE" line each.
read_counters() {
	local f
	for f in "$counters"/*; do echo "${f##*/} $(cat "$f")"; done
}

# Each part starts once every node has come to it (tests/bench/nodes/barrier.py, on PORT - 1).
failed=0
part() { # NAME COMMAND PORT
	local start before status
	"$python" tests/bench/nodes/barrier.py "$node" "$n" $(($3 - 1)) || { failed=1; say "$1: the barrier failed"; return; }
	start=$SECONDS
	before=$(read_counters)
	"$2" "$3" || { status=$?; failed=1; say "$1 failed: exit status $status"; }
	awk 'NR == FNR { was[$1] = $2; next } { print $1, $2 - was[$1] }' <(echo "$before") <(read_counters) >"$out/$1.counters"
	say "$1: $((SECONDS - start)) s"
}
part lat lat 18795
part pair pair 18801
part links links 18810
part ring ring 18820
part gloo gloo 29400
part mpi mpi 18830
part atomic atomic 18841
part mesh mesh 18850
part moe moe 18860
part weights weights 18870
exit "$failed"
