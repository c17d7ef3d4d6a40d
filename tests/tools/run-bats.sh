#!/usr/bin/env bash
# run-bats.sh: run bats files with TAP output, copied to the results directory; exits with bats' status.
#
# Usage: tests/tools/run-bats.sh [--outside-vm | --device] [BATS_FILE...]   (default: every tests/*.bats)
# Files tagged "outside-vm" (# bats file_tags=outside-vm) run on this machine,
# never in the test VM: they need no RDMA device, or they boot VMs of their own.
# --outside-vm runs only those and writes $RDMA_STEPS_RESULTS/outside-vm.tap;
# --device runs all the others; with neither, every test runs.  The TAP output
# goes to $RDMA_STEPS_RESULTS/tap unless --outside-vm is given.
set -uo pipefail
results=${RDMA_STEPS_RESULTS:?RDMA_STEPS_RESULTS must name the results directory}
tap=$results/tap
filter=() device_only=0
case ${1:-} in
--outside-vm) filter=(--filter-tags outside-vm) tap=$results/outside-vm.tap; shift ;;
--device) filter=(--filter-tags '!outside-vm') device_only=1; shift ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
[ $# -gt 0 ] || set -- tests/*.bats
# bats reads every file it is given before the first test, about half a second a
# file in the VM: with --device, the files tagged outside-vm as a whole are left out.
if [ "$device_only" = 1 ]; then
	declare -A outside_file=()
	while IFS= read -r f; do outside_file[$f]=1; done < <(grep -l -- '^# bats file_tags=outside-vm$' "$@" 2>/dev/null)
	kept=()
	for f in "$@"; do [ -n "${outside_file[$f]:-}" ] || kept+=("$f"); done
	if [ ${#kept[@]} -eq 0 ]; then
		echo "1..0" | tee "$tap"
		exit 0
	fi
	set -- "${kept[@]}"
fi
export BATS_LIB_PATH=${BATS_LIB_PATH:-/usr/lib/bats}
# The C locale: what the tests match is ASCII, and bats reads every test file line
# by line with bash regexes before the first test runs, which in the VM took 9 s
# in C.UTF-8 and 6 s in C.
export LC_ALL=C
bats --tap --timing "${filter[@]}" "$@" | tee "$tap"
exit "${PIPESTATUS[0]}"
