#!/usr/bin/env bash
# serve.sh: 'make serve': serve.py under torchrun on SERVE_RANKS ranks of this machine (default 4: 2 trainers and a replica of --tp 2), over RDMA_DEV; rank 0's report, then every rank's log kept.
#
# Run where RDMA works (tests/tools/run.sh serve: natively, or in the VM).  Each rank's
# stdout goes to RDMA_STEPS_RESULTS/torch/.../attempt_0/K/stdout.log, its stderr to
# stderr.log and to this terminal as it comes, as make train's (train.sh says why
# --redirects 1 --tee 2).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
# Debian 13's torch 2.6 is built without libuv but asks for it: see tests/tools/torch-store/sitecustomize.py.
export PYTHONPATH=$PWD/tests/tools/torch-store${PYTHONPATH:+:$PYTHONPATH}
out=${RDMA_STEPS_RESULTS:?set RDMA_STEPS_RESULTS to the folder for the logs of the ranks}
ranks=${SERVE_RANKS:-4}
case $ranks in 3 | 4 | 5 | 6) ;; *) echo "serve: SERVE_RANKS must be 3 to 6, not '$ranks'" >&2; exit 2 ;; esac
command -v torchrun >/dev/null ||
	{ echo "serve: no torchrun: 'make serve' installs Debian's python3-torch (tests/tools/deps.sh collective)" >&2; exit 1; }
[ -e build/lib/libweight_comm.so ] || { echo "serve: no build/lib/libweight_comm.so: run 'make all'" >&2; exit 1; }

# One node: Gloo on the loopback, as the VM's hostname resolves to no address; one thread per rank.
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
rm -rf "$out/torch"
echo "serve: torchrun starts $ranks ranks; under emulation each imports torch for a minute or more"
timeout -k 5 "${SERVE_TIMEOUT:-600}" torchrun --nnodes 1 --nproc_per_node "$ranks" \
	--master_addr 127.0.0.1 --master_port "${SERVE_MASTER_PORT:-29500}" --max_restarts 0 \
	--log_dir "$out/torch" --redirects 1 --tee 2 \
	steps/10_weight_sync/serve/serve.py "$@"
status=$?
log=$(find "$out/torch" -path "*/attempt_0/0/stdout.log" 2>/dev/null | head -n 1)
[ -n "$log" ] && cat "$log"
echo "serve: torchrun exited with $status; every rank's output is under $out/torch/"
exit "$status"
