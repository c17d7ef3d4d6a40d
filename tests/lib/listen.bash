# listen.bash: whether a TCP port listens, and a bounded wait until it does; sourced wherever a client must not race its server.

# Whether a socket listens on TCP port PORT, from /proc/net/tcp and tcp6 (state 0A
# is LISTEN), with no process started, which in the VM costs more than the look;
# else whether a cm_id listens through rdma_cm on that port (--cm, rping -s), from
# the kernel's list of them.
port_listening() { # PORT
	local hex table local_addr state line
	printf -v hex '%04X' "$1"
	for table in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$table" ] || continue
		while read -r _ local_addr _ state _; do
			[ "${local_addr##*:}" = "$hex" ] && [ "$state" = 0A ] && return 0
		done <"$table"
	done
	while read -r line; do
		[[ "$line " == *"state LISTEN "*":$1 "* ]] && return 0
	done < <(rdma resource show cm_id 2>/dev/null)
	return 1
}

# Waits up to SECONDS for PORT to listen, looking every 0.1 s (with nap where the
# caller has it, else sleep).  Returns 0 once it listens, 1 at the deadline, and 2
# as soon as PID (the server, if given) has ended without listening.
wait_listening() { # PORT SECONDS [PID]
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		port_listening "$1" && return 0
		[ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 2
		if declare -F nap >/dev/null; then nap 0.1; else sleep 0.1; fi
	done
	return 1
}
