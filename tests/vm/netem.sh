#!/usr/bin/env bash
# netem.sh: loss, delay or reordering on RoCE v2 packets only (UDP port 4791), on one node's interface, through a prio qdisc and a u32 filter, so that the TCP side channel is never touched.
#
# Usage (in a node, as root: its own namespace's eth0, or a VM node's eth0):
#   tests/vm/netem.sh DEV [--uc-only] NETEM-ARGS...   e.g. eth0 loss 1%; eth0 reorder 25% 50% delay 5ms
#   tests/vm/netem.sh DEV off                          back to the interface's default qdisc
#   tests/vm/netem.sh DEV stats                        "netem: DEV sent N packets, dropped D"
# The packets this interface sends: a qdisc acts on its way out, so loss between two
# nodes needs it on both (each drops what it sends).  prio with every priority in band 2
# (1:2): the side channel and anything else go out untouched; the u32 filter sends UDP
# packets to port 4791 to band 3 (1:3), where netem is.  --uc-only narrows the filter to
# packets whose BTH opcode is of the UC class (its top three bits 001; the BTH's first byte
# is 28 bytes into an IPv4 packet without options: 20 of IP header, 8 of UDP): the data of
# a program whose control messages go over RC then still gets through, and only its UC
# data is lost.  Every change starts from the default qdisc, so the last call is what holds.
# The kernel loads sch_netem itself when tc first asks for it (the guest's modprobe helper).
set -uo pipefail
usage="usage: netem.sh DEV [--uc-only] NETEM-ARGS... | DEV off | DEV stats"
dev=${1:?$usage}
shift
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }

die() { echo "netem: $*" >&2; exit 1; }

# The netem qdisc's counters: what passed it and what it dropped, since it was added.
stats() {
	tc -s qdisc show dev "$dev" | awk -v dev="$dev" '
		/^qdisc netem / { on = 1; next }
		/^qdisc / { on = 0 }
		on && / Sent / { for (i = 1; i <= NF; i++) { if ($i == "pkt") sent = $(i - 1); if ($i == "(dropped") { d = $(i + 1); sub(/,/, "", d) } }
			found = 1 }
		END { if (!found) { print "netem: no netem qdisc on " dev > "/dev/stderr"; exit 1 }
			printf "netem: %s sent %d packets, dropped %d\n", dev, sent, d }'
}

case $1 in
off)
	tc qdisc del dev "$dev" root 2>/dev/null
	echo "netem: $dev back to its default qdisc"
	exit 0
	;;
stats)
	stats
	exit
	;;
esac
match=(match ip dport 4791 0xffff)
what="RoCE v2 (UDP port 4791)"
if [ "$1" = --uc-only ]; then
	match+=(match u8 0x20 0xe0 at 28)
	what="RoCE v2's UC packets (UDP port 4791, BTH opcode 0x20 to 0x3f)"
	shift
	[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
fi
tc qdisc del dev "$dev" root 2>/dev/null
tc qdisc add dev "$dev" root handle 1: prio bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 ||
	die "cannot add a prio qdisc on $dev"
tc qdisc add dev "$dev" parent 1:3 handle 30: netem "$@" || die "netem refused '$*' on $dev"
tc filter add dev "$dev" protocol ip parent 1:0 prio 3 u32 "${match[@]}" flowid 1:3 ||
	die "cannot add the u32 filter for $what on $dev"
echo "netem: $dev: $* on $what only; everything else untouched"
