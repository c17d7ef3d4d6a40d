setup() {
	load test_helper
	load ring
}
@test "measure" {
	STEP_TIMEOUT=300
	for n in 2 3 4; do
		run_ring $n -t 60 --transport both -b 64K --maxbytes 4M -f 4 -n 5 -w 1
		echo "=== N=$n status ${ring_status[*]}" >> "$RDMA_STEPS_RESULTS/measure.txt"
		grep -v "^ibv_\|^lkey\|^rkey\|^VmPin\|^buffer\|^access\|^RLIMIT\|QP \|buffer \|^rendezvous\|^== \|^GID\|^launcher\|^$\|^teardown\|^tcp ring" "$BATS_TEST_TMPDIR/r0.out" >> "$RDMA_STEPS_RESULTS/measure.txt"
	done
}
