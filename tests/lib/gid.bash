# gid.bash: the GID table of an RDMA device's port 1, read from sysfs; sourced by tests/lib/test_helper.bash and tests/bench/bench.sh.

# "INDEX GID" for every GID in use on port 1 of DEV (one grep: forks are slow in the VM).
sysfs_gids_in_use() { # DEV
	grep -H . /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null |
		sed -E 's|.*/gids/([0-9]+):|\1 |' | grep -v ' 0000:0000:0000:0000:0000:0000:0000:0000$' | sort -n
}

# The index of DEV's first RoCE v2 GID with an IPv4-mapped address: the one our programs
# choose, and the one to give perftest's and rdma-core's tools with -x or -g.
sysfs_ipv4_mapped_gid_index() { # DEV
	local i gid
	while read -r i gid; do
		case $gid in
		0000:0000:0000:0000:0000:ffff:*)
			[ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i")" = "RoCE v2" ] &&
				{ echo "$i"; return 0; } ;;
		esac
	done < <(sysfs_gids_in_use "$1")
	return 1
}
