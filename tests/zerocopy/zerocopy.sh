#!/usr/bin/env bash
# zerocopy.sh: TCP's MSG_ZEROCOPY beside step 05's RDMA in three setups: loopback in one VM, two network namespaces of one VM, and two VMs on QEMU's hub (make test-zerocopy).
#
# Usage: tests/zerocopy/zerocopy.sh OUT_DIR
# Boots two nodes twice (tests/vm/boot-nodes.sh), each running tests/zerocopy/node.sh:
# first as namespaces of one VM (its kernel's rxe must work per namespace: Linux 7.1 on,
# RDMA_VM_KERNEL=trixie-backports), into OUT_DIR/netns/; then as two VMs on QEMU's hub,
# one kernel each, into OUT_DIR/hub/.  Node 1 of each also runs both ends on itself
# (loopback).  Each node's logs: OUT_DIR/SETUP/nodeK/ (node.sh lists them).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
out=${1:?usage: tests/zerocopy/zerocopy.sh OUT_DIR}

die() { echo "zerocopy: $*" >&2; exit 1; }

{ rm -rf "$out" && mkdir -p "$out"; } || die "cannot create $out"
[ -x build/tools/zerocopy ] || die "no build/tools/zerocopy: run make first"
tests/vm/boot-nodes.sh 2 "$out/netns" tests/zerocopy/node.sh || die "a node failed in namespaces (see above)"
[ -e "$out/netns/vm.boot.log" ] ||
	die "the nodes did not come up as namespaces: this kernel's rxe has no socket per namespace (boot Linux 7.x: RDMA_VM_KERNEL=trixie-backports)"
RDMA_VM_HUB=1 tests/vm/boot-nodes.sh 2 "$out/hub" tests/zerocopy/node.sh || die "a node failed on the hub (see above)"
