# harness.bash: the set-up of a slow check whose harness boots its VMs once for the whole file; loaded by tests/slow/wire.bats, nodes.bats and nodes8.bats in setup_file.

# Runs HARNESS OUT_DIR [ARG...] and keeps OUT_DIR under the check's results as NAME (for
# the book's figures and a look after a failure); if it failed, shows what it printed and fails.
boot_harness_once() { # HARNESS OUT_DIR NAME [ARG...]
	local status=0
	"$1" "$2" "${@:4}" >"$BATS_FILE_TMPDIR/$3.out" 2>&1 || status=$?
	# Kept whether or not it passed: after a failure, each node's logs say why.
	mkdir -p "$RDMA_STEPS_RESULTS/$3"
	cp -a "$2/." "$RDMA_STEPS_RESULTS/$3/" 2>/dev/null
	if [ "$status" != 0 ]; then
		# To standard output, which bats shows after "setup_file failed" (where
		# tests/tools/failures.sh, and so CI's excerpt, finds it): its end says why.
		cp "$BATS_FILE_TMPDIR/$3.out" "$RDMA_STEPS_RESULTS/$3/harness.out"
		echo "the harness failed (exit $status); the end of what it printed (all of it: $RDMA_STEPS_RESULTS/$3/harness.out):"
		tail -n 40 "$BATS_FILE_TMPDIR/$3.out"
		return 1
	fi
}
