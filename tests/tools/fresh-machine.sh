#!/usr/bin/env bash
# fresh-machine.sh: run README's quick start in a minimal Debian 12 root, as a new user would, the first time.
#
# Usage: tests/tools/fresh-machine.sh [COMMIT]     (as root; default: HEAD)
#
# mmdebstrap builds a root that holds only apt, git, make and ca-certificates,
# the way a container image or a fresh cloud VM starts.  Its apt sources and
# configuration are this machine's own, so it reaches the same mirror and no
# host name is written here.  The committed COMMIT is cloned into the root and
# these run there, each timed:
#   1. as an ordinary user: make, make demo, make test and the other building
#      targets must stop before compiling, with the apt-get line to run;
#   2. as root: make demo, then make test on steps 01 and 02's test files, each the first time;
#      then the same tests from a second clone under /tmp, which the VM's guest keeps
#      read-only (its own /tmp is then the host's);
#   3. as root: make sanitize, make lint and make test-wire, which need packages of their own.
# The TAP lines go to build/test-results/fresh-machine/tap; the root is removed
# afterwards, whatever happened.
set -uo pipefail

project=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
commit=$(git -C "$project" rev-parse --verify "${1:-HEAD}^{commit}") || exit 1
work=$project/build/fresh-machine
target=$work/root
results=$project/build/test-results/fresh-machine
tap=$results/tap
log=$results/log
# Step 02's memlock test runs a program as nobody from this clone, which sits under
# /root (0700), as a CI clone may: it fails if the suite assumes nobody can reach build/bin.
# From the clone under /tmp it fails if the suite assumes /tmp is writable in the VM.
test_files="tests/01_open_pd.bats tests/02_reg_mr.bats"
learner_uid=1000

die() { echo "fresh-machine: $*" >&2; exit 1; }
say() { echo "fresh-machine: $*"; }

[ "$(id -u)" -eq 0 ] || die "needs root (it runs mmdebstrap, mount and chroot): run it as root, or through .ci/run"

# Every bind mount under the root, deepest first, then the root itself.
# --one-file-system keeps rm out of anything still mounted.
remove_root() {
	local mnt
	[ -d "$work" ] || return 0
	findmnt -rn -o TARGET | grep -F "$work/" | sort -r | while read -r mnt; do
		umount -l "$mnt"
	done
	rm -rf --one-file-system "$work"
}
trap remove_root EXIT

install_mmdebstrap() {
	command -v mmdebstrap >/dev/null && return 0
	say "installing mmdebstrap"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null
}

# This machine's enabled apt sources, one file each, in either format.
apt_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && grep -qE '^[[:space:]]*(deb|Types:)' "$f" && echo "$f"
	done
}

