#!/usr/bin/env bash
# flake-hunt.sh: run the suite's bats files ROUNDS times in one VM while CPU hogs load the host, and count, per test, the rounds it failed ('make flake-hunt').
#
# Usage: tests/tools/flake-hunt.sh [ROUNDS] [BATS_FILE...]    (default: 10 rounds of every tests/*.bats)
#        tests/tools/flake-hunt.sh --report DIR                (the table again, from the rounds kept in DIR)
# HOGS (default 1) is the number of busy loops run on the host beside the VM, each
# a shell spinning on one core, for as long as the rounds run: on a 2-core machine
# one hog leaves the VM's two vCPUs one core between them, as CI's run beside the
# fresh-machine check does.  The VM boots once; each round runs the files' tests
# that need the device (the outside-vm ones run on the host in 'make test').
# Results go to build/flake-hunt/: round-N.tap for each round (round-N/, what its tests kept), first-failure-K.txt
# with the first failing round's output of each test that ever failed, and
# report.txt, the table: for each test, the rounds it failed of those it ran.
# Ten clean rounds only rule out a flake that fails a quarter of the time or more
# (0.75^10 is about 6%): run more rounds for a test that was ever seen to fail.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
out=build/flake-hunt

# The table from DIR's round-*.tap: "failed/ran  test", every test, failures first.
report() {
	local dir=$1
	awk '
		FNR == 1 { rounds++; cur = "" }
		/^(not )?ok [0-9]+ / {
			name = $0; sub(/^(not )?ok [0-9]+ /, "", name); sub(/ # skip.*$/, "", name); sub(/ in [0-9]+ms$/, "", name)
			if (!(name in ran)) order[++n] = name
			ran[name]++
			if ($1 == "not" && !failed[name]++) bad++
			next
		}
		END {
			printf "flake-hunt: %d rounds, %d tests\n", rounds, n
			printf "%7s  %s\n", "failed", "test"
			for (pass = 0; pass < 2; pass++)
				for (i = 1; i <= n; i++) {
					t = order[i]
					if ((pass == 0) != (failed[t] > 0)) continue
					printf "%3d/%-3d  %s\n", failed[t], ran[t], t
				}
			printf "flake-hunt: %d of %d tests failed in at least one round\n", bad, n
		}' "$dir"/round-*.tap
}

# The first round's output of each test that failed: its TAP line and the lines after it.
save_first_failures() {
	local dir=$1 taps
	rm -f "$dir"/first-failure-*.txt
	mapfile -t taps < <(printf '%s\n' "$dir"/round-*.tap | sort -V)
	awk -v dir="$dir" '
		/^(not )?ok [0-9]+ / {
			saving = 0
			if ($1 != "not") next
			name = $0; sub(/^not ok [0-9]+ /, "", name); sub(/ in [0-9]+ms$/, "", name)
			if (name in seen) next
			seen[name] = 1; k++
			file = dir "/first-failure-" k ".txt"
			print "from " FILENAME ":" > file
			saving = 1
		}
		saving { print > file }' "${taps[@]}"
}

# In the VM: ROUNDS rounds of the given files' device tests, as make test runs them
# (tests/tools/run-bats.sh --device); each round's TAP as round-N.tap, what else it kept in round-N/.
rounds_in_vm() {
	local rounds=$1 r start base=$RDMA_STEPS_RESULTS
	shift
	for r in $(seq 1 "$rounds"); do
		start=$SECONDS
		mkdir -p "$base/round-$r"
		RDMA_STEPS_RESULTS=$base/round-$r tests/tools/run-bats.sh --device "$@" >/dev/null 2>&1
		mv "$base/round-$r/tap" "$base/round-$r.tap"
		echo "flake-hunt: round $r of $rounds: $(grep -c '^not ok' "$base/round-$r.tap") failed, $((SECONDS - start)) s"
	done
}

case ${1:-} in
--report) report "${2:?usage: flake-hunt.sh --report DIR}"; exit ;;
--in-vm) shift; rounds_in_vm "$@"; exit ;;
esac

rounds=${1:-10}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "flake-hunt: ROUNDS must be a positive number, not '$rounds'" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))
[ $# -gt 0 ] || set -- tests/*.bats
hogs=${HOGS:-1}
[[ $hogs =~ ^[0-9]+$ ]] || { echo "flake-hunt: HOGS must be a number of busy loops, not '$hogs'" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out"
hog_pids=()
stop_hogs() { [ ${#hog_pids[@]} -eq 0 ] || kill "${hog_pids[@]}" 2>/dev/null; }
trap stop_hogs EXIT
for _ in $(seq 1 "$hogs"); do
	# A busy loop, bounded in time like everything here: it ends with the rounds, or after a day.
	timeout 86400 bash -c 'while :; do :; done' &
	hog_pids+=($!)
done
echo "flake-hunt: $rounds rounds of $* in one VM, with $hogs busy loop(s) on the host's $(nproc) cores"
# shellcheck source=tests/vm/kernel-choice.bash
. tests/vm/kernel-choice.bash
vm_dir=$(vm_kernel_dir "$PWD") || exit 1
tests/vm/prepare.sh "$vm_dir" || exit 1
RDMA_VM_TIMEOUT=$((rounds * 900)) tests/vm/boot.sh "$vm_dir" "$out" tests/tools/flake-hunt.sh --in-vm "$rounds" "$@"
status=$?
stop_hogs
trap - EXIT
grep '^flake-hunt: round' "$out/console.log"
ls "$out"/round-*.tap >/dev/null 2>&1 || { echo "flake-hunt: no round finished (see $out/console.log)" >&2; exit 1; }
save_first_failures "$out"
report "$out" | tee "$out/report.txt"
[ "$status" -eq 0 ]
