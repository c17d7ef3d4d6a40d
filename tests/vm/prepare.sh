#!/usr/bin/env bash
# prepare.sh: fetch Debian's kernel into the build tree and build the test VM's initramfs.
#
# Usage: tests/vm/prepare.sh VM_DIR
#
# Nothing is installed on the host: the kernel's packages are downloaded with
# apt-get download, unpacked with dpkg-deb -x into VM_DIR/kernel, and its
# modules are indexed with depmod -b.  The initramfs holds a static busybox,
# the modules needed to mount the host's root over 9p, and tests/vm/initramfs-init.
# Which kernel: RDMA_VM_KERNEL (tests/vm/kernel-choice.bash): unset, the host's own
# apt's; a suite such as trixie-backports, that suite's on the host's own mirror,
# through an apt configuration of VM_DIR's own (VM_DIR/apt), never the host's.
set -euo pipefail

vm_dir=${1:?usage: prepare.sh VM_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$vm_dir"
vm_dir=$(cd "$vm_dir" && pwd)
cache=$vm_dir/cache
kdir=$vm_dir/kernel

die() { echo "vm: $*" >&2; exit 1; }

# apt-get or apt-cache (the first argument) with the host's apt, or, for another
# suite, with VM_DIR's own configuration: the host's mirror, that suite's lists.
apt_for_kernel() {
	local tool=$1
	shift
	if [ -z "$suite" ]; then
		"$tool" "$@"
		return
	fi
	"$tool" -o Dir::Etc::sourcelist="$vm_dir/apt/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$vm_dir/apt/lists" -o Dir::Cache="$vm_dir/apt/cache" \
		-o Debug::NoLocking=1 "$@"
}

# VM_DIR's own apt configuration for SUITE, on the mirror the host's apt uses for
# its main suite, signed by the host's keyring (Debian 12's holds Debian 13's keys).
# Its lists are fetched again once a day at most.
suite_lists() {
	local mirror
	mkdir -p "$vm_dir/apt/lists/partial" "$vm_dir/apt/cache/archives/partial"
	if [ -z "$(find "$vm_dir/apt/updated" -mmin -1440 2>/dev/null)" ]; then
		# shellcheck disable=SC2016  # apt's own $(FIELD) syntax, not the shell's
		mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
			awk '$2 !~ /-/ && $1 ~ /debian\/?$/ { print $1; exit }')
		[ -n "$mirror" ] || die "the host's apt lists no Debian mirror to fetch $suite's kernel from. Run 'apt-get update' as root, then retry."
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" >"$vm_dir/apt/sources.list"
		echo "vm: reading $suite's package lists from $mirror" >&2
		apt_for_kernel apt-get update >"$vm_dir/apt/update.log" 2>&1 ||
			die "apt-get update for $suite failed: $(tail -n 3 "$vm_dir/apt/update.log")"
		touch "$vm_dir/apt/updated"
	fi
}

# The kernel's packages for VERSION: linux-image-VERSION up to Linux 6.x; from 7.x
# on that is a metapackage, and the kernel is in linux-binary-VERSION, its modules
# in linux-modules-VERSION, and modules.builtin in linux-base-VERSION.
kernel_packages() {
	local version=$1
	if apt_for_kernel apt-cache show "linux-binary-$version" >/dev/null 2>&1; then
		echo "linux-base-$version linux-binary-$version linux-modules-$version"
	else
		echo "linux-image-$version"
	fi
}

# Each package's .deb in the cache, downloaded the first time.
fetch_kernel() {
	local pkg deb
	mkdir -p "$cache"
	for pkg in "$@"; do
		deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)
		if [ -z "$deb" ]; then
			echo "vm: downloading $pkg (apt-get download)" >&2
			(cd "$cache" && apt_for_kernel apt-get download "$pkg" >/dev/null 2>"$cache/download.log") ||
				die "apt-get download $pkg failed: $(tail -n 3 "$cache/download.log"). Run 'apt-get update' as root, then retry."
			deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)
		fi
		echo "$deb"
	done
}

