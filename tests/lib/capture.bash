# capture.bash: start tcpdump in the background and wait until it listens; sourced by tests/wire/node.sh and tests/nodes/node.sh in the VMs.

# Starts tcpdump ARGS... on RDMA_STEPS_NETDEV, its messages to LOG, and sets capture to its
# pid.  Returns 0 once tcpdump says it is listening (packets sent before that are lost),
# or 1 after 10 s, having said why.  The caller defines say.
start_tcpdump() { # LOG ARGS...
	local log=$1
	shift
	tcpdump -i "$RDMA_STEPS_NETDEV" -n -Z root "$@" 2>"$log" &
	capture=$!
	for _ in $(seq 1 100); do
		grep -q 'listening on' "$log" && return 0
		sleep 0.1
	done
	say "tcpdump did not start: $(cat "$log")"
	return 1
}
