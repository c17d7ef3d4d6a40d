#!/usr/bin/env bats
# 03_cm.bats: steps 03 and 04 connect through the RDMA connection manager (--cm), and each way a connection can fail is named.

setup() {
	load lib/test_helper
	CM_ADDR=$(rdma_cm_addr)
	CM_PORT=$(pick_port)
}

# The rdma_cm event lines of FILE, in order, as one line of their names.
cm_events() {
	sed -nE 's/^rdma_cm event +: RDMA_CM_EVENT_([A-Z_]+).*/\1/p' "$1" | paste -sd' '
}

@test "03_cq_qp_rts --cm: rdma_cm finds rxe0 from the address, drives both QPs to RTS, and each side prints every event and what rdma_cm chose; the client's --tclass decides both sides'" {
	record_baseline
	mtu=$(loopback_mtu)
	start_cm_server 03_cq_qp_rts --tclass 64 --pause
	start_step cli 03_cq_qp_rts -p "$CM_PORT" -t 10 --cm --tclass 106 --pause "$CM_ADDR"
	srv=$BATS_TEST_TMPDIR/srv.out cli=$BATS_TEST_TMPDIR/cli.out
	wait_for_line "$srv" '^paused +: pid'
	wait_for_line "$cli" '^paused +: pid'
	srv_qpn=$(field_of "$srv" '^local QP' QPN) cli_qpn=$(field_of "$cli" '^local QP' QPN)
	[ "$(field_of "$srv" '^remote QP' QPN)" = "$cli_qpn" ] || fail "the server's peer is not the client's QP $cli_qpn"
	# The kernel's view: two RC QPs in RTS, each connected to the other, and three cm_ids.
	run rdma resource show qp
	assert_line --regexp "lqpn $((srv_qpn)) rqpn $((cli_qpn)) type RC state RTS .*pid $(paused_pid "$srv") "
	assert_line --regexp "lqpn $((cli_qpn)) rqpn $((srv_qpn)) type RC state RTS .*pid $(paused_pid "$cli") "
	run rdma resource show cm_id
	assert_line --regexp "lqpn $((cli_qpn)) qp-type RC state CONNECT ps TCP pid $(paused_pid "$cli") .*dst-addr $CM_ADDR:$CM_PORT"
	assert_line --regexp "lqpn $((srv_qpn)) qp-type RC state CONNECT ps TCP pid $(paused_pid "$srv") .*src-addr $CM_ADDR:$CM_PORT"
	assert_line --regexp "state LISTEN ps TCP pid $(paused_pid "$srv") .*src-addr 0\.0\.0\.0:$CM_PORT"
	kill -USR1 "$(paused_pid "$cli")" "$(paused_pid "$srv")"
	finish_step cli "$cli_pid"
	assert_success
	[ "$(cm_events "$cli")" = "ADDR_RESOLVED ROUTE_RESOLVED ESTABLISHED DISCONNECTED" ] || fail "client events: $(cm_events "$cli")"
	assert_line --regexp "^rdma_cm found +: device $DEV, port 1, our GID ::ffff:$CM_ADDR \(index [0-9]+\)$"
	# --tclass through RDMA_OPTION_ID_TOS, set before the route is resolved, and read back from the QP.
	assert_line --regexp '^rdma_set_option +: RDMA_OPTION_ID_TOS 106 \(DSCP 26, ECN 2\): '
	assert_line --regexp '^rdma_cm chose +: GRH to GID ::ffff:'"$CM_ADDR"' from our GID index [0-9]+, hop limit [0-9]+, traffic class 106 \(DSCP 26, ECN 2\), SL 0; path MTU '"$mtu"'$'
	assert_line --regexp '^rdma_cm chose +: timeout [0-9]+ \(4\.096 us \* 2\^[0-9]+\), retry_cnt 7, rnr_retry 7, min_rnr_timer [0-9]+$'
	assert_line --regexp '^rdma_cm chose +: responder resources 1 .*initiator depth 1 \(max_rd_atomic\)$'
	assert_line --regexp '^rdma_connect +: REQ sent: our QPN and PSN in the CM.s own fields, 40 bytes of private data$'
	refute_output --partial 'side channel'
	refute_output --partial 'ibv_open_device'
	assert_in_order '^rdma_create_event_channel' '^rdma_set_option' '^rdma_resolve_addr' 'ADDR_RESOLVED' '^rdma_resolve_route' 'ROUTE_RESOLVED' \
		'^ibv_alloc_pd' '^ibv_reg_mr' '^ibv_create_cq' '^rdma_create_qp .*already in INIT' '^rdma_connect' 'ESTABLISHED' \
		'^ibv_query_qp +: state RTS' '^rdma_disconnect +: DREQ sent' 'DISCONNECTED' '^ibv_destroy_qp' '^ibv_dealloc_pd' \
		'^rdma_destroy_id' '^rdma_destroy_event_channel'
	cli_psn=$(field_of "$cli" '^local QP' PSN)
	finish_step srv "$srv_pid"
	assert_success
	[ "$(cm_events "$srv")" = "CONNECT_REQUEST ESTABLISHED DISCONNECTED" ] || fail "server events: $(cm_events "$srv")"
	# The server's QP takes the traffic class of the client's REQ, not its own cm_id's ToS.
	assert_line --regexp '^rdma_set_option +: RDMA_OPTION_ID_TOS 64 \(DSCP 16, ECN 0\): '
	assert_line --regexp '^rdma_cm chose +: GRH to GID ::ffff:'"$CM_ADDR"' from our GID index [0-9]+, hop limit [0-9]+, traffic class 106 \(DSCP 26, ECN 2\), SL 0; path MTU '"$mtu"'$'
	assert_line "rdma_cm chose       : traffic class 106, not our --tclass 64: the server's QP answers in the class of the client's REQ, so the client's --tclass decides both directions"
	# The PSN the kernel drew for the client is the one the server's QP expects.
	[ "$(field_of "$srv" '^remote QP' PSN)" = "$cli_psn" ] || fail "the server expects PSN $(field_of "$srv" '^remote QP' PSN), the client sends from $cli_psn"
	assert_in_order '^listening ' 'CONNECT_REQUEST' '^ibv_alloc_pd' '^rdma_create_qp' '^rdma_accept +: rdma_cm moved the QP to RTR and RTS, then sent the REP with 40 bytes' \
		'ESTABLISHED' 'DISCONNECTED' '^rdma_disconnect +: DREP sent' '^ibv_destroy_qp' \
		'^rdma_destroy_id +: the connection.s cm_id' '^rdma_destroy_id +: the listening cm_id'
	# 127.0.0.1 resolves (rdma_cm binds loopback to a device), but no route leaves lo through one.
	run_step 03_cq_qp_rts --cm -p "$CM_PORT" -t 5 127.0.0.1
	assert_failure 1
	assert_output --partial "error: rdma_resolve_route to 127.0.0.1 failed: No such device (errno 19): no RDMA device sits on the interface that reaches it (127.0.0.1 is lo's, and lo has none)"
	# -d, -i and -x choose nothing under --cm: one that disagrees with the address is refused.
	run_step 03_cq_qp_rts --cm -d nosuchdev -p "$CM_PORT" -t 5 "$CM_ADDR"
	assert_failure 1
	assert_output --partial "error: -d nosuchdev: under --cm the device comes from the address, and the address is reached by $DEV: drop -d, or give an address of nosuchdev"
	refute_output --partial 'ibv_alloc_pd'
	assert_back_to_baseline
}

