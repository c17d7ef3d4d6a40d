# wire-port.bash: the TCP ports on 127.0.0.1 that join the nodes' NICs (QEMU's socket backend), and each node's vCPUs; sourced by tests/vm/boot-nodes.sh (the hub).
# Node 1's QEMU listens on them once started, so the other nodes wait for theirs with wait_listening (tests/lib/listen.bash).

# The first of COUNT ports in a row (default 1) in 20000-29999 that nothing listens on.
wire_free_port() {
	local count=${1:-1} port k
	for port in $(shuf -i 20000-29990 -n 20); do
		for ((k = 0; k < count; k++)); do
			[ -z "$(ss -Hltn "sport = :$((port + k))")" ] || continue 2
		done
		echo "$port"
		return 0
	done
	return 1
}

# vCPUs per node for N nodes (RDMA_VM_CPUS wins): two nodes have 2 each, as one VM
# has; three or four have 1 each, so that their vCPUs are not many more than the cores.
node_cpus() {
	if [ -n "${RDMA_VM_CPUS:-}" ]; then echo "$RDMA_VM_CPUS"; elif [ "$1" = 2 ]; then echo 2; else echo 1; fi
}

# shellcheck source=tests/lib/listen.bash
. "$(dirname "${BASH_SOURCE[0]}")/../lib/listen.bash"
