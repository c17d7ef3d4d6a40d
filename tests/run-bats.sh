#!/usr/bin/env bash
# run-bats.sh: run bats files with TAP output, copied to the results directory; exits with bats' status.
#
# Usage: tests/run-bats.sh [--host | --device] [BATS_FILE...]   (default: every tests/*.bats)
# Tests tagged "host" (# bats file_tags=host) need no RDMA device.  --host runs
# only those and writes $RDMA_STEPS_RESULTS/host.tap; --device runs all the
# others; with neither, every test runs.  The TAP output goes to
# $RDMA_STEPS_RESULTS/tap unless --host is given.
set -uo pipefail
results=${RDMA_STEPS_RESULTS:?RDMA_STEPS_RESULTS must name the results directory}
tap=$results/tap
filter=()
case ${1:-} in
--host) filter=(--filter-tags host) tap=$results/host.tap; shift ;;
--device) filter=(--filter-tags '!host'); shift ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
[ $# -gt 0 ] || set -- tests/*.bats
export BATS_LIB_PATH=${BATS_LIB_PATH:-/usr/lib/bats}
# The C locale: what the tests match is ASCII, and bats reads every test file line
# by line with bash regexes before the first test runs, which in the VM took 9 s
# in C.UTF-8 and 6 s in C.
export LC_ALL=C
bats --tap --timing "${filter[@]}" "$@" | tee "$tap"
exit "${PIPESTATUS[0]}"
