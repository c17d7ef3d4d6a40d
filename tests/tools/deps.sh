#!/usr/bin/env bash
# deps.sh: install the Debian packages that the build, the demo and the tests need ('make deps').
#
# Usage: tests/tools/deps.sh build|all|valgrind|bench|wire|collective|nodes|browser
#   build:    what compiling needs (make, make sanitize, make nocuda);
#   all:      that, plus what the demo, the tests, the VM and the checks need;
#   valgrind: all, plus valgrind ('make valgrind');
#   bench:    valgrind, plus ucx-utils, UCX's ucx_perftest ('make bench', 'make test-bench');
#   wire:     all, plus tcpdump and tshark ('make test-wire', 'make shell NODES=2' to 4);
#   collective: all, plus mpirun and torchrun (python3-torch, about 1 GB) ('make test-allreduce');
#   nodes:    wire and collective, plus mpi4py ('make test-nodes', 'make bench-nodes');
#   browser:  all, plus chromium and a CJK font ('make test-render': the book as a reader sees it).
# As root it installs what is missing; otherwise it prints the one apt-get line
# to run and fails, before anything compiles.  For 'all' it also makes sure apt
# knows the kernel package the test VM boots, since the VM fetches it with
# apt-get download.
set -euo pipefail

# libc6-dev is only a Recommends of gcc: without it there is no stdint.h.
build_packages=(gcc libc6-dev make pkg-config libibverbs-dev librdmacm-dev)
# xz-utils and zstd: the VM boots the kernel unpacked from Debian's vmlinuz, xz-compressed up to 6.x, zstd from 7.x (RDMA_VM_KERNEL).
# mount: the VM's init runs this machine's own mount over 9p, and a minimal root lacks it.
# strace, gnuplot-nox and jq: make bench counts system calls and draws its plot; its test reads the JSON.
# python3: tests/tools/tutorial-parity.py, which keeps the Chinese edition in step with the English.
# cmark-gfm: GitHub's own Markdown renderer, for tests/render-check.sh.
# rdmacm-utils: rping, the rdma_cm peer that step 05's --peer=rping talks to.
# tmux and socat: make shell NODES=N's panes, each reaching its node's console (tests/vm/nodes.sh).
# fonts-wqy-microhei: the CJK font (WenQuanYi Micro Hei, a 1.6 MB download) the Chinese figures (diagrams/*.zh-CN.dot)
# are drawn in; graphviz measures their labels in it, so 'make diagrams' and tests/00_diagrams.bats need it.
run_packages=(rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2 kmod procps mount
	bats bats-assert bats-support qemu-system-x86 busybox-static graphviz fonts-wqy-microhei tmux socat shellcheck
	strace gnuplot-nox jq xz-utils zstd python3 cmark-gfm)

case ${1:-all} in
build) packages=("${build_packages[@]}") ;;
all) packages=("${build_packages[@]}" "${run_packages[@]}") ;;
valgrind) packages=("${build_packages[@]}" "${run_packages[@]}" valgrind) ;;
bench) packages=("${build_packages[@]}" "${run_packages[@]}" valgrind ucx-utils) ;;
wire) packages=("${build_packages[@]}" "${run_packages[@]}" tcpdump tshark) ;;
collective) packages=("${build_packages[@]}" "${run_packages[@]}" openmpi-bin python3-torch) ;;
nodes) packages=("${build_packages[@]}" "${run_packages[@]}" tcpdump tshark openmpi-bin python3-torch python3-mpi4py) ;;
browser) packages=("${build_packages[@]}" "${run_packages[@]}" chromium fonts-noto-cjk) ;;
*) echo "usage: tests/tools/deps.sh build|all|valgrind|bench|wire|collective|nodes|browser" >&2; exit 2 ;;
esac

# One dpkg-query for every package: in the test VM, where 'make' runs this too, each process costs about 80 ms.
declare -A installed=()
while read -r pkg status; do
	[ "${status:0:2}" = ii ] && installed[$pkg]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null || true)
missing=()
for pkg in "${packages[@]}"; do
	[ -n "${installed[$pkg]:-}" ] || missing+=("$pkg")
done

apt_knows_kernel() {
	[ "${1:-all}" = build ] || [ -n "$("$(dirname "${BASH_SOURCE[0]}")"/../vm/kernel-package.sh)" ]
}

if [ ${#missing[@]} -eq 0 ] && apt_knows_kernel "${1:-all}"; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	if [ ${#missing[@]} -gt 0 ]; then
		echo "deps: missing packages: ${missing[*]}" >&2
		echo "deps: install them as root with:" >&2
		echo "  sudo apt-get update && sudo apt-get install --no-install-recommends ${missing[*]}" >&2
	else
		echo "deps: apt knows no linux-image-amd64 package (the test VM's kernel); run: sudo apt-get update" >&2
	fi
	exit 1
fi
echo "deps: apt-get update" >&2
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
