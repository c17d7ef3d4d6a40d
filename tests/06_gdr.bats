#!/usr/bin/env bats
# 06_gdr.bats: step 06 moves GPU memory along TCP, RDMA and GPUDirect RDMA, counting each side's extra copies.

setup() {
	load lib/test_helper
	NOCUDA=$PROJECT_ROOT/build/nocuda/bin/06_gdr
}

# Checks both sides' lines for the three paths in emulation: 2, 1 and 0 extra copies, intact bytes.
assert_three_paths_emulated() {
	local size=$1
	assert_both_succeeded
	use_output_of srv
	assert_line --regexp "^path tcp +: sender, 2 extra copies: GPU->host \(emulated cudaMemcpy\), host->kernel \(send\); $size bytes in [0-9]+ us \[emulated GPU memory\]$"
	assert_line --regexp "^path rdma +: sender, 1 extra copy: GPU->host \(emulated cudaMemcpy\); $size bytes in [0-9]+ us \[emulated GPU memory\]$"
	assert_line --regexp "^path gdr +: sender, 0 extra copies; $size bytes in [0-9]+ us \[emulated GPU memory\]$"
	use_output_of cli
	assert_line --regexp "^path tcp +: receiver, 2 extra copies: kernel->host \(recv\), host->GPU \(emulated cudaMemcpy\); $size bytes in [0-9]+ us, data intact \[emulated GPU memory\]$"
	assert_line --regexp "^path rdma +: receiver, 1 extra copy: host->GPU \(emulated cudaMemcpy\); $size bytes in [0-9]+ us, data intact \[emulated GPU memory\]$"
	assert_line --regexp "^path gdr +: receiver, 0 extra copies; $size bytes in [0-9]+ us, data intact \[emulated GPU memory\]$"
	for side in srv cli; do
		use_output_of "$side"
		for path in tcp rdma gdr; do
			assert_line --regexp "^cpu $path +: (sender|receiver), user [0-9]+ us, system [0-9]+ us in those [0-9]+ us \(getrusage: this process\)$"
		done
		assert_line --regexp '^GPU memory MR +: registered the emulated GPU buffer directly \(lkey 0x[0-9a-f]+\)'
		assert_line --regexp '^GPUDirect RDMA +: not shown here: GPU memory is emulated'
		refute_output --partial 'GPUDirect RDMA       : in use'
		# The QP goes before the GPU MR that a posted receive may point into.
		assert_in_order '^== teardown: the QP first' '^ibv_destroy_qp ' '^ibv_destroy_cq ' '^ibv_dereg_mr ' '^ibv_dereg_mr ' '^ibv_dealloc_pd ' '^ibv_close_device '
	done
}

@test "06_gdr in emulation: each path delivers intact bytes with 2, 1 and 0 extra copies per side" {
	record_baseline
	run_server_client 06_gdr -s 256K
	assert_three_paths_emulated 262144
	use_output_of srv
	assert_line --regexp '^GPU memory +: emulated by a separate host buffer \(.+\)$'
	assert_back_to_baseline
}

@test "06_gdr: the build without CUDA and the build with the toolkit but no driver both run" {
	[ -x "$NOCUDA" ] || fail "$NOCUDA is missing: 'make test' builds it (make nocuda)"
	record_baseline
	run_server_client "$NOCUDA" -s 64K --path all
	assert_three_paths_emulated 65536
	assert_line --regexp '^GPU memory +: emulated by a separate host buffer \(this build has no CUDA: no toolkit at build time, or CUDA=0\)$'
	# The default build prints why it emulates before it looks for a device.
	run_step 06_gdr -d no_such_dev
	assert_failure 1
	if nm "$BIN/06_gdr" | grep -q ' cudaGetDeviceCount$'; then
		# Built with the CUDA toolkit: with no driver it still starts, and says so.
		[ -e /dev/nvidiactl ] ||
			assert_line 'GPU memory          : emulated by a separate host buffer (cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (CUDA error 35))'
	else
		assert_line --regexp '^GPU memory +: emulated by a separate host buffer \(this build has no CUDA'
	fi
	assert_back_to_baseline
}

