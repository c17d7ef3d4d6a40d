#!/usr/bin/env bash
# fresh-machine.sh: run README's quick start in a minimal Debian 12 root and a minimal
# Debian 13 root, as a new user would, the first time.
#
# Usage: tests/tools/fresh-machine.sh [COMMIT]     (as root; default: HEAD)
#        FRESH_RELEASES=trixie tests/tools/fresh-machine.sh    (one release only)
#
# FRESH_RELEASES: the Debian releases to check, in order (default: bookworm trixie,
# that is Debian 12 and Debian 13).  For each, mmdebstrap builds a root that holds
# only apt, git, make and ca-certificates, the way a container image or a fresh
# cloud VM starts.  Its apt sources and configuration are this machine's own, so it
# reaches the same mirror and no host name is written here; for a release other
# than this machine's, the sources' suites are renamed (bookworm, bookworm-updates
# and bookworm-security become trixie, trixie-updates and trixie-security), the
# URIs stay.  The committed COMMIT is cloned into the root and these run there,
# each timed:
#   0. the root is the release asked for, and its apt keyring holds that release's keys;
#   1. as an ordinary user: make, make demo, make test and the other building
#      targets must stop before compiling, with the apt-get line to run;
#   2. as root: make demo, then make test on step 02's test file, each the first time;
#      then make test on step 01's from a second clone under /tmp, which the VM's guest
#      keeps read-only (its own /tmp is then the host's);
#   3. as root: make sanitize, make lint and make test-wire, which need packages of their own;
#   4. as root, the targets FRESH_EXTRA names, comma-separated, each with make's variables
#      if it needs them (none unless given: e.g. FRESH_EXTRA='train,serve,test-bench,bench-nodes
#      BENCH_NODES=2': python3-torch and the two PyTorch jobs, perftest against step 05, two VMs
#      on QEMU's hub; too long for .ci/run).
# The test VM boots the kernel that the root's own apt names as linux-image-amd64,
# as it would for a user there: Debian 12's Linux 6.1, Debian 13's 6.12.
# The TAP lines go to build/test-results/fresh-machine/tap (FRESH_NAME for another
# folder than fresh-machine), each named after its release; each root is removed
# afterwards, whatever happened.
set -uo pipefail

project=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
commit=$(git -C "$project" rev-parse --verify "${1:-HEAD}^{commit}") || exit 1
# FRESH_NAME names the run's folders, so that two runs (one release each) may go side by side.
name=${FRESH_NAME:-fresh-machine}
work=$project/build/$name
results=$project/build/test-results/$name
tap=$results/tap
log=$results/log
# Step 02's memlock test runs a program as nobody from this clone, which sits under
# /root (0700), as a CI clone may: it fails if the suite assumes nobody can reach build/bin.
# From the clone under /tmp any test fails if the suite assumes /tmp is writable in the VM
# (bats writes its own files there): step 01's, the shortest, runs there.  Each file runs
# once, where it checks something the other place does not.
root_test_files=tests/02_reg_mr.bats
tmp_test_files=tests/01_open_pd.bats
learner_uid=1000
read -ra releases <<<"${FRESH_RELEASES:-bookworm trixie}"
IFS=, read -ra extra_targets <<<"${FRESH_EXTRA:-}"

die() { echo "fresh-machine: $*" >&2; exit 1; }
say() { echo "fresh-machine: $*"; }

[ "$(id -u)" -eq 0 ] || die "needs root (it runs mmdebstrap, mount and chroot): run it as root, or through .ci/run"