build_root() {
	local sources opts=() f
	mapfile -t sources < <(apt_sources)
	[ ${#sources[@]} -gt 0 ] || die "this machine has no apt sources to copy into the root"
	for f in /etc/apt/apt.conf.d/*; do
		[ -f "$f" ] && opts+=("--aptopt=$f")
	done
	mmdebstrap --quiet --variant=apt --include=git,make,ca-certificates "${opts[@]}" \
		bookworm "$target" "${sources[@]}"
}

mount_system() {
	local dir
	for dir in proc sys dev dev/pts; do
		mkdir -p "$target/$dir"
		mount --bind "/$dir" "$target/$dir" || return 1
	done
	mkdir -p "$target/mnt/origin"
	mount --bind -o ro "$project/.git" "$target/mnt/origin"
}

# Run a command in the root with a fresh login's environment.
in_root() {
	chroot "$target" env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

as_learner() {
	chroot --userspec="$learner_uid:$learner_uid" "$target" env -i HOME=/home/learner TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/bin:/usr/bin:/bin bash -c "cd /home/learner/rdma-steps && $1"
}

clone_into_root() {
	in_root git clone --quiet /mnt/origin /root/rdma-steps &&
		in_root git -C /root/rdma-steps checkout --quiet --detach "$commit" &&
		mkdir -p "$target/home/learner" &&
		in_root git clone --quiet /root/rdma-steps /home/learner/rdma-steps &&
		chown -R "$learner_uid:$learner_uid" "$target/home/learner" &&
		in_root git clone --quiet /root/rdma-steps /tmp/rdma-steps
}

n=0
failed=0
report() {
	local ok=$1 name=$2 seconds=$3
	n=$((n + 1))
	if [ "$ok" = ok ]; then
		echo "ok $n $name (${seconds} s)" >>"$tap"
	else
		echo "not ok $n $name (${seconds} s)" >>"$tap"
		failed=$((failed + 1))
	fi
	say "$ok: $name, ${seconds} s"
}

# An ordinary user on a machine without the packages: TARGET must stop before
# compiling, print the apt-get line, and leave no compiler or linker error.
check_learner_stops() {
	local target_name=$1 out start=$SECONDS ok=ok
	if out=$(as_learner "make $target_name" 2>&1 </dev/null); then
		echo "make $target_name succeeded for an ordinary user without the packages" >&2
		ok="not ok"
	fi
	if ! grep -q 'sudo apt-get update && sudo apt-get install' <<<"$out"; then
		echo "make $target_name printed no apt-get line" >&2
		ok="not ok"
	fi
	if grep -E 'error:|undefined reference|No such file or directory|command not found' <<<"$out" >&2; then
		ok="not ok"
	fi
	printf '%s\n' "######## make $target_name, as an ordinary user" "$out" >>"$log"
	if [ "$ok" != ok ]; then
		printf '%s\n' "--- make $target_name, as an ordinary user:" "$out" >&2
	fi
	report "$ok" "as an ordinary user, make $target_name stops before compiling with the apt-get line" $((SECONDS - start))
}

# Root runs one README command in its clone (CLONE=/root/rdma-steps, or another);
# its output goes to the log and the terminal.
run_as_root() {
	local name=$1 start=$SECONDS
	shift
	echo "######## $name" >>"$log"
	if in_root bash -c "cd ${CLONE:-/root/rdma-steps} && $*" </dev/null 2>&1 | tee -a "$log"; then
		report ok "$name" $((SECONDS - start))
	else
		report "not ok" "$name" $((SECONDS - start))
	fi
}

mkdir -p "$results"
: >"$log"
rm -f "$tap"
remove_root
mkdir -p "$work"
total_start=$SECONDS

install_mmdebstrap || die "could not install mmdebstrap"
say "building a minimal Debian 12 root (apt, git, make, ca-certificates) in $target"
start=$SECONDS
build_root || die "mmdebstrap failed"
say "root built in $((SECONDS - start)) s"
mount_system || die "could not bind-mount /proc, /sys, /dev, /dev/pts and the repository into the root"
clone_into_root || die "could not clone $commit into the root"
say "cloned $(git -C "$project" log -1 --format='%h %s' "$commit")"

mapfile -t slow_checks < <(make -s --no-print-directory -C "$project" slow-checks)
learner_targets=(all demo test "${slow_checks[@]}" bench bench-nodes train fuzz-replay shell 'shell NODES=2' 'shell NODES=4'
	sanitize test-sanitize nocuda vm lint)
echo "1..$((${#learner_targets[@]} + 6))" >"$tap"
for t in "${learner_targets[@]}"; do
	check_learner_stops "$t"
done
run_as_root "as root, make demo, first time" make demo
run_as_root "as root, then make test TESTS='$test_files', first time" make test "TESTS='$test_files'"
CLONE=/tmp/rdma-steps run_as_root "as root, from a clone under /tmp, make test TESTS='$test_files'" make test "TESTS='$test_files'"
run_as_root "as root, then make sanitize" make sanitize
run_as_root "as root, then make lint" make lint
run_as_root "as root, then make test-wire (two VMs, tcpdump and tshark), first time" make test-wire

say "finished in $((SECONDS - total_start)) s: $failed of $n checks failed (log: $log)"
[ "$failed" -eq 0 ]
