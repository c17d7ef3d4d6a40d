#!/usr/bin/env bash
# train.sh: 'make train': train.py under torchrun on TRAIN_RANKS ranks (default 4) of this machine, over RDMA_DEV; rank 0's report, then every rank's log kept.
#
# Run where RDMA works (tests/tools/run.sh train: natively, or in the VM).  How the ranks
# are started and where their output goes: torchrun.bash.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
# shellcheck source=steps/07_allreduce/train/torchrun.bash
. steps/07_allreduce/train/torchrun.bash
out=${RDMA_STEPS_RESULTS:?set RDMA_STEPS_RESULTS to the folder for the logs of the ranks}
ranks=${TRAIN_RANKS:-4}
case $ranks in 2 | 3 | 4) ;; *) echo "train: TRAIN_RANKS must be 2, 3 or 4, not '$ranks'" >&2; exit 2 ;; esac
command -v torchrun >/dev/null ||
	{ echo "train: no torchrun: 'make train' installs Debian's python3-torch (tests/tools/deps.sh collective)" >&2; exit 1; }
[ -e build/lib/libring_comm.so ] || { echo "train: no build/lib/libring_comm.so: run 'make all'" >&2; exit 1; }
run_torch_job train "$out" "$ranks" "${TRAIN_MASTER_PORT:-29500}" "${TRAIN_TIMEOUT:-600}" \
	steps/07_allreduce/train/train.py "$@"
