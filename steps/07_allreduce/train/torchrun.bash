# torchrun.bash: one PyTorch job under torchrun on this machine's ranks, as make train (train.sh) launches its own and a later step's job may; sourced, it defines run_torch_job.
#
# Each rank's stdout goes to OUT/torch/.../attempt_0/K/stdout.log, its stderr to
# stderr.log and to this terminal as it comes (--redirects 1 --tee 2).  Debian 12's
# torchrun (torch 1.13, Python 3.11) fails at its defaults, "--redirects 0 --tee 0":
# Std.from_str finds no flag for 0 since Python 3.11's IntFlag.  One node: Gloo on the
# loopback, as the VM's hostname resolves to no address; one thread per rank, as
# torchrun would set.  Debian 13's torch 2.6 is built without libuv but asks for it:
# see tests/tools/torch-store/sitecustomize.py.

# Runs SCRIPT on RANKS ranks, rank 0's store on MASTER_PORT, for at most LIMIT s; prints
# rank 0's output at the end; returns torchrun's status.  From the project's root.
run_torch_job() { # NAME OUT RANKS MASTER_PORT LIMIT SCRIPT [ARG...]
	local name=$1 out=$2 ranks=$3 port=$4 limit=$5 script=$6 status log
	shift 6
	export PYTHONPATH=$PWD/tests/tools/torch-store${PYTHONPATH:+:$PYTHONPATH}
	export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
	rm -rf "$out/torch"
	echo "$name: torchrun starts $ranks ranks; under emulation each imports torch for a minute or more"
	timeout -k 5 "$limit" torchrun --nnodes 1 --nproc_per_node "$ranks" \
		--master_addr 127.0.0.1 --master_port "$port" --max_restarts 0 \
		--log_dir "$out/torch" --redirects 1 --tee 2 "$script" "$@"
	status=$?
	log=$(find "$out/torch" -path "*/attempt_0/0/stdout.log" 2>/dev/null | head -n 1)
	[ -n "$log" ] && cat "$log"
	echo "$name: torchrun exited with $status; every rank's output is under $out/torch/"
	return "$status"
}
