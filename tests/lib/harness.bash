# harness.bash: the set-up of a slow check whose harness boots its VMs once for the whole file; loaded by tests/slow/wire.bats and nodes.bats in setup_file.

# Runs HARNESS OUT_DIR; if it fails, shows what it printed and fails.  Then keeps OUT_DIR
# under the check's results as NAME (for the book's figures and a look after a failure).
boot_harness_once() { # HARNESS OUT_DIR NAME
	"$1" "$2" >"$BATS_FILE_TMPDIR/$3.out" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/$3.out" >&3
		return 1
	}
	mkdir -p "$RDMA_STEPS_RESULTS/$3"
	cp -a "$2/." "$RDMA_STEPS_RESULTS/$3/"
}
