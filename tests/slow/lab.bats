#!/usr/bin/env bats
# lab.bats: the lab loop of 'make shell': edit, rebuild and rerun a step in the same VM, on the host or in the VM itself ('make test-lab').
# It boots its own VM, the way 'make shell' does, on a copy of the project, so the real tree is never edited.
# bats file_tags=outside-vm

setup() {
	load ../lib/test_helper
	# shellcheck source=tests/vm/kernel-choice.bash
	. "$PROJECT_ROOT/tests/vm/kernel-choice.bash"
	COPY=$BATS_TEST_TMPDIR/project
	RESULTS=$BATS_TEST_TMPDIR/results
	mkdir -p "$COPY" "$RESULTS"
	# The tracked files and the current build; the VM's kernel stays where it is.
	git -C "$PROJECT_ROOT" ls-files -z | (cd "$PROJECT_ROOT" && xargs -0 cp -a --parents -t "$COPY")
	mkdir -p "$COPY/build"
	cp -a "$PROJECT_ROOT/build/bin" "$PROJECT_ROOT/build/obj" "$COPY/build/"
}

# Waits up to $2 s for the file $1 to appear.
wait_for_file() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

@test "lab: the shell banner's claims hold; a step rebuilt on the host, or with make in the VM, prints its new line in the same VM at once" {
	# The guest's side: run the step, wait for the host's rebuild, run it again; then edit
	# and rebuild in the VM itself, and run it once more.
	cat >"$COPY/lab-job.sh" <<'JOB'
#!/bin/bash
out=/run/results
# The banner of make shell, and its claims, checked where the learner meets them.
export HOME=$TMPDIR/home
mkdir -p "$HOME"
tests/vm/banner.sh >"$out/banner"
rdma resource show rxe0 >"$out/resources-at-boot"
# Address randomisation, left on as make shell leaves it: two runs place the buffer apart.
cat /proc/sys/kernel/randomize_va_space >"$out/aslr"
for k in 1 2; do build/bin/02_reg_mr -s 4K | sed -n 's/^buffer  *: 4096 bytes at \(0x[0-9a-f]*\),.*/\1/p'; done >"$out/addresses"
for dir in "$PWD" /tmp "$TMPDIR" "$HOME" /usr; do
	if touch "$dir/.lab-probe" 2>/dev/null; then echo "$dir writable"; rm -f "$dir/.lab-probe"; else echo "$dir read-only"; fi
done >"$out/writable"
# Ctrl-C on both sides of a long run, then the kernel's count.
build/bin/05_poll_destroy -p 18777 -n 1000000 >"$out/int-srv" 2>&1 &
srv=$!
sleep 1
build/bin/05_poll_destroy -p 18777 -n 1000000 127.0.0.1 >"$out/int-cli" 2>&1 &
cli=$!
sleep 3
kill -INT "$cli" "$srv"
wait "$cli" "$srv"
rdma resource show rxe0 >"$out/resources-after-ctrl-c"
# Killed outright, with no chance to release anything: the kernel does it.
build/bin/05_poll_destroy -p 18778 -n 1000000 >/dev/null 2>&1 &
srv=$!
sleep 1
build/bin/05_poll_destroy -p 18778 -n 1000000 127.0.0.1 >/dev/null 2>&1 &
cli=$!
sleep 3
rdma resource show rxe0 >"$out/resources-while-running"
kill -KILL "$cli" "$srv"
wait "$cli" "$srv"
rdma resource show rxe0 >"$out/resources-after-kill"
build/bin/01_open_pd --help | sed -n 3p >"$out/before"
touch "$out/ready"
for ((i = 0; i < 1200; i++)); do [ -e "$out/go" ] && break; sleep 0.1; done
build/bin/01_open_pd --help | sed -n 3p >"$out/after-host"
sed -i 's/Step 01 (edited on the host)/Step 01 (edited in the VM)/' steps/01_open_pd/main.c
make build/bin/01_open_pd >"$out/make.log" 2>&1
echo $? >"$out/make.status"
build/bin/01_open_pd --help | sed -n 3p >"$out/after-vm"
JOB
	chmod +x "$COPY/lab-job.sh"
	RDMA_VM_PROJECT_RW=1 RDMA_VM_ASLR=1 RDMA_VM_TIMEOUT=600 "$COPY/tests/vm/boot.sh" "$(vm_kernel_dir "$PROJECT_ROOT")" "$RESULTS" "$COPY/lab-job.sh" \
		>"$BATS_TEST_TMPDIR/boot.out" 2>&1 &
	vm=$!
	wait_for_file "$RESULTS/ready" 300 || { kill "$vm"; fail "the guest never ran the step: $(tail -n 20 "$BATS_TEST_TMPDIR/boot.out")"; }
	# The learner's edit on the host, and the host's rebuild, while the guest holds the old file in its cache.
	sed -i 's/Step 01: open an RDMA device/Step 01 (edited on the host): open an RDMA device/' "$COPY/steps/01_open_pd/main.c"
	make -s -C "$COPY" build/bin/01_open_pd >"$BATS_TEST_TMPDIR/make.out" 2>&1 || fail "the host's rebuild failed: $(cat "$BATS_TEST_TMPDIR/make.out")"
	touch "$RESULTS/go"
	wait "$vm" || fail "the VM's job failed: $(tail -n 20 "$BATS_TEST_TMPDIR/boot.out")"
	run cat "$RESULTS/banner"
	assert_line --regexp "^You are root in $COPY, the project itself, writable and uncached: edit and run$"
	assert_line --regexp "^Writable too: /tmp, /run/tmp \(TMPDIR\) and /run/tmp/home; the rest of / is the host's, read-only\.$|^Writable too: /run/tmp \(TMPDIR\) and /run/tmp/home \(/tmp is the host's, read-only\)"
	assert_line --regexp "^'rdma resource show' starts at pd 1, cq 1, qp 1: ib_core's own"
	assert_output --partial 'Ctrl-b d, fit, then'
	assert_line --regexp "^next pane, 'exit' closes one\.  Ctrl-b z zooms a pane to the whole window and$"
	assert_line --regexp '^back; Ctrl-b \[ scrolls back through its output'
	assert_line 'Address randomisation is on, as on any host: each run prints new buffer'
	run cat "$RESULTS/aslr"
	assert_output 2
	mapfile -t addresses <"$RESULTS/addresses"
	[ ${#addresses[@]} -eq 2 ] && [ "${addresses[0]}" != "${addresses[1]}" ] ||
		fail "two runs of 02_reg_mr placed the buffer at '${addresses[*]}': not two different addresses"
	run cat "$RESULTS/resources-at-boot"
	assert_output --regexp '^0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 '
	run cat "$RESULTS/writable"
	assert_line "$COPY writable"
	assert_line "/run/tmp writable"
	assert_line "/run/tmp/home writable"
	assert_line "/usr read-only"
	# The copy lives under /tmp here, so the guest keeps the host's /tmp, read-only, as the banner says.
	if [[ $COPY == /tmp/* ]]; then assert_line "/tmp read-only"; else assert_line "/tmp writable"; fi
	run cat "$RESULTS/int-cli"
	assert_output --partial 'error: stopped by SIGINT (Ctrl-C): releasing what this program created, in reverse order'
	run cat "$RESULTS/resources-after-ctrl-c"
	assert_output --regexp '^0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 '
	run cat "$RESULTS/resources-while-running"
	assert_output --regexp '^0: rxe0: pd 3 cq 3 qp 3 cm_id 0 mr 2 '
	run cat "$RESULTS/resources-after-kill"
	assert_output --regexp '^0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 '
	run cat "$RESULTS/before"
	assert_output --regexp '^Step 01: open an RDMA device'
	run cat "$RESULTS/after-host"
	assert_output --regexp '^Step 01 \(edited on the host\): open an RDMA device'
	run cat "$RESULTS/make.status"
	assert_output 0
	run cat "$RESULTS/after-vm"
	assert_output --regexp '^Step 01 \(edited in the VM\): open an RDMA device'
	# What the VM built is the host's too: the same binary, run here.
	run "$COPY/build/bin/01_open_pd" --help
	assert_line --regexp '^Step 01 \(edited in the VM\): open an RDMA device'
}

# Waits up to $3 s for pane $2 of tmux session $1 to show a line matching the regex $4.
# The VM folder of make shell NODES=N's kernel (make test-lab passes the Makefile's
# NODES_KERNEL as LAB_NODES_KERNEL), prepared (fetched the first time).
nodes_vm_dir() {
	local dir
	dir=$(RDMA_VM_KERNEL=${LAB_NODES_KERNEL?make test-lab sets it: the kernel of make shell NODES=N} vm_kernel_dir "$PROJECT_ROOT") &&
		RDMA_VM_KERNEL=$LAB_NODES_KERNEL "$PROJECT_ROOT/tests/vm/prepare.sh" "$dir" >&2 && echo "$dir"
}

wait_for_pane() { # SESSION PANE SECONDS REGEX
	local i
	for ((i = 0; i < $3 * 2; i++)); do
		tmux capture-pane -p -J -S -300 -t "$1:0.$2" 2>/dev/null | grep -qE "$4" && return 0
		sleep 0.5
	done
	return 1
}

@test "lab: make shell NODES=2 puts node 1 and node 2 side by side, namespaces of one VM, each named, and a step runs from one to the other through each node's own device" {
	vm_dir=$(nodes_vm_dir) || fail "could not prepare the kernel of make shell NODES=2"
	session=$(RDMA_LAB_DETACHED=1 "$COPY/tests/vm/nodes.sh" 2 "$vm_dir" "$RESULTS")
	[ -n "$session" ] || fail "nodes.sh started no tmux session"
	for pane in 0 1; do
		wait_for_pane "$session" $pane 300 "^root@node$((pane + 1)):" || {
			tmux capture-pane -p -J -S -300 -t "$session:0.$pane" >&3
			tmux kill-session -t "$session"
			fail "node $((pane + 1)) never showed its prompt"
		}
	done
	# Each result line follows an empty one: a command line that ends at the pane's right
	# edge is joined (capture-pane -J) to the line after it, which then is the empty one.
	# The banner's commands, each with its node's device; node 2 also counts the packets its
	# own device sent, and shows what a step opens without -d (the banner's warning).
	sent=/sys/class/infiniband/rxe2/ports/1/hw_counters/sent_pkts
	tmux send-keys -t "$session:0.0" "build/bin/04_post_wr -d rxe1 -o write > \$TMPDIR/srv.log 2>&1; s=\$?; echo; echo server-done \$s \$(grep -c '^data check .*arrived intact' \$TMPDIR/srv.log)" Enter
	tmux send-keys -t "$session:0.1" "b=\$(cat $sent); build/bin/04_post_wr -d rxe2 -o write 198.18.0.1 > \$TMPDIR/cli.log 2>&1; s=\$?; echo; echo client-done \$s \$(grep -c 'RDMA_WRITE, status success' \$TMPDIR/cli.log) rxe2-sent-more \$(( \$(cat $sent) > b )) without-d \$(build/bin/01_open_pd | sed -n 's/^ibv_open_device *: \(.*\) opened\$/\1/p')" Enter
	# The panes are read, and the VMs powered off, before any check can end the test.
	finished=yes
	wait_for_pane "$session" 0 120 '^server-done ' && wait_for_pane "$session" 1 120 '^client-done ' || finished=no
	left=$(tmux capture-pane -p -J -S -300 -t "$session:0.0")
	right=$(tmux capture-pane -p -J -S -300 -t "$session:0.1")
	tmux send-keys -t "$session:0.0" exit Enter
	tmux send-keys -t "$session:0.1" exit Enter
	for _ in $(seq 1 60); do tmux has-session -t "$session" 2>/dev/null || break; sleep 0.5; done
	# Normally both shells have powered their VMs off and the session is gone already.
	! tmux has-session -t "$session" 2>/dev/null || tmux kill-session -t "$session"
	[ "$finished" = yes ] || fail "step 04 did not finish on both nodes within 120 s: node 1: $left; node 2: $right"
	run echo "$left"
	assert_line --regexp '^NODE 1 of 2 \(node1\): rxe1 is up on eth0, 198\.18\.0\.1, wired to node 2 at 198\.18\.0\.2\.$'
	assert_line "the server's address: 'build/bin/04_post_wr -d rxe1 -o write' on node 1, then"
	# Exit status 0, and the count of its 'arrived intact' lines.
	assert_line 'server-done 0 1'
	run echo "$right"
	assert_line --regexp '^NODE 2 of 2 \(node2\): rxe2 is up on eth0, 198\.18\.0\.2, wired to node 1 at 198\.18\.0\.1\.$'
	assert_line "system show': netns shared), so give each step -d rxe2, this node's: without -d a"
	# Exit status 0, its successful WRITE completion, its own device's packets sent,
	# and without -d the first device listed, node 1's, as the banner says.
	assert_line 'client-done 0 1 rxe2-sent-more 1 without-d rxe1'
}

@test "lab: make shell NODES=3 tiles nodes 1 to 3, namespaces of one VM, each named, and the banner's own step 07 command runs the ring across them" {
	vm_dir=$(nodes_vm_dir) || fail "could not prepare the kernel of make shell NODES=3"
	session=$(RDMA_LAB_DETACHED=1 "$COPY/tests/vm/nodes.sh" 3 "$vm_dir" "$RESULTS")
	[ -n "$session" ] || fail "nodes.sh started no tmux session"
	for pane in 0 1 2; do
		wait_for_pane "$session" $pane 300 "^root@node$((pane + 1)):" || {
			tmux capture-pane -p -J -S -300 -t "$session:0.$pane" >&3
			tmux kill-session -t "$session"
			fail "node $((pane + 1)) never showed its prompt"
		}
	done
	# Each pane runs the command its banner printed, rank K-1 on node K; its result line
	# follows an empty one, as in the test above.
	for pane in 0 1 2; do
		command=$(tmux capture-pane -p -J -S -300 -t "$session:0.$pane" | sed -n "s/^'\(build\/bin\/07_allreduce [^']*\)' here,.*/\1/p")
		# The error line, if any, follows on the screen: a failure then says why.
		tmux send-keys -t "$session:0.$pane" "$command > \$TMPDIR/ring.log 2>&1; echo; echo ring-done \$? \$(grep -c '^result crc32 ' \$TMPDIR/ring.log) \$(grep -c '^check .*: right: ' \$TMPDIR/ring.log); grep '^error: ' \$TMPDIR/ring.log" Enter
	done
	finished=yes
	for pane in 0 1 2; do
		wait_for_pane "$session" $pane 180 '^ring-done ' || finished=no
	done
	screens=()
	for pane in 0 1 2; do
		screens[pane]=$(tmux capture-pane -p -J -S -300 -t "$session:0.$pane")
		tmux send-keys -t "$session:0.$pane" exit Enter
	done
	for _ in $(seq 1 60); do tmux has-session -t "$session" 2>/dev/null || break; sleep 0.5; done
	! tmux has-session -t "$session" 2>/dev/null || tmux kill-session -t "$session"
	[ "$finished" = yes ] || fail "the ring did not finish on every node within 180 s: ${screens[*]}"
	for pane in 0 1 2; do
		k=$((pane + 1))
		run echo "${screens[pane]}"
		assert_line --regexp "^NODE $k of 3 \\(node$k\\): rxe$k is up on eth0, 198\\.18\\.0\\.$k, on one segment with nodes 1 to 3 at 198\\.18\\.0\\.1 to 198\\.18\\.0\\.3\\.$"
		assert_line --regexp "^'build/bin/07_allreduce -d rxe$k --rank $pane --world-size 3 --qp-timeout 20 -b 1M --maxbytes 1M 198\\.18\\.0\\.1' here,$"
		# With step 03's QP timeout, 14, a .ci/run's ring here once drew a retransmission that
		# rxe cut wrongly: rank 0's WRITE to rank 2 ended in 'remote invalid request error (9)'.
		# The banner's command carries NCCL's 20, as make test-nodes' cases do.
		# Exit status 0, one CRC-32 line; rank 0 alone prints the check over every rank.
		if [ "$pane" = 0 ]; then assert_line 'ring-done 0 1 1'; else assert_line 'ring-done 0 1 0'; fi
	done
}
