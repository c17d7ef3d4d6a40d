#!/usr/bin/env bats
# 01_open_pd.bats: step 01 opens the device, shows what it offers, allocates a PD and frees it all.

setup() {
	load lib/test_helper
}

@test "01_open_pd opens the device, reports it as the kernel sees it, and frees its PD" {
	record_baseline
	run_step 01_open_pd -d "$DEV"
	assert_success
	assert_line --regexp "^ibv_get_device_list +: [0-9]+ device\(s\): .*$DEV"
	assert_line --regexp "^ibv_open_device +: $DEV opened$"
	assert_line --regexp "^ibv_alloc_pd +: protection domain allocated"
	assert_line --regexp "^node GUID +: $(cat "/sys/class/infiniband/$DEV/node_guid")$"
	assert_line --regexp "^port state +: active$"
	# The active MTU agrees with rdma-core's own ibv_devinfo.
	mtu=$(ibv_devinfo -d "$DEV" -i 1 | awk '$1 == "active_mtu:" { print $2 }')
	assert_line --regexp "^active MTU +: $mtu$"
	assert_line --regexp "^max QPs +: [1-9][0-9]*$"
	assert_line --regexp "^max MR size +: [1-9][0-9]* bytes$"
	# Teardown runs in reverse order of creation: the PD goes before the device.
	assert_in_order '^ibv_alloc_pd ' '^ibv_dealloc_pd ' '^ibv_close_device '
	assert_back_to_baseline
}

@test "01_open_pd chooses the IPv4-mapped RoCE v2 GID that the kernel lists" {
	idx=$(sysfs_ipv4_mapped_gid_index "$DEV")
	[ -n "$idx" ] || fail "sysfs lists no IPv4-mapped RoCE v2 GID on $DEV: give its netdev an IPv4 address"
	addr=$(gid_to_ipv6 "$(cat "/sys/class/infiniband/$DEV/ports/1/gids/$idx")")
	run_step 01_open_pd -d "$DEV"
	assert_success
	assert_line --regexp "^  gid\[$idx\] +: ${addr//./\\.} +RoCE v2, IPv4-mapped  <- chosen$"
	assert_line "GID index chosen    : $idx (RoCE v2 $addr)"
	[ "$(grep -c '<- chosen' <<<"$output")" -eq 1 ] || fail "more than one GID marked as chosen"
}

@test "01_open_pd names the devices present when the device does not exist, and leaks nothing" {
	record_baseline
	run_step 01_open_pd -d no_such_dev
	assert_failure 1
	present=$(ls /sys/class/infiniband | paste -sd, | sed 's/,/, /g')
	assert_output --partial "error: no RDMA device named 'no_such_dev'; devices present: $present. Pick one with -d NAME"
	refute_output --partial "ibv_alloc_pd"
	assert_back_to_baseline
}

@test "01_open_pd rejects an unused GID index and bad options with a message naming the fix; the test aid RDMA_STEPS_CAPS lowers each kind of limit it knows" {
	record_baseline
	run_step 01_open_pd -d "$DEV" -x 200
	assert_failure 1
	assert_output --regexp "error: GID index 200 is (empty|past the table's end) on port 1; indexes in use: $(sysfs_gid_indexes_in_use). Pick one with -x N"
	run_step 01_open_pd -d "$DEV" -i 9
	assert_failure 1
	assert_output --partial "error: $DEV has port(s) 1 to 1, not 9. Pick one with -i N"
	run_step 01_open_pd --ib-port=abc
	assert_failure 2
	assert_output "error: --ib-port: 'abc' is not a whole number from 1 to 255"
	# sgid_index is 8 bits: a larger -x could never name the source GID of a connection.
	run_step 01_open_pd -x 256
	assert_failure 2
	assert_output "error: --gid-idx: '256' is not a whole number from 0 to 255"
	# strtol would skip the space and take the sign: a number must start with a digit.
	run_step 01_open_pd -i ' 1'
	assert_failure 2
	assert_output "error: --ib-port: ' 1' is not a whole number from 1 to 255"
	run_step 01_open_pd -i +1
	assert_failure 2
	assert_output "error: --ib-port: '+1' is not a whole number from 1 to 255"
	run_step 01_open_pd some-host
	assert_failure 2
	assert_output --partial "takes no HOST argument"
	# Each kind of limit the aid knows: a number, a size, atomic_cap by name, the window-type
	# flags, and the port's max_msg_sz; stage 1 prints the lowered MR size as its own.
	RDMA_STEPS_CAPS=max_mr_size=1M,atomic_cap=none,mem_window_type_2=0,max_msg_sz=4096 run_step 01_open_pd -d "$DEV"
	assert_success
	assert_line --regexp "^RDMA_STEPS_CAPS +: a test aid: this run sees max_mr_size 1048576 where $DEV has [1-9][0-9]*, as a smaller NIC would$"
	# What the device had is rxe's answer (IBV_ATOMIC_HCA, type 2 windows); a hardware NIC
	# reports its own (bnxt_re glob, irdma none: book/real-nic.md), so the figures are rxe's only.
	if on_rxe; then
		assert_line "RDMA_STEPS_CAPS     : a test aid: this run sees atomic_cap none where $DEV has hca, as a smaller NIC would"
		assert_line "RDMA_STEPS_CAPS     : a test aid: this run sees mem_window_type_2 0 where $DEV has 1, as a smaller NIC would"
	fi
	assert_line --regexp "^RDMA_STEPS_CAPS +: a test aid: this run sees max_msg_sz 4096 where $DEV has [1-9][0-9]*, as a smaller NIC would$"
	assert_line --regexp '^max MR size +: 1048576 bytes$'
	assert_back_to_baseline
}

@test "the suite's rxe gate agrees with the device's own answer: rxe's vendor ID is 0xffffff (RXE_VENDOR_ID in Linux's rxe_param.h), a hardware NIC's its maker's" {
	vendor=$(ibv_devinfo -d "$DEV" | awk '$1 == "vendor_id:" { print $2 }')
	[ -n "$vendor" ] || fail "ibv_devinfo -d $DEV printed no vendor_id"
	if [ "$vendor" = 0xffffff ]; then
		on_rxe || fail "$DEV reports rxe's vendor ID, but the gate reads $(rdma_dev_driver) from sysfs"
	else
		! on_rxe || fail "$DEV reports vendor ID $vendor, not rxe's, but the gate takes it for rxe"
	fi
}

@test "01_open_pd --help documents every option" {
	run_step 01_open_pd --help
	assert_success
	for opt in --ib-dev --ib-port --gid-idx --pause --help; do
		assert_output --partial -- "$opt"
	done
}
