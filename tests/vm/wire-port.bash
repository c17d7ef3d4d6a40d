# wire-port.bash: the TCP port on 127.0.0.1 that joins two nodes' NICs (QEMU's socket backend); sourced by two-nodes.sh and tests/wire/wire.sh.

# A port in 20000-29999 that nothing listens on.
wire_free_port() {
	local port
	for port in $(shuf -i 20000-29999 -n 20); do
		[ -z "$(ss -Hltn "sport = :$port")" ] && { echo "$port"; return 0; }
	done
	return 1
}

# Node 1's QEMU listens on PORT once started; node 2 can only connect then.  Waits up to
# SECONDS; with PID, gives up as soon as that process (node 1's) has ended.
wire_wait_listening() { # PORT SECONDS [PID]
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -n "$(ss -Hltn "sport = :$1")" ] && return 0
		[ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
