# perftest.bash: perftest_client, a perftest client started again while its server does not yet listen; sourced by tests/bench/nodes/job.sh and tests/lossy/node.sh in the nodes.

# Runs COMMAND... (a perftest client), its output to LOG; a client refused before its server
# listens tries again, for up to a minute.  Returns the last try's exit status.
perftest_client() { # LOG COMMAND...
	local log=$1 status
	shift
	for _ in $(seq 1 120); do
		timeout -k 5 120 "$@" >"$log" 2>&1
		status=$?
		[ "$status" = 0 ] && return 0
		grep -qE "Couldn't connect|Connection refused|Unable to init the socket connection" "$log" || return "$status"
		sleep 0.5
	done
	return "$status"
}
