#!/usr/bin/env bash
# run-bats.sh: run bats files with TAP output, copied to the results directory; exits with bats' status.
#
# Usage: tests/run-bats.sh [BATS_FILE...]   (default: every tests/*.bats)
# The TAP output is also written to $RDMA_STEPS_RESULTS/tap.
set -uo pipefail
tap=${RDMA_STEPS_RESULTS:?RDMA_STEPS_RESULTS must name the results directory}/tap
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
[ $# -gt 0 ] || set -- tests/*.bats
export BATS_LIB_PATH=${BATS_LIB_PATH:-/usr/lib/bats}
bats --tap --timing "$@" | tee "$tap"
exit "${PIPESTATUS[0]}"
