#!/usr/bin/env bash
# train.sh: 'make train': train.py under torchrun on TRAIN_RANKS ranks (default 4) of this machine, over RDMA_DEV; rank 0's report, then every rank's log kept.
#
# Run where RDMA works (tests/tools/run.sh train: natively, or in the VM).  Each rank's
# stdout goes to RDMA_STEPS_RESULTS/torch/.../attempt_0/K/stdout.log, its stderr to
# stderr.log and to this terminal as it comes (--redirects 1 --tee 2).  Debian 12's
# torchrun (torch 1.13, Python 3.11) fails at its defaults, "--redirects 0 --tee 0":
# Std.from_str finds no flag for 0 since Python 3.11's IntFlag.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
# Debian 13's torch 2.6 is built without libuv but asks for it: see tests/tools/torch-store/sitecustomize.py.
export PYTHONPATH=$PWD/tests/tools/torch-store${PYTHONPATH:+:$PYTHONPATH}
out=${RDMA_STEPS_RESULTS:?set RDMA_STEPS_RESULTS to the folder for the logs of the ranks}
ranks=${TRAIN_RANKS:-4}
case $ranks in 2 | 3 | 4) ;; *) echo "train: TRAIN_RANKS must be 2, 3 or 4, not '$ranks'" >&2; exit 2 ;; esac
command -v torchrun >/dev/null ||
	{ echo "train: no torchrun: 'make train' installs Debian's python3-torch (tests/tools/deps.sh collective)" >&2; exit 1; }
[ -e build/lib/libring_comm.so ] || { echo "train: no build/lib/libring_comm.so: run 'make all'" >&2; exit 1; }

# One node: Gloo (DDP's start, and the run it is compared with) on the loopback, as
# the VM's hostname resolves to no address; one thread per rank, as torchrun would set.
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
rm -rf "$out/torch"
echo "train: torchrun starts $ranks ranks; under emulation each imports torch for a minute or more"
timeout -k 5 "${TRAIN_TIMEOUT:-600}" torchrun --nnodes 1 --nproc_per_node "$ranks" \
	--master_addr 127.0.0.1 --master_port "${TRAIN_MASTER_PORT:-29500}" --max_restarts 0 \
	--log_dir "$out/torch" --redirects 1 --tee 2 \
	steps/07_allreduce/train/train.py "$@"
status=$?
log=$(find "$out/torch" -path "*/attempt_0/0/stdout.log" 2>/dev/null | head -n 1)
[ -n "$log" ] && cat "$log"
echo "train: torchrun exited with $status; every rank's output is under $out/torch/"
exit "$status"
