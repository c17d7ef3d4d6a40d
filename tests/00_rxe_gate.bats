#!/usr/bin/env bats
# 00_rxe_gate.bats: the suite's rxe gate (test_helper's on_rxe and rxe_behaviour) on made-up sysfs trees: an rxe device runs every test, a ConnectX and a software device that is not rxe skip what is rxe's, naming the device, its driver and why.
# Needs no RDMA device: it reads sysfs trees it builds, through RDMA_STEPS_SYSFS.
# bats file_tags=outside-vm

setup() {
	load lib/test_helper
	sys=$BATS_TEST_TMPDIR/sys
	mkdir -p "$sys/class/infiniband"
	# A bats file of two tests: one gated whole, one with a single assertion gated.  Its
	# "@test" lines are written ${at}test: bats would take them for this file's own.
	probe=$BATS_TEST_TMPDIR/probe.bats at=@
	cat >"$probe" <<-PROBE
		setup() { load "$PROJECT_ROOT/tests/lib/test_helper"; }
		${at}test "a test of what rxe does" {
			rxe_behaviour "rxe counts sent_pkts; a ConnectX counts port_xmit_packets"
			echo "whole test ran" >>"\$MARKS"
		}
		${at}test "a test with one assertion of rxe's" {
			if on_rxe; then echo "gated assertion ran" >>"\$MARKS"; fi
			echo "the rest ran" >>"\$MARKS"
		}
	PROBE
}

# A device DEV as Linux lays it out: under /sys/devices at PATH, linked from /sys/class/infiniband,
# with NODE_TYPE; the other files and links are the caller's.
make_device() { # DEV PATH NODE_TYPE
	mkdir -p "$sys/$2/infiniband/$1"
	echo "$3" >"$sys/$2/infiniband/$1/node_type"
	ln -s "../../$2/infiniband/$1" "$sys/class/infiniband/$1"
}

# Runs the probe file with RDMA_DEV=DEV on the made-up tree; its TAP in output, what ran in marks.
run_probe() { # DEV
	MARKS=$BATS_TEST_TMPDIR/marks.$1
	: >"$MARKS"
	# A clean environment: the BATS_ variables of this run would steer the inner one, and
	# this run's PATH finds bats' libexec script, not its front, first.
	local front=${BATS_ROOT:+$BATS_ROOT/bin/bats}
	[ -x "${front:-}" ] || front=$(command -pv bats) || fail "no bats on the default PATH"
	run env -i PATH="$PATH" HOME="$HOME" LC_ALL=C BATS_LIB_PATH="${BATS_LIB_PATH:-/usr/lib/bats}" \
		MARKS="$MARKS" RDMA_DEV="$1" RDMA_STEPS_SYSFS="$sys" "$front" --tap "$probe"
	mapfile -t marks <"$MARKS"
}

@test "on rxe (no parent device, rxe's own 'parent' attribute, a CA) the gate does nothing: both tests run whole" {
	make_device rxe0 devices/virtual 1: CA
	echo eth0 >"$sys/devices/virtual/infiniband/rxe0/parent"
	run_probe rxe0
	assert_success
	assert_line 'ok 1 a test of what rxe does'
	assert_line "ok 2 a test with one assertion of rxe's"
	refute_output --partial '# skip'
	[ "${marks[*]}" = "whole test ran gated assertion ran the rest ran" ] || fail "what ran: ${marks[*]}"
	DEV=rxe0 SYSFS=$sys on_rxe || fail "on_rxe is false for rxe0"
	[ "$(DEV=rxe0 SYSFS=$sys rdma_dev_driver)" = "rxe0 (rxe, soft-RoCE)" ] || fail "rdma_dev_driver: $(DEV=rxe0 SYSFS=$sys rdma_dev_driver)"
}

@test "on a ConnectX (a PCI function whose driver is mlx5_core) the gate skips the rxe test, naming the device, its driver and why, and runs the rest of the other" {
	pci=devices/pci0000:00/0000:00:02.0/0000:03:00.0
	make_device mlx5_0 "$pci" 1: CA
	mkdir -p "$sys/bus/pci/drivers/mlx5_core"
	ln -s ../.. "$sys/$pci/infiniband/mlx5_0/device"
	ln -s ../../../../bus/pci/drivers/mlx5_core "$sys/$pci/driver"
	[ "$(readlink -f "$sys/class/infiniband/mlx5_0/device/driver")" = "$(readlink -f "$sys/bus/pci/drivers/mlx5_core")" ] ||
		fail "the made-up tree is wrong: $(readlink -f "$sys/class/infiniband/mlx5_0/device/driver")"
	run_probe mlx5_0
	assert_success
	assert_line "ok 1 a test of what rxe does # skip rxe's behaviour, not the verbs': mlx5_0 (driver mlx5_core) is not rxe: rxe counts sent_pkts; a ConnectX counts port_xmit_packets"
	assert_line "ok 2 a test with one assertion of rxe's"
	[ "${marks[*]}" = "the rest ran" ] || fail "what ran: ${marks[*]}"
	# A hardware device with an attribute named parent is still not rxe: its "device" link decides.
	echo eth0 >"$sys/$pci/infiniband/mlx5_0/parent"
	! DEV=mlx5_0 SYSFS=$sys on_rxe || fail "on_rxe is true for mlx5_0 with a parent attribute"
	[ "$(DEV=mlx5_0 SYSFS=$sys rdma_dev_driver)" = "mlx5_0 (driver mlx5_core)" ] || fail "rdma_dev_driver: $(DEV=mlx5_0 SYSFS=$sys rdma_dev_driver)"
}

@test "on a software device that is not rxe (no parent device, an iWARP node) the gate skips the rxe test, and says it found no driver" {
	make_device siw0 devices/virtual 4: RNIC
	echo eth0 >"$sys/devices/virtual/infiniband/siw0/parent"
	run_probe siw0
	assert_success
	assert_line "ok 1 a test of what rxe does # skip rxe's behaviour, not the verbs': siw0 (no driver in sysfs: a software device that is not rxe) is not rxe: rxe counts sent_pkts; a ConnectX counts port_xmit_packets"
	assert_line "ok 2 a test with one assertion of rxe's"
	[ "${marks[*]}" = "the rest ran" ] || fail "what ran: ${marks[*]}"
	# A device the tree does not hold at all is not rxe either.
	! DEV=mlx5_9 SYSFS=$sys on_rxe || fail "on_rxe is true for a device sysfs does not list"
	[ "$(DEV=mlx5_9 SYSFS=$sys rdma_dev_driver)" = "mlx5_9 (no driver in sysfs: a software device that is not rxe)" ] || fail "rdma_dev_driver: $(DEV=mlx5_9 SYSFS=$sys rdma_dev_driver)"
}
