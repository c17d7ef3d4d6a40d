# wire-port.bash: the TCP port on 127.0.0.1 that joins two nodes' NICs (QEMU's socket backend); sourced by two-nodes.sh and tests/wire/wire.sh.
# Node 1's QEMU listens on it once started, so node 2 waits for it with wait_listening (tests/listen.bash).

# A port in 20000-29999 that nothing listens on.
wire_free_port() {
	local port
	for port in $(shuf -i 20000-29999 -n 20); do
		[ -z "$(ss -Hltn "sport = :$port")" ] && { echo "$port"; return 0; }
	done
	return 1
}

# shellcheck source=tests/listen.bash
. "$(dirname "${BASH_SOURCE[0]}")/../listen.bash"
