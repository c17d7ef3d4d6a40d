#!/usr/bin/env bash
# prepare.sh: fetch Debian's kernel into the build tree and build the test VM's initramfs.
#
# Usage: tests/vm/prepare.sh VM_DIR
#
# Nothing is installed on the host: the kernel package is downloaded with
# apt-get download, unpacked with dpkg-deb -x into VM_DIR/kernel, and its
# modules are indexed with depmod -b.  The initramfs holds a static busybox,
# the modules needed to mount the host's root over 9p, and tests/vm/initramfs-init.
set -euo pipefail

vm_dir=${1:?usage: prepare.sh VM_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$vm_dir"
vm_dir=$(cd "$vm_dir" && pwd)
cache=$vm_dir/cache
kdir=$vm_dir/kernel

die() { echo "vm: $*" >&2; exit 1; }

fetch_kernel() {
	local pkg=$1 deb
	mkdir -p "$cache"
	deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)
	if [ -z "$deb" ]; then
		echo "vm: downloading $pkg (apt-get download)" >&2
		(cd "$cache" && apt-get download "$pkg" >/dev/null 2>"$cache/download.log") ||
			die "apt-get download $pkg failed: $(tail -n 3 "$cache/download.log"). Run 'apt-get update' as root, then retry."
		deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)
	fi
	echo "$deb"
}

unpack_kernel() {
	local deb=$1 version=$2
	rm -rf "$kdir.tmp"
	mkdir -p "$kdir.tmp"
	dpkg-deb -x "$deb" "$kdir.tmp"
	# Newer packages ship modules under usr/lib; modprobe -d looks in lib/.
	if [ ! -d "$kdir.tmp/lib/modules" ] && [ -d "$kdir.tmp/usr/lib/modules" ]; then
		ln -s usr/lib "$kdir.tmp/lib"
	fi
	[ -f "$kdir.tmp/boot/vmlinuz-$version" ] || die "$deb has no boot/vmlinuz-$version"
	depmod -b "$kdir.tmp" "$version"
	rm -rf "$kdir"
	mv "$kdir.tmp" "$kdir"
}

# The insmod lines that load MODULE and its dependencies, in order.
module_closure() {
	modprobe -d "$kdir" -S "$1" --show-depends "$2" | awk '$1 == "insmod" { print $2 }'
}

build_initramfs() {
	local version=$1 root=$vm_dir/initramfs.d mod
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,newroot,modules}
	cp "$(command -v busybox)" "$root/bin/busybox"
	if ldd "$root/bin/busybox" 2>/dev/null | grep -q '=>'; then
		die "$(command -v busybox) is dynamically linked: install busybox-static"
	fi
	for applet in sh mount umount insmod switch_root cat poweroff; do
		ln -s busybox "$root/bin/$applet"
	done
	: >"$root/modules/load-order"
	for mod in virtio_pci 9pnet_virtio 9p; do
		module_closure "$version" "$mod"
	done | awk '!seen[$0]++' | while read -r mod; do
		cp "$mod" "$root/modules/"
		basename "$mod" >>"$root/modules/load-order"
	done
	install -m 0755 "$here/initramfs-init" "$root/init"
	(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$vm_dir/initramfs.cpio.gz.tmp"
	mv "$vm_dir/initramfs.cpio.gz.tmp" "$vm_dir/initramfs.cpio.gz"
	rm -rf "$root"
}

# The kernel the VM boots: the ELF vmlinux inside Debian's vmlinuz, unpacked here
# once.  Under TCG the kernel's own decompressor took about 5 s of every boot;
# QEMU starts an uncompressed kernel at its PVH entry point, with nothing to unpack.
# Debian 12's vmlinuz holds xz; one that holds anything else is booted as it is.
extract_vmlinux() {
	local image=$kdir/boot/vmlinuz-$1 offset
	offset=$(LC_ALL=C grep -obUa -m 1 $'\xfd7zXZ' "$image" | head -n 1 | cut -d: -f1)
	if [ -z "$offset" ]; then
		echo "vm: $(basename "$image") holds no xz stream: booting it compressed (about 5 s slower)" >&2
		return
	fi
	# xz stops at the end of its stream, before the image does: only its status counts.
	xz -dc --single-stream < <(tail -c +$((offset + 1)) "$image") >"$vm_dir/vmlinux.tmp" ||
		die "could not unpack the kernel from $image with xz"
	mv "$vm_dir/vmlinux.tmp" "$vm_dir/vmlinux"
}

# The kernel calls /proc/sys/kernel/modprobe for its own module requests
# (rdma_rxe asks for crc32 when a link is added); point it at the unpacked tree.
write_modprobe_wrapper() {
	cat >"$vm_dir/modprobe" <<EOF
#!/bin/sh
exec /sbin/modprobe -d '$kdir' "\$@"
EOF
	chmod 0755 "$vm_dir/modprobe"
}

for tool in apt-cache apt-get dpkg-deb depmod gzip xz busybox qemu-system-x86_64; do
	command -v "$tool" >/dev/null || die "'$tool' not found: run 'make deps' (as root) first"
done

pkg=$("$here/kernel-package.sh")
[ -n "$pkg" ] || die "apt knows no linux-image-amd64 package. Run 'apt-get update' as root, then retry."
version=${pkg#linux-image-}

if [ "$(cat "$vm_dir/kernel.version" 2>/dev/null)" != "$version" ] || [ ! -d "$kdir" ]; then
	deb=$(fetch_kernel "$pkg")
	echo "vm: unpacking $(basename "$deb")" >&2
	unpack_kernel "$deb" "$version"
	rm -f "$vm_dir/initramfs.cpio.gz" "$vm_dir/vmlinux"
	echo "$version" >"$vm_dir/kernel.version"
fi
[ -f "$vm_dir/vmlinux" ] || extract_vmlinux "$version"
if [ ! -f "$vm_dir/initramfs.cpio.gz" ] || [ "$here/initramfs-init" -nt "$vm_dir/initramfs.cpio.gz" ]; then
	build_initramfs "$version"
fi
write_modprobe_wrapper
ln -sf "kernel/boot/vmlinuz-$version" "$vm_dir/vmlinuz"