@test "04_post_wr --cm: SEND and RDMA READ move their bytes; the buffer and the options travel in the CM's private data" {
	record_baseline
	for op in send read; do
		start_cm_server 04_post_wr -o "$op"
		run_cm_client 04_post_wr -o "$op"
		assert_success
		cli_out=$output
		finish_step srv "$srv_pid"
		assert_success
		assert_line --regexp '^local options +: -o '"$op"' -s 4096 \(must be the same on both sides\)$'
		if [ "$op" = send ]; then
			# The target posts its receive before rdma_accept: no barrier follows ESTABLISHED.
			assert_in_order '^ibv_post_recv +: receive posted' '^rdma_accept' 'ESTABLISHED' '^ibv_poll_cq +: completion: opcode RECV, status success, 4096 bytes' \
				'DISCONNECTED' '^data check +: 4096 bytes arrived intact'
		else
			# The server's rkey reached the client in the REP's private data.
			rkey=$(field_of "$BATS_TEST_TMPDIR/srv.out" '^local buffer' rkey)
			grep -qE "^remote buffer +: addr 0x[0-9a-f]+, length 4096, rkey $rkey$" <<<"$cli_out" || fail "the client did not learn rkey $rkey: $cli_out"
			grep -qE '^data check +: 4096 bytes arrived intact' <<<"$cli_out" || fail "the READ's bytes: $cli_out"
			assert_line --regexp '^target CQ +: 0 completion\(s\): a one-sided READ'
		fi
	done
	refute_output --partial "exchange_sync"
	assert_back_to_baseline
}

# Without rdma_ucm (where this test may unload it: root, in the test VM) the first rdma_cm call fails, naming the module.
assert_fails_without_rdma_ucm() {
	[ -w /proc/sys/kernel/modprobe ] && [ -d /sys/module/rdma_ucm ] || return 0
	# The kernel loads rdma_ucm on demand through modprobe: turned off, so that it stays unloaded.
	loader=$(cat /proc/sys/kernel/modprobe)
	echo /bin/false >/proc/sys/kernel/modprobe
	rmmod rdma_ucm
	run_step 03_cq_qp_rts --cm -p "$CM_PORT" -t 5 "$CM_ADDR"
	echo "$loader" >/proc/sys/kernel/modprobe
	"$loader" rdma_ucm
	assert_failure 1
	assert_output --partial "error: rdma_create_event_channel failed: No such file or directory (errno 2): there is no /dev/infiniband/rdma_cm, so the kernel module rdma_ucm, rdma_cm's door for programs, is not loaded: load it as root with 'modprobe rdma_ucm'"
	refute_output --partial 'ibv_alloc_pd'
}

