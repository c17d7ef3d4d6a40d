#!/usr/bin/env bash
# serve.sh: 'make serve': serve.py under torchrun on SERVE_RANKS ranks of this machine (default 4: 2 trainers and a replica of --tp 2), over RDMA_DEV; rank 0's report, then every rank's log kept.
#
# Run where RDMA works (tests/tools/run.sh serve: natively, or in the VM).  How the ranks
# are started and where their output goes: step 07's torchrun.bash, as make train's.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1
# shellcheck source=steps/07_allreduce/train/torchrun.bash
. steps/07_allreduce/train/torchrun.bash
out=${RDMA_STEPS_RESULTS:?set RDMA_STEPS_RESULTS to the folder for the logs of the ranks}
ranks=${SERVE_RANKS:-4}
case $ranks in 3 | 4 | 5 | 6) ;; *) echo "serve: SERVE_RANKS must be 3 to 6, not '$ranks'" >&2; exit 2 ;; esac
command -v torchrun >/dev/null ||
	{ echo "serve: no torchrun: 'make serve' installs Debian's python3-torch (tests/tools/deps.sh collective)" >&2; exit 1; }
[ -e build/lib/libweight_comm.so ] || { echo "serve: no build/lib/libweight_comm.so: run 'make all'" >&2; exit 1; }
run_torch_job serve "$out" "$ranks" "${SERVE_MASTER_PORT:-29500}" "${SERVE_TIMEOUT:-900}" \
	steps/10_weight_sync/serve/serve.py "$@"
