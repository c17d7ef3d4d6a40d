# nap.bash: nap SECONDS, a pause that starts no process; sourced by tests/tools/demo.sh and tests/lib/test_helper.bash.
#
# A read that times out on a fifo nobody writes to: in the VM, sleep's fork and
# exec cost more than the pause.  The fifo is made in $NAP_DIR at the first nap.
nap() {
	if [ -z "${nap_fd:-}" ]; then
		mkfifo "$NAP_DIR/nap"
		exec {nap_fd}<>"$NAP_DIR/nap"
	fi
	read -r -t "$1" -u "$nap_fd" _ || return 0
}
