#!/usr/bin/env bash
# kernel-package.sh: print the package that linux-image-amd64 points at (the test VM's kernel), or nothing if apt knows none.
#
# apt-cache takes about a second where apt keeps no package cache on disk (as in
# Debian's container images), and make demo and make test asked it twice per run.
# Its answer changes only when apt's lists do, so it is kept in
# build/vm/kernel.package and asked again only when /var/lib/apt/lists is newer.
set -uo pipefail
saved=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/vm/kernel.package
lists=/var/lib/apt/lists

if [ -s "$saved" ] && [ "$saved" -nt "$lists" ]; then
	cat "$saved"
	exit 0
fi
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
[ -n "$pkg" ] || exit 0
# Kept where the build tree is writable; where it is not (another user's tree), only slower.
{ mkdir -p "${saved%/*}" && echo "$pkg" >"$saved.tmp" && mv "$saved.tmp" "$saved"; } 2>/dev/null
echo "$pkg"