# Debian's number for each release this check knows.
declare -A release_number=([bookworm]=12 [trixie]=13)
[ ${#releases[@]} -gt 0 ] || die "FRESH_RELEASES is empty: name bookworm, trixie or both"
for release in "${releases[@]}"; do
	[ -n "${release_number[$release]:-}" ] ||
		die "FRESH_RELEASES: '$release' is not a release this check knows: use bookworm (Debian 12), trixie (Debian 13) or both"
done
host_release=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
[ -n "$host_release" ] || die "/etc/os-release names no VERSION_CODENAME: cannot tell which suites this machine's apt sources name"

# Every bind mount under the work folder, deepest first, then the folder itself.
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

# This machine's sources for RELEASE, written under DIR (one file each, same names):
# every suite word HOST, HOST-updates, HOST-security, HOST-backports on a Suites:
# or deb line becomes RELEASE's; URIs and everything else stay as they are.
release_sources() { # RELEASE DIR
	local f out
	mkdir -p "$2"
	while read -r f; do
		out=$2/$(basename "$f")
		if [ "$1" = "$host_release" ]; then
			cp "$f" "$out"
		else
			# Twice: words side by side share the space between them, so one pass renames every other one.
			sed -E "/^[[:space:]]*(Suites:|deb(-src)?[[:space:]])/ s/(^|[[:space:]])$host_release(-updates|-security|-backports)?([[:space:]]|\$)/\\1$1\\2\\3/g; /^[[:space:]]*(Suites:|deb(-src)?[[:space:]])/ s/(^|[[:space:]])$host_release(-updates|-security|-backports)?([[:space:]]|\$)/\\1$1\\2\\3/g" "$f" >"$out"
		fi
		echo "$out"
	done < <(apt_sources)
}

build_root() { # RELEASE
	local sources opts=() f
	mapfile -t sources < <(release_sources "$1" "$work/$1/sources")
	[ ${#sources[@]} -gt 0 ] || die "this machine has no apt sources to copy into the root"
	for f in /etc/apt/apt.conf.d/*; do
		[ -f "$f" ] && opts+=("--aptopt=$f")
	done
	mmdebstrap --quiet --variant=apt --include=git,make,ca-certificates "${opts[@]}" \
		"$1" "$target" "${sources[@]}"
}

mount_system() {
	local dir
	for dir in proc sys dev dev/pts; do
		mkdir -p "$target/$dir"
		mount --bind "/$dir" "$target/$dir" || return 1
	done
	mkdir -p "$target/mnt/origin"
	# The repository's own git folder: in a worktree, .git is a file naming it.
	mount --bind -o ro "$(git -C "$project" rev-parse --path-format=absolute --git-common-dir)" "$target/mnt/origin"
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
	local ok=$1 name="$label: $2" seconds=$3
	n=$((n + 1))
	if [ "$ok" = ok ]; then
		echo "ok $n $name (${seconds} s)" >>"$tap"
	else
		echo "not ok $n $name (${seconds} s)" >>"$tap"
		failed=$((failed + 1))
	fi
	say "$ok: $name, ${seconds} s"
}

# The root is RELEASE (its os-release says so), its apt sources name RELEASE's
# suites only, and the keyring they are signed by holds RELEASE's archive,
# security and release keys (read with this machine's gpg, in a throwaway home).
check_root_is() { # RELEASE
	local release=$1 number=${release_number[$1]} ok=ok start=$SECONDS codename keys gnupg suites
	codename=$(sed -n 's/^VERSION_CODENAME=//p' "$target/etc/os-release")
	if [ "$codename" != "$release" ]; then
		echo "the root's /etc/os-release says '$codename', not $release" >&2
		ok="not ok"
	fi
	suites=$(cat "$target"/etc/apt/sources.list "$target"/etc/apt/sources.list.d/* 2>/dev/null |
		grep -E '^[[:space:]]*(Suites:|deb[[:space:]])')
	if grep -qwE "$host_release(-[a-z]+)?" <<<"$suites" && [ "$release" != "$host_release" ]; then
		printf '%s\n' "the root's apt sources still name $host_release:" "$suites" >&2
		ok="not ok"
	fi
	gnupg=$(mktemp -d)
	keys=$(gpg --homedir "$gnupg" --show-keys "$target/usr/share/keyrings/debian-archive-keyring.gpg" 2>/dev/null)
	rm -rf "$gnupg"
	for name in "Debian Archive Automatic Signing Key ($number/$release)" \
		"Debian Security Archive Automatic Signing Key ($number/$release)" \
		"Debian Stable Release Key ($number/$release)"; do
		if ! grep -qF "$name" <<<"$keys"; then
			echo "the root's /usr/share/keyrings/debian-archive-keyring.gpg holds no '$name'" >&2
			ok="not ok"
		fi
	done
	printf '%s\n' "######## the root's release, apt sources and keyring" "codename: $codename" "$suites" "$keys" >>"$log"
	report "$ok" "the root is Debian $number ($release), its apt sources name $release's suites, its keyring holds $release's keys" $((SECONDS - start))
}

# After make demo: the VM booted the kernel the root's own apt names as
# linux-image-amd64 (what a user of that release gets): build/vm/kernel.version
# and the line the VM printed when the guest came up (the log's latest) both say so.
check_vm_kernel() {
	local start=$SECONDS ok=ok pkg version booted
	pkg=$(in_root apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	version=$(cat "$target/root/rdma-steps/build/vm/kernel.version" 2>/dev/null)
	booted=$(tr -d '\r' <"$log" | sed -n 's/^vm: guest up at .* (kernel \(.*\))$/\1/p' | tail -n 1)
	if [ -z "$pkg" ] || [ "linux-image-$version" != "$pkg" ] || [ "linux-image-$booted" != "$pkg" ]; then
		echo "the root's apt names '$pkg' as linux-image-amd64, but build/vm holds '$version' and the guest came up on '$booted'" >&2
		ok="not ok"
	fi
	report "$ok" "make demo's VM booted the kernel the root's apt names as linux-image-amd64 (${pkg:-none})" $((SECONDS - start))
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
	printf '%s\n' "######## $label: make $target_name, as an ordinary user" "$out" >>"$log"
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
	echo "######## $label: $name" >>"$log"
	if in_root bash -c "cd ${CLONE:-/root/rdma-steps} && $*" </dev/null 2>&1 | tee -a "$log"; then
		report ok "$name" $((SECONDS - start))
	else
		report "not ok" "$name" $((SECONDS - start))
	fi
}

# Every check above, in a fresh root of RELEASE; the root is removed at the end.
check_release() { # RELEASE
	local release=$1 start=$SECONDS failed_before=$failed n_before=$n t
	label="Debian ${release_number[$release]} ($release)"
	target=$work/$release/root
	say "$label: building a minimal root (apt, git, make, ca-certificates) in $target"
	build_root "$release" || die "$label: mmdebstrap failed"
	say "$label: root built in $((SECONDS - start)) s"
	mount_system || die "$label: could not bind-mount /proc, /sys, /dev, /dev/pts and the repository into the root"
	clone_into_root || die "$label: could not clone $commit into the root"
	say "$label: cloned $(git -C "$project" log -1 --format='%h %s' "$commit")"
	check_root_is "$release"
	for t in "${learner_targets[@]}"; do
		check_learner_stops "$t"
	done
	run_as_root "as root, make demo, first time" make demo
	check_vm_kernel
	run_as_root "as root, then make test TESTS=$root_test_files, first time" make test "TESTS=$root_test_files"
	CLONE=/tmp/rdma-steps run_as_root "as root, from a clone under /tmp, make test TESTS=$tmp_test_files" make test "TESTS=$tmp_test_files"
	run_as_root "as root, then make sanitize" make sanitize
	run_as_root "as root, then make lint" make lint
	run_as_root "as root, then make test-wire (two nodes, tcpdump and tshark), first time" make test-wire
	for t in "${extra_targets[@]}"; do
		run_as_root "as root, then make $t, first time" make "$t"
	done
	say "$label: finished in $((SECONDS - start)) s: $((failed - failed_before)) of $((n - n_before)) checks failed"
	remove_root
}

mkdir -p "$results"
: >"$log"
rm -f "$tap"
remove_root
mkdir -p "$work"
total_start=$SECONDS

install_mmdebstrap || die "could not install mmdebstrap"
command -v gpg >/dev/null || die "gpg not found (it reads the root's keyring): apt-get install gpg"
mapfile -t slow_checks < <(make -s --no-print-directory -C "$project" slow-checks)
learner_targets=(all demo test "${slow_checks[@]}" bench bench-nodes train serve fuzz-replay shell 'shell NODES=2' 'shell NODES=4'
	sanitize test-sanitize nocuda vm lint)
echo "1..$(((${#learner_targets[@]} + 8 + ${#extra_targets[@]}) * ${#releases[@]}))" >"$tap"
for release in "${releases[@]}"; do
	check_release "$release"
done

say "finished in $((SECONDS - total_start)) s: $failed of $n checks failed, on ${releases[*]} (log: $log)"
[ "$failed" -eq 0 ]
