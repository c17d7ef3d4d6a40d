#!/usr/bin/env bash
# demo.sh: run every step that exists, in order, on the RDMA device RDMA_DEV ('make demo').
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
bin=${RDMA_STEPS_BIN:-build/bin}
dev=${RDMA_DEV:?RDMA_DEV must name the RDMA device}

banner() { printf '\n######## %s ########\n' "$*"; }

banner "step 01: open the device and allocate a protection domain"
echo "\$ $bin/01_open_pd -d $dev"
timeout 30 "$bin/01_open_pd" -d "$dev" || exit 1