@test "--cm failures end in bounded time, each named on both sides, leaking nothing: no listener, no answer, options, private data, a peer gone mid-run, a side-channel peer, no rdma_ucm" {
	record_baseline
	start=$SECONDS
	# No listener: the peer's CM answers REJ, reason 8.
	run_step 03_cq_qp_rts --cm -p "$CM_PORT" -t 5 "$CM_ADDR"
	assert_failure 1
	assert_output --partial "error: nothing listens through rdma_cm on port $CM_PORT there (REJECTED, reason 8: invalid service ID): start the server with --cm first"
	# An address on the wire where no host answers: the REQ goes unanswered, and -t bounds the wait.
	run_step 03_cq_qp_rts --cm -p "$CM_PORT" -t 2 198.18.0.77
	assert_failure 1
	assert_output --partial "error: no answer to our REQ within $((2 * TIME_SCALE)) s: no CM there answered, and the kernel's CM would go on resending it for about a minute"
	[ $((SECONDS - start)) -lt $((12 * TIME_SCALE)) ] || fail "two refusals took $((SECONDS - start)) s"
	# rdma_cm has no option for the service level: --sl is refused before anything is created,
	# with --cm and with a peer that speaks through rdma_cm (rping).
	run_step 03_cq_qp_rts --cm --sl 3 -p "$CM_PORT" -t 2 "$CM_ADDR"
	assert_failure 1
	assert_output "error: --sl 3: rdma_cm has no option for the service level (on RoCE the kernel derives it from the traffic class), and --cm connects through it: give --tclass instead, or drop --cm"
	run_step 05_poll_destroy --peer rping --sl 3 -p "$CM_PORT" -t 2 "$CM_ADDR"
	assert_failure 1
	assert_line "error: --sl 3: rdma_cm has no option for the service level (on RoCE the kernel derives it from the traffic class), and rping connects through it: give --tclass instead"
	refute_output --partial 'rdma_create_event_channel'
	# Other options: the server rejects with its own in the REJ, and the client names both.
	start_cm_server 04_post_wr -o write
	run_cm_client 04_post_wr -o send
	assert_failure 1
	assert_output --partial "error: peer: -o write -s 4096; here: -o send -s 4096: give both sides the same options"
	refute_output --partial 'ibv_post_send'
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_output --regexp "error: the client was given other options than ours \(-o write -s 4096\): its digest 0x[0-9a-f]{16}, ours 0x[0-9a-f]{16}; rejected, with ours in the REJ"
	assert_line --regexp '^rdma_reject +: REJ sent, reason 28'
	# Private data of another version, or of a wrong length: refused by field name, on both sides.
	for what in version:'bad version (2): this program speaks version 1 only' length:'bad length (32): version 1 private data is 40 bytes'; do
		start_cm_server 03_cq_qp_rts
		RDMA_STEPS_FAIL_AT=cm_private_${what%%:*} run_cm_client 03_cq_qp_rts
		assert_failure 1
		assert_output --partial "error: the server rejected the connection (REJ reason 28, its program's own): ${what#*:}"
		finish_step srv "$srv_pid"
		assert_failure 1
		assert_output --partial "error: the client's private data: ${what#*:}; rejected, with the reason in the REJ"
	done
	# The initiator fails before it posts: the target's wait sees its DISCONNECTED, not a 10 s timeout.
	start_cm_server 04_post_wr
	RDMA_STEPS_FAIL_AT=post_send run_cm_client 04_post_wr
	assert_failure 1
	finish_step srv "$srv_pid"
	assert_failure 1
	assert_output --partial "error: the peer disconnected during the run (DISCONNECTED): it has stopped or failed, and no completion will come"
	# A side-channel client meets a --cm server, and a --cm client a side-channel server.
	start_cm_server 03_cq_qp_rts
	run_step 03_cq_qp_rts -p "$CM_PORT" -t 1 127.0.0.1
	assert_failure 1
	assert_output --partial "and one started with --cm listens through rdma_cm, not on TCP (give both sides --cm, or neither)"
	stop_background "$srv_pid"
	start_step srv 03_cq_qp_rts -p "$CM_PORT" -t 3
	wait_for_line "$BATS_TEST_TMPDIR/srv.out" '^listening '
	run_step 03_cq_qp_rts --cm -p "$CM_PORT" -t 3 "$CM_ADDR"
	assert_failure 1
	assert_output --partial "a server without --cm listens on a TCP port, which rdma_cm never reaches"
	stop_background "$srv_pid"
	assert_back_to_baseline
	assert_fails_without_rdma_ucm
}