unpack_kernel() {
	local version=$1 deb
	shift
	rm -rf "$kdir.tmp"
	mkdir -p "$kdir.tmp"
	for deb in "$@"; do
		dpkg-deb -x "$deb" "$kdir.tmp"
	done
	# Newer packages ship modules under usr/lib; modprobe -d looks in lib/.
	if [ ! -d "$kdir.tmp/lib/modules" ] && [ -d "$kdir.tmp/usr/lib/modules" ]; then
		ln -s usr/lib "$kdir.tmp/lib"
	fi
	# 7.x keeps the kernel beside its modules; boot/ is where 6.x has it and the rest of this looks.
	if [ ! -f "$kdir.tmp/boot/vmlinuz-$version" ] && [ -f "$kdir.tmp/lib/modules/$version/vmlinuz" ]; then
		mkdir -p "$kdir.tmp/boot"
		ln -s "../lib/modules/$version/vmlinuz" "$kdir.tmp/boot/vmlinuz-$version"
	fi
	[ -f "$kdir.tmp/boot/vmlinuz-$version" ] || die "$* hold no vmlinuz for $version"
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
		# busybox's insmod takes only plain modules: 7.x ships them as .ko.xz.
		case $mod in
		*.xz) xz -dc "$mod" >"$root/modules/$(basename "$mod" .xz)" ;;
		*) cp "$mod" "$root/modules/" ;;
		esac
		basename "${mod%.xz}" >>"$root/modules/load-order"
	done
	install -m 0755 "$here/initramfs-init" "$root/init"
	(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$vm_dir/initramfs.cpio.gz.tmp"
	mv "$vm_dir/initramfs.cpio.gz.tmp" "$vm_dir/initramfs.cpio.gz"
	rm -rf "$root"
}

# The kernel the VM boots: the ELF vmlinux inside Debian's vmlinuz, unpacked here
# once.  Under TCG the kernel's own decompressor took about 5 s of every boot;
# QEMU starts an uncompressed kernel at its PVH entry point, with nothing to unpack.
# Debian 12's vmlinuz holds xz, 7.x's zstd; one that holds neither is booted as it is.
extract_vmlinux() {
	local image=$kdir/boot/vmlinuz-$1 magic tool offset=
	for magic in xz zstd; do
		case $magic in
		xz) offset=$(LC_ALL=C grep -obUa -m 1 $'\xfd7zXZ' "$image" | head -n 1 | cut -d: -f1) || true ;;
		zstd) offset=$(LC_ALL=C grep -obUa -m 1 $'\x28\xb5\x2f\xfd' "$image" | head -n 1 | cut -d: -f1) || true ;;
		esac
		tool=$magic
		[ -n "$offset" ] && break
	done
	if [ -z "$offset" ] || ! command -v "$tool" >/dev/null; then
		echo "vm: $(basename "$image") holds no xz stream, or no zstd to unpack one: booting it compressed (about 5 s slower)" >&2
		return
	fi
	# Each tool stops at the end of its stream, before the image does, and zstd then
	# complains of what follows: what it wrote counts, an ELF file or nothing.
	"$tool" -dc < <(tail -c +$((offset + 1)) "$image") >"$vm_dir/vmlinux.tmp" 2>/dev/null || true
	[ "$(head -c 4 "$vm_dir/vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
		die "could not unpack the kernel from $image with $tool"
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

# shellcheck source=tests/vm/kernel-choice.bash
. "$here/kernel-choice.bash"
vm_kernel_dir "$here/../.." >/dev/null || exit 1
suite=${RDMA_VM_KERNEL:-}
if [ -z "$suite" ]; then
	pkg=$("$here/kernel-package.sh")
	[ -n "$pkg" ] || die "apt knows no linux-image-amd64 package. Run 'apt-get update' as root, then retry."
else
	suite_lists
	pkg=$(apt_for_kernel apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	[ -n "$pkg" ] || die "RDMA_VM_KERNEL=$suite: the mirror's $suite has no linux-image-amd64 (see $vm_dir/apt/update.log)"
fi
version=${pkg#linux-image-}

if [ "$(cat "$vm_dir/kernel.version" 2>/dev/null)" != "$version" ] || [ ! -d "$kdir" ]; then
	# shellcheck disable=SC2046  # one word a package
	mapfile -t debs < <(fetch_kernel $(kernel_packages "$version")) || exit 1
	[ ${#debs[@]} -gt 0 ] || exit 1
	echo "vm: unpacking $(basename -a "${debs[@]}" | paste -sd' ')" >&2
	unpack_kernel "$version" "${debs[@]}"
	rm -f "$vm_dir/initramfs.cpio.gz" "$vm_dir/vmlinux"
	echo "$version" >"$vm_dir/kernel.version"
fi
[ -f "$vm_dir/vmlinux" ] || extract_vmlinux "$version"
if [ ! -f "$vm_dir/initramfs.cpio.gz" ] || [ "$here/initramfs-init" -nt "$vm_dir/initramfs.cpio.gz" ]; then
	build_initramfs "$version"
fi
write_modprobe_wrapper
ln -sf "kernel/boot/vmlinuz-$version" "$vm_dir/vmlinuz"
