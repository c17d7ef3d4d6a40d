#!/usr/bin/env bash
# demo.sh: run every step that exists, in order, on the RDMA device RDMA_DEV ('make demo').
#
# Steps with server and client roles run both on this machine: the server in
# the background, the client against 127.0.0.1; their outputs are shown one
# after the other.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
bin=${RDMA_STEPS_BIN:-build/bin}
dev=${RDMA_DEV:?RDMA_DEV must name the RDMA device}
port=18515
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

banner() { printf '\n######## %s ########\n' "$*"; }

run_alone() {
	local step=$1
	shift
	echo "\$ $bin/$step $*"
	timeout 30 "$bin/$step" "$@"
}

# Runs STEP ARGS as server and as client; prints both outputs; fails if either failed.
run_pair() {
	local step=$1 server_status client_status
	shift
	timeout 30 "$bin/$step" "$@" -p "$port" >"$out/server" 2>&1 &
	local server=$!
	timeout 30 "$bin/$step" "$@" -p "$port" 127.0.0.1 >"$out/client" 2>&1
	client_status=$?
	wait "$server"
	server_status=$?
	echo "--- server: \$ $bin/$step $* -p $port"
	cat "$out/server"
	echo "--- client: \$ $bin/$step $* -p $port 127.0.0.1"
	cat "$out/client"
	port=$((port + 1))
	[ "$server_status" -eq 0 ] && [ "$client_status" -eq 0 ]
}

banner "step 01: open the device and allocate a protection domain"
run_alone 01_open_pd -d "$dev" || exit 1
banner "step 02: register memory"
run_alone 02_reg_mr -d "$dev" -s 64K || exit 1
banner "step 03: create the CQ and QP, exchange addresses, drive the QP to RTS"
run_pair 03_cq_qp_rts -d "$dev" || exit 1
banner "step 04: post work requests (SEND, WRITE, WRITE with immediate, READ)"
run_pair 04_post_wr -d "$dev" -o send || exit 1
run_pair 04_post_wr -d "$dev" -o write || exit 1
run_pair 04_post_wr -d "$dev" -o write_imm --imm 0xdeadbeef || exit 1
run_pair 04_post_wr -d "$dev" -o read -s 64K || exit 1
banner "step 05: poll for completions over many messages, then destroy"
run_pair 05_poll_destroy -d "$dev" -n 1000 || exit 1
run_pair 05_poll_destroy -d "$dev" -n 1000 --events || exit 1
banner "step 06: GPU memory along TCP, RDMA and GPUDirect RDMA, copies counted"
run_pair 06_gdr -d "$dev" -s 1M || exit 1
banner "all steps ran"