@test "06_gdr with a real GPU on rxe: the gdr path falls back, says why, and counts its staging copies" {
	[ -e /dev/nvidiactl ] || skip "no NVIDIA GPU and driver here (no /dev/nvidiactl): this check needs a real GPU"
	rxe_behaviour "rxe cannot register GPU memory (ibv_reg_dmabuf_mr refused), so the gdr path falls back to staging; a ConnectX beside the GPU registers it and moves it with no copy"
	record_baseline
	run_server_client 06_gdr -s 1M --path gdr
	assert_both_succeeded
	for side in srv cli; do
		use_output_of "$side"
		assert_line --regexp '^GPU memory +: real \(CUDA device 0: '
		assert_line --regexp '^ibv_reg_dmabuf_mr +: refused: '
		assert_line --regexp '^GPUDirect RDMA +: not available: '
		assert_line --regexp '^path gdr +: (sender|receiver), 1 extra copy: .*cudaMemcpy\).*fell back to staging through host memory \[real GPU memory\]$'
	done
	assert_back_to_baseline
}

@test "06_gdr --help says how to confirm GPUDirect RDMA; a bad --path, sides given different options, more pinned memory than the memlock limit allows, or a message longer than the port's are refused" {
	run_step 06_gdr --help
	assert_success
	for text in 'DMA-BUF (recommended)' 'lsmod | grep nvidia_peermem' 'NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET' 'NCCL_IB_DISABLE=1' \
		'NCCL_NET_GDR_LEVEL=PIX|PXB|PHB|SYS' 'nvidia-smi topo -m' 'PCIe ACS' '--path'; do
		assert_output --partial -- "$text"
	done
	run_step 06_gdr --path nvlink
	assert_failure 2
	assert_output "error: --path: unknown path 'nvlink'; use tcp, rdma, gdr or all"
	# Sides given a different -s or --path stop before any path runs, naming both.
	record_baseline
	assert_options_refused 06_gdr "-s 64K" "-P all -s 65536" "-s 128K" "-P all -s 131072"
	assert_options_refused 06_gdr "-P tcp" "-P tcp -s 1048576" "-P gdr" "-P gdr -s 1048576"
	# The emulated GPU buffer is host memory, registered as a second MR: a memlock limit that
	# holds the staging buffer alone (1.5 MiB, without CAP_IPC_LOCK) refuses both before any.
	STEP_PREFIX=$(memlock_prefix 1572864) run_step 06_gdr -d "$DEV" 127.0.0.1
	assert_failure 1
	assert_output --partial "error: -s 1048576 (the staging buffer and the emulated GPU buffer, each its own MR) asks to pin 2097152 bytes, but RLIMIT_MEMLOCK allows 1572864 (0 pinned already), and this process has no CAP_IPC_LOCK to pass it: raise it with 'ulimit -l' (KiB, or unlimited) or 'memlock' in /etc/security/limits.conf, run with CAP_IPC_LOCK (root has it), or give a smaller -s"
	refute_output --partial 'ibv_reg_mr'
	# A port whose messages are shorter than -s (the test aid): refused before anything is registered.
	RDMA_STEPS_CAPS=max_msg_sz=4096 run_step 06_gdr -d "$DEV" 127.0.0.1
	assert_failure 1
	assert_line "error: -s 1048576 asks for 1048576 bytes in one message, but $DEV allows 4096 (max_msg_sz of port 1); use -s 4096 or less"
	refute_output --partial 'ibv_reg_mr'
	assert_back_to_baseline
}

@test "06_gdr: a client that takes the exchange and then stops reading cannot hang the TCP sender past -t" {
	record_baseline
	port=$(pick_port)
	start_step srv 06_gdr -d "$DEV" -p "$port" -t 3 -P tcp -s 8M
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	exec 5<>"/dev/tcp/127.0.0.1/$port"
	# Play a well-formed client: send the server's own message back (so its options match
	# and RTR succeeds), answer the barrier before the tcp path, then read nothing more.
	head -c 96 <&5 >"$BATS_TEST_TMPDIR/own.msg"
	cat "$BATS_TEST_TMPDIR/own.msg" >&5
	head -c 1 <&5 >"$BATS_TEST_TMPDIR/tag"
	cat "$BATS_TEST_TMPDIR/tag" >&5
	start=$SECONDS
	finish_step srv "$srv_pid"
	exec 5>&-
	assert_failure 1
	assert_output --partial "error: the peer did not take our message within $((3 * TIME_SCALE)) s"
	[ $((SECONDS - start)) -lt $((15 * TIME_SCALE)) ] || fail "the sender gave up after $((SECONDS - start)) s, not about 3"
	assert_in_order '^ibv_destroy_qp ' '^ibv_dereg_mr ' '^ibv_close_device '
	assert_back_to_baseline
}
