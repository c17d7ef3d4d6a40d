#!/usr/bin/env bats
# wire.bats: step 04 between two nodes on one wire (network namespaces of one VM on Linux 7.x, else two VMs on QEMU's hub), captured: each operation's packets, and their fields against what the programs printed ('make test-wire').
# tests/wire/wire.sh boots the two nodes once for the whole file; node 1 is the target and captures.
# bats file_tags=outside-vm

setup_file() {
	load ../lib/harness
	export WIRE=$BATS_FILE_TMPDIR/wire
	boot_harness_once "$BATS_TEST_DIRNAME/../wire/wire.sh" "$WIRE" wire
}

setup() {
	load ../lib/test_helper
}

# The value of NAME (0x...) on the line of node N's log of CASE that starts with LABEL.
printed() { # N CASE LABEL NAME
	field_of "$WIRE/node$1/$2.log" "^$3" "$4"
}

# The packets of CASE, one per line: "DIRECTION OPCODE PSN ACKREQ VA RKEY DMALEN SYNDROME MSN IMMDT
# SWAP_OR_ADD COMPARE ORIGINAL ICRC" ('-' for a field the packet does not carry),
# DIRECTION "->" for node 2 to node 1 (initiator to target) and "<-" back.  A packet
# belongs to CASE by its destination: node 1's QPN of that case, or node 2's.
# Retransmissions are left out: a packet whose direction, opcode and PSN came before.
# rxe arms its retransmit timer at a send only when it is not already running, so on this
# slow wire an ACK can come in after a later timer expiry: the same PSN goes out again and
# the responder, seeing a duplicate, drops it and ACKs again.  RC at work, not a new packet.
packets_of() { # CASE
	local qpn1 qpn2
	qpn1=$(printf '0x%06x' "$(printed 1 "$1" 'local QP' QPN)")
	qpn2=$(printf '0x%06x' "$(printed 2 "$1" 'local QP' QPN)")
	awk -F'\t' -v q1="$qpn1" -v q2="$qpn2" '
		# tshark pads hex to the field width (0x00000378); the programs print 0x378.
		function hex(v) { if (v == "") return "-"; sub(/^0x0*/, "0x", v); return v == "0x" ? "0x0" : v }
		function opt(v) { return v == "" ? "-" : v }
		function num(v) { return v == "" ? "-" : sprintf("0x%x", v) }
		NR > 1 && (($3 == "198.18.0.1" && $7 == q1) || ($3 == "198.18.0.2" && $7 == q2)) && !seen[$3, $6, $8]++ {
			printf "%s %d %d %s %s %s %s %s %s %s %s %s %s %s\n", ($3 == "198.18.0.1" ? "->" : "<-"), $6, $8,
				($9 == 1 ? "A" : "-"), hex($10), hex($11), opt($12),
				($13 == "" ? "-" : sprintf("0x%02x", $13)), opt($14), opt($15), num($16), num($17), num($18),
				opt($19) }' "$WIRE/packets.tsv"
}

# The opcodes of CASE's packets, in order, as "DIRECTION OPCODE" pairs.
opcodes_of() { packets_of "$1" | awk '{ printf "%s%s%d", sep, $1, $2; sep = " " }'; }

# Fails unless CASE's packets are OPCODES, in opcodes_of's words ("->6 ->8 <-17"), naming those it saw.
assert_opcodes() { # CASE OPCODES
	[ "$(opcodes_of "$1")" = "$2" ] || fail "$1: $(opcodes_of "$1")"
}

# Whether the nodes' kernel (node.sh wrote its uname -r) is MAJOR.MINOR or later: this file
# runs outside the VM, where kernel_at_least would read the host's.
nodes_kernel_at_least() { # MAJOR MINOR
	local major minor
	IFS=. read -r major minor _ <"$WIRE/node1/kernel" || return 1
	minor=${minor%%[!0-9]*}
	[ "$major" -gt "$1" ] || { [ "$major" -eq "$1" ] && [ "$minor" -ge "$2" ]; }
}

# The exit status each node's run of CASE should end with: 1 where ATOMIC WRITE or FLUSH is
# refused, by the kernel's rxe (before 6.2, as tests/04_post_wr.bats gates them: both came in
# Linux 6.2) or, for FLUSH, by a build whose verbs.h lacks it.
expected_status() { # CASE
	case $1 in
	atomic_write) nodes_kernel_at_least 6 2 && echo 0 || echo 1 ;;
	flush) verbs_has_flush && nodes_kernel_at_least 6 2 && echo 0 || echo 1 ;;
	*) echo 0 ;;
	esac
}

@test "wire: both nodes ran every case to its expected end, and every packet is RoCE v2 between their addresses" {
	for node in 1 2; do
		run cat "$WIRE/node$node/status.tsv"
		assert_output "$(for c in send write write_imm read fetch_add cmp_swap atomic_write flush bad_rkey qp_rts pingpong gdr cm_write kv_pull kv_push tclass tclass_one cm_tclass cm_default_tos ce_mark; do
			printf '%s\t%s\n' "$c" "$(expected_status "$c")"; done)"
	done
	run awk -F'\t' 'NR > 1 { print $2, $3, $4 }' "$WIRE/packets.tsv"
	[ "${#lines[@]}" -ge 20 ] || fail "only ${#lines[@]} packets captured: $(cat "$WIRE/node1/tcpdump.log")"
	refute_line --regexp -v '^198\.18\.0\.[12] 198\.18\.0\.[12] 4791$'
	# Every packet carries an ICRC, and tshark decoded a BTH in each.  Debian 12's tshark 4.0
	# stops at an opcode it has no name for (ATOMIC WRITE's 29, FLUSH's 28), before the ICRC,
	# and says so: "Unknown OpCode" in its Info column.
	run awk -F'\t' 'NR > 1 && ($6 == "" || ($19 == "" && $5 !~ /^Unknown OpCode/)) { print }' "$WIRE/packets.tsv"
	assert_output ''
}

@test "wire: SEND is SEND First, Middle, Middle, Last at MTU 1024; the PSNs start at the initiator's; one ACK comes back" {
	psn=$(printed 2 send 'local QP' PSN)
	[ "$(printed 1 send 'remote QP' PSN)" = "$psn" ] || fail "node 1 was told PSN $(printed 1 send 'remote QP' PSN), node 2 printed $psn"
	# Each side names the other's QP as the one the packets to it carry.
	[ "$(printed 2 send 'remote QP' QPN)" = "$(printed 1 send 'local QP' QPN)" ] || fail "node 2's remote QPN is not node 1's own"
	# 4096 bytes at this path MTU are four packets.
	for node in 1 2; do
		run cat "$WIRE/node$node/send.log"
		assert_line --regexp '^ibv_modify_qp +: INIT -> RTR: path MTU 1024 '
	done
	# RC opcodes: 0 SEND First, 1 Middle, 2 Last, 17 Acknowledge.
	assert_opcodes send "->0 ->1 ->1 ->2 <-17"
	run packets_of send
	assert_line --index 0 --regexp "^-> 0 $((psn)) "
	assert_line --index 3 --regexp "^-> 2 $((psn + 3)) A "
	# The ACK names the last PSN and carries an AETH: syndrome 0 plus credits is an ACK, MSN 1 (the first message).
	# rxe's ACK syndrome is 0x1f: 000 (ACK) and credit count 31 (unlimited credits).
	assert_line --index 4 --regexp "^<- 17 $((psn + 3)) - - - - 0x1f 1 - "
}

@test "wire: RDMA WRITE carries the target's address, rkey and length in the RETH of its first packet" {
	addr=$(printed 1 write 'local buffer' addr)
	rkey=$(printed 1 write 'local buffer' rkey)
	[ "$(printed 2 write 'remote buffer' rkey)" = "$rkey" ] || fail "node 2 was given rkey $(printed 2 write 'remote buffer' rkey), node 1 printed $rkey"
	# 6 RDMA WRITE First, 7 Middle, 8 Last, 17 Acknowledge.
	assert_opcodes write "->6 ->7 ->7 ->8 <-17"
	run packets_of write
	assert_line --index 0 --regexp "^-> 6 [0-9]+ - $addr $rkey 4096 "
	# Only the first packet names the remote memory; the rest follow it by PSN.
	assert_line --index 1 --regexp '^-> 7 [0-9]+ - - - - '
	assert_line --index 3 --regexp '^-> 8 [0-9]+ A - - - '
}

@test "wire: WRITE with immediate ends with RDMA WRITE Last with Immediate, which carries the 32-bit value" {
	# 9 RDMA WRITE Last with Immediate; the value goes on the wire in network byte order.
	assert_opcodes write_imm "->6 ->7 ->7 ->9 <-17"
	run packets_of write_imm
	assert_line --index 3 --regexp '^-> 9 [0-9]+ A - - - - - deadbeef '
	run cat "$WIRE/node1/write_imm.log"
	assert_line --regexp '^ibv_poll_cq +: completion: opcode RECV_RDMA_WITH_IMM, status success, 4096 bytes, immediate 0xdeadbeef$'
}

@test "wire: RDMA READ is one request with a RETH; the target answers with READ Response First, Middle, Last from the request's PSN" {
	addr=$(printed 1 read 'local buffer' addr)
	rkey=$(printed 1 read 'local buffer' rkey)
	psn=$(printed 2 read 'local QP' PSN)
	# 12 RDMA READ Request; 13, 14, 15 READ Response First, Middle, Last.  A READ needs no ACK:
	# the responses are the answer.
	assert_opcodes read "->12 <-13 <-14 <-14 <-15"
	run packets_of read
	assert_line --index 0 --regexp "^-> 12 $((psn)) A $addr $rkey 4096 "
	# The responses take the request's PSN onwards; First and Last carry an AETH, MSN 1.
	assert_line --index 1 --regexp "^<- 13 $((psn)) - - - - 0x1f 1 "
	assert_line --index 2 --regexp "^<- 14 $((psn + 1)) - - - - - - "
	assert_line --index 4 --regexp "^<- 15 $((psn + 3)) - - - - 0x1f 1 "
}

@test "wire: an atomic is one request with an AtomicETH (address, rkey, operands); the Atomic Acknowledge brings the old value back" {
	for op in fetch_add cmp_swap; do
		addr=$(printed 1 $op 'local buffer' addr)
		rkey=$(printed 1 $op 'local buffer' rkey)
		psn=$(printed 2 $op 'local QP' PSN)
		# 20 FetchAdd, 19 CmpSwap; 18 Atomic Acknowledge.
		want="->20 <-18"
		[ $op = cmp_swap ] && want="->19 <-18"
		assert_opcodes "$op" "$want"
		run packets_of $op
		# The target's word starts at 0x1000 (step 04): fetch_add adds 0x24; cmp_swap compares
		# with 0x1000 and swaps in 0xcafe.  The AETH and AtomicAckETH answer at the same PSN.
		if [ $op = fetch_add ]; then
			assert_line --index 0 --regexp "^-> 20 $((psn)) A $addr $rkey - - - - 0x24 0x0 - "
		else
			assert_line --index 0 --regexp "^-> 19 $((psn)) A $addr $rkey - - - - 0xcafe 0x1000 - "
		fi
		assert_line --index 1 --regexp "^<- 18 $((psn)) - - - - 0x1f 1 - - - 0x1000 "
		run cat "$WIRE/node2/$op.log"
		assert_line --regexp '^atomic check +: the old value 0x1000 came back into our buffer$'
	done
}

@test "wire: ATOMIC WRITE is one request, opcode 29, answered by a READ Response Only (16); FLUSH after a WRITE is opcode 28, answered the same way after the WRITE's ACK" {
	# Debian 12's tshark 4.0 has no names for opcodes 28 and 29: compared by number.
	if nodes_kernel_at_least 6 2; then
		psn=$(printed 2 atomic_write 'local QP' PSN)
		assert_opcodes atomic_write "->29 <-16"
		run packets_of atomic_write
		assert_line --index 0 --regexp "^-> 29 $((psn)) A "
		# The answer carries no data: a READ Response Only of length zero at the request's PSN, its AETH an ACK.
		assert_line --index 1 --regexp "^<- 16 $((psn)) - - - - 0x1f 1 "
		run cat "$WIRE/node1/atomic_write.log"
		assert_line --regexp '^atomic check +: the 8 bytes at 0x[0-9a-f]+ went from 0x1000 to 0x1122334455667788: '
	else
		run cat "$WIRE/node2/atomic_write.log"
		assert_line --regexp '^error: -o atomic_write asks for ATOMIC WRITE, but [a-z0-9_]+ does not do it: bit 40 '
	fi
	if [ "$(expected_status flush)" != 0 ]; then
		# This build's verbs.h has no FLUSH (rdma-core 44), or the kernel's rxe none: both nodes say so and stop.
		for node in 1 2; do
			run cat "$WIRE/node$node/flush.log"
			if verbs_has_flush; then
				assert_line --regexp '^error: -o flush --placement global asks for FLUSH, but [a-z0-9_]+ does not do it: bit 38 '
			else
				assert_output "error: -o flush posts ibv_wr_flush, which the verbs.h this program was built against lacks: FLUSH (IBV_WR_FLUSH, IBV_ACCESS_FLUSH_GLOBAL) came in rdma-core 45, and Debian 12 has 44; rebuild where rdma-core is 45 or later, such as Debian 13 (rdma-core 56), or use another -o"
			fi
		done
		return
	fi
	psn=$(printed 2 flush 'local QP' PSN)
	# Node 2 sends RDMA WRITE Only (10) then FLUSH (28); node 1 answers the WRITE with an ACK (17)
	# and the FLUSH with a READ Response Only (16), each at its request's PSN.
	run packets_of flush
	[ "$(awk '$1 == "->" { printf "%s %s ", $2, $3 }' <<<"$output")" = "10 $((psn)) 28 $((psn + 1)) " ] ||
		fail "flush, node 2 to node 1: not a WRITE Only then a FLUSH from PSN $((psn)): $output"
	[ "$(awk '$1 == "<-" { printf "%s %s ", $2, $3 }' <<<"$output")" = "17 $((psn)) 16 $((psn + 1)) " ] ||
		fail "flush, node 1 to node 2: not an ACK then a READ Response Only: $output"
	assert_line --regexp "^-> 10 $((psn)) A $(printed 1 flush 'local buffer' addr) $(printed 1 flush 'local buffer' rkey) 1024 "
	run cat "$WIRE/node2/flush.log"
	assert_line --regexp '^ibv_poll_cq +: completion: opcode FLUSH, status success'
	run cat "$WIRE/node1/flush.log"
	assert_line --regexp '^data check +: 1024 bytes arrived intact$'
}

@test "wire: a WRITE with a wrong rkey is answered by a NAK, syndrome remote access error (0x62), at the first packet's PSN" {
	rkey=$(printed 1 bad_rkey 'local buffer' rkey)
	psn=$(printed 2 bad_rkey 'local QP' PSN)
	run packets_of bad_rkey
	assert_line --index 0 --regexp "^-> 6 $((psn)) - 0x[0-9a-f]+ $(printf '0x%x' $((rkey + 1))) 4096 "
	# AETH syndrome 011 00010: NAK (011), code 2, remote access error.
	assert_line --regexp "^<- 17 $((psn)) - - - - 0x62 [0-9]+ - "
	run cat "$WIRE/node2/bad_rkey.log"
	assert_line --regexp '^ibv_poll_cq +: completion of work request 2 \(send-queue operation\): status remote access error \(10\), '
}

@test "wire: steps 03, 05 and 06 run between the nodes as between two hosts; bringing QPs to RTS sends no packet" {
	# Step 03 connects the QPs and moves no data: the side channel carries the exchange, and
	# the modify_qp calls only change each NIC's state, so nothing crosses the wire.
	for node in 1 2; do
		run cat "$WIRE/node$node/qp_rts.log"
		assert_line --regexp '^connected +: QP 0x[0-9a-f]+ is in RTS, connected to QP 0x[0-9a-f]+$'
	done
	run packets_of qp_rts
	assert_output ''
	# Step 05's ping-pong: 50 messages of 64 bytes each way, each one packet, SEND Only (4),
	# with the PSNs counting up from each side's printed one.
	run cat "$WIRE/node2/pingpong.log"
	assert_line --regexp '^completions +: [0-9]+, every one success'
	psn2=$(printed 2 pingpong 'local QP' PSN)
	psn1=$(printed 1 pingpong 'local QP' PSN)
	run packets_of pingpong
	[ "$(awk '$1 == "->" && $2 == 4 { print $3 }' <<<"$output" | tr '\n' ' ')" = "$(seq -s ' ' $((psn2)) $((psn2 + 49))) " ] ||
		fail "pingpong, node 2 to node 1: not 50 SEND Only from PSN $((psn2)): $output"
	[ "$(awk '$1 == "<-" && $2 == 4 { print $3 }' <<<"$output" | tr '\n' ' ')" = "$(seq -s ' ' $((psn1)) $((psn1 + 49))) " ] ||
		fail "pingpong, node 1 to node 2: not 50 SEND Only from PSN $((psn1)): $output"
	# Step 06: each of its three paths delivers intact bytes from node 1's (emulated) GPU
	# memory to node 2's; the receiver checks them.
	run grep -c ', data intact' "$WIRE/node2/gdr.log"
	assert_output 3
}

# The CM's packets, management datagrams to QP 1 from the REQ that carries node 2's QPN of
# CASE to the DREP that ends it: "DIRECTION ATTRIBUTE REQ_QPN REQ_PSN REP_QPN REP_PSN PRIVATE"
# ('-' where absent), ATTRIBUTE the MAD's attribute ID (0x10 REQ, 0x13 REP, 0x14 RTU, 0x15
# DREQ, 0x16 DREP); with CLASSES, "DIRECTION ATTRIBUTE DSCP ECN" instead.
cm_packets_of() { # CASE [CLASSES]
	local qpn2
	qpn2=$(printf '0x%06x' "$(printed 2 "$1" 'local QP' QPN)")
	awk -F'\t' -v q2="$qpn2" -v classes="${2:-}" '
		# tshark prints hex fields padded (0x0010, 0x00000001); compared unpadded.
		function hex(v) { sub(/^0x0*/, "", v); return v == "" ? "0" : v }
		function opt(v) { return v == "" ? "-" : v }
		NR > 1 && hex($7) == "1" && $21 != "" {
			if (hex($21) == "10" && hex($22) == hex(q2)) on = 1
			if (!on) next
			if (classes) printf "%s 0x%s %s %s\n", ($3 == "198.18.0.1" ? "->" : "<-"), hex($21), $28, $29
			else printf "%s 0x%s %s %s %s %s %s\n", ($3 == "198.18.0.1" ? "->" : "<-"), hex($21),
				opt($22), opt($23), opt($24), opt($25), opt($26 $27)
			if (hex($21) == "16") exit
		}' "$WIRE/packets.tsv"
}

@test "wire: --cm connects with a REQ, a REP and an RTU to QP 1, and ends with a DREQ and a DREP; the REQ and the REP carry each side's QPN, PSN and private data" {
	run cm_packets_of cm_write
	[ "$(awk '{ printf "%s%s%s", sep, $1, $2; sep = " " }' <<<"$output")" = "->0x10 <-0x13 ->0x14 ->0x15 <-0x16" ] ||
		fail "cm_write's CM packets are not REQ, REP, RTU, DREQ, DREP: $output"
	req=${lines[0]} rep=${lines[1]}
	read -r _ _ req_qpn req_psn _ _ req_private <<<"$req"
	read -r _ _ _ _ rep_qpn rep_psn rep_private <<<"$rep"
	# The CM's own fields carry what the side channel carried: each side's QPN, and a starting
	# PSN.  Each message's Starting PSN is the one its sender expects first: the REQ's is the PSN
	# node 1 then sends from, the REP's the PSN node 2 sends from.
	[ "$((req_qpn))" = "$(($(printed 2 cm_write 'local QP' QPN)))" ] || fail "REQ's QPN $req_qpn is not node 2's"
	[ "$((rep_qpn))" = "$(($(printed 1 cm_write 'local QP' QPN)))" ] || fail "REP's QPN $rep_qpn is not node 1's"
	[ "$((req_psn))" = "$(($(printed 1 cm_write 'local QP' PSN)))" ] && [ "$((req_psn))" = "$(($(printed 2 cm_write 'remote QP' PSN)))" ] ||
		fail "REQ's PSN $req_psn is not node 1's send PSN, node 2's receive PSN"
	[ "$((rep_psn))" = "$(($(printed 2 cm_write 'local QP' PSN)))" ] && [ "$((rep_psn))" = "$(($(printed 1 cm_write 'remote QP' PSN)))" ] ||
		fail "REP's PSN $rep_psn is not node 2's send PSN, node 1's receive PSN"
	# Our 40 bytes: "RDCM", version 1, length 40; in the REP, node 1's rkey at byte 8 and buffer at 16.
	rkey=$(printf '%08x' "$(($(printed 1 cm_write 'local buffer' rkey)))")
	addr=$(printf '%016x' "$(($(printed 1 cm_write 'local buffer' addr)))")
	[[ ${req_private//:/} == 5244434d0128* ]] || fail "REQ's private data is not ours: $req_private"
	[[ ${rep_private//:/} == 5244434d01280000${rkey}00000000${addr}0000000000001000* ]] ||
		fail "REP's private data does not carry rkey $rkey and address $addr: $rep_private"
	# The WRITE itself: its RETH names the buffer and rkey that travelled in the REP.
	run packets_of cm_write
	assert_line --regexp "^-> 6 [0-9]+ - $(printed 1 cm_write 'local buffer' addr) $(printed 1 cm_write 'local buffer' rkey) 4096 "
}
@test "wire: step 08 pulls a KV cache with one RDMA READ request per block, each at the prefiller's pool address plus its block's offset in the block table, under its pool's rkey" {
	addr=$(printed 1 kv_pull 'local buffer' addr)
	rkey=$(printed 1 kv_pull 'local buffer' rkey)
	# The prefiller's (node 1's) table: the pool block of each of the 16 blocks, in order.
	read -ra table < <(sed -nE 's/^block table +: request 0: 8 blocks, [0-9]+ next to the one before in a layer; pool blocks ([0-9 ]+)$/\1/p' "$WIRE/node1/kv_pull.log")
	[ "${#table[@]}" -eq 8 ] || fail "no block table of 8 entries in node 1's log: $(cat "$WIRE/node1/kv_pull.log")"
	want=$(for e in "${table[@]}"; do printf '0x%x\n' $((addr + e * 4096)); done | sort)
	# 12 is RDMA READ Request: one per block, 4096 bytes each, with the pool's rkey; nothing else goes to node 1.
	run packets_of kv_pull
	got=$(awk '$1 == "->" && $2 == 12 && $6 == "'"$rkey"'" && $7 == 4096 { print $5 }' <<<"$output" | sort)
	[ "$got" = "$want" ] || fail "READ requests' addresses $(echo $got) are not the table's $(echo $want)"
	run awk '$1 == "->" && $2 != 12 { print }' <<<"$output"
	assert_output ''
	# Each answer is READ Response First, Middle, Middle, Last (4096 bytes at MTU 1024): 32 packets back.
	[ "$(awk '$1 == "<-" && $2 >= 13 && $2 <= 15' <<<"$(packets_of kv_pull)" | wc -l)" -eq 32 ] || fail "not 32 READ responses: $(packets_of kv_pull)"
}

@test "wire: step 08 pushes a KV cache with one RDMA WRITE with immediate per block, each at the decoder's pool address plus its block's offset in the decoder's table, its immediate naming that block" {
	addr=$(printed 2 kv_push 'local buffer' addr)
	rkey=$(printed 2 kv_push 'local buffer' rkey)
	# The decoder's (node 2's) table: the pool block of each of the 8 blocks, in order.
	read -ra table < <(sed -nE 's/^block table +: request 0: 8 blocks, [0-9]+ next to the one before in a layer; pool blocks ([0-9 ]+)$/\1/p' "$WIRE/node2/kv_push.log")
	[ "${#table[@]}" -eq 8 ] || fail "no block table of 8 entries in node 2's log: $(cat "$WIRE/node2/kv_push.log")"
	# Node 1 to node 2: per block, RDMA WRITE First (6) with a RETH, Middle (7) twice, and Last
	# with Immediate (9) three PSNs on: 4096 bytes at MTU 1024.  The immediate is the request
	# (high 16 bits, 0 here) and the block's segment; the First's address must be that block's.
	run packets_of kv_push
	pairs=$(awk '$1 == "<-" && $2 == 6 { va[$3] = $5; key[$3] = $6; len[$3] = $7 }
		$1 == "<-" && $2 == 9 { imm[$3] = $10 }
		END { for (p in va) print va[p], key[p], len[p], (p + 3 in imm ? imm[p + 3] : "none") }' <<<"$output")
	[ "$(wc -l <<<"$pairs")" -eq 8 ] || fail "not 8 WRITEs: $output"
	while read -r va key len imm; do
		[ "$key" = "$rkey" ] && [ "$len" = 4096 ] || fail "a WRITE with rkey $key, length $len: not the decoder's pool rkey $rkey, 4096 bytes"
		[ "$imm" != none ] || fail "the WRITE at $va has no Last with Immediate 3 PSNs on: $output"
		seg=$((16#$imm))
		[ "$seg" -lt 8 ] || fail "immediate 0x$imm names no block of request 0"
		[ "$va" = "$(printf '0x%x' $((addr + table[seg] * 4096)))" ] ||
			fail "the WRITE of block $seg went to $va, not the decoder's block ${table[seg]} at $(printf '0x%x' $((addr + table[seg] * 4096)))"
		seen[seg]=1
	done <<<"$pairs"
	[ "${#seen[@]}" -eq 8 ] || fail "immediates name ${#seen[@]} blocks, not 8: $pairs"
	# Nothing else goes to the decoder, and the decoder sends back only ACKs.
	run awk '($1 == "<-" && $2 != 6 && $2 != 7 && $2 != 9) || ($1 == "->" && $2 != 17) { print }' <<<"$(packets_of kv_push)"
	assert_output ''
}

# The IP header's DSCP and ECN, and the VLAN tag's priority ('-': no tag), of every packet
# of CASE, retransmissions included: one line per distinct "DIRECTION DSCP ECN PRIORITY",
# sorted, DIRECTION as packets_of's.
classes_of() { # CASE
	local qpn1 qpn2
	qpn1=$(printf '0x%06x' "$(printed 1 "$1" 'local QP' QPN)")
	qpn2=$(printf '0x%06x' "$(printed 2 "$1" 'local QP' QPN)")
	awk -F'\t' -v q1="$qpn1" -v q2="$qpn2" '
		NR > 1 && (($3 == "198.18.0.1" && $7 == q1) || ($3 == "198.18.0.2" && $7 == q2)) {
			print ($3 == "198.18.0.1" ? "->" : "<-"), $28, $29, ($30 == "" ? "-" : $30) }' "$WIRE/packets.tsv" | sort -u
}

@test "wire: --tclass 106 is DSCP 26 and ECN 2 in the IP header of every packet each side sends; without it, DSCP 0; SL is on no packet (rxe sends no VLAN tag)" {
	# The default: step 03's traffic class 0, both ways.
	[ "$(classes_of write)" = "$(printf -- '-> 0 0 -\n<- 0 0 -')" ] || fail "write, no --tclass: $(classes_of write)"
	# Both sides at 106 = 26 << 2 | 2: rxe copies the GRH's traffic class into the IPv4 ToS byte.
	[ "$(classes_of tclass)" = "$(printf -- '-> 26 2 -\n<- 26 2 -')" ] || fail "tclass, both at 106: $(classes_of tclass)"
	# Each side's QP sets the class of the packets it sends: node 2's WRITE at 106, node 1's ACK at 0.
	[ "$(classes_of tclass_one)" = "$(printf -- '-> 26 2 -\n<- 0 0 -')" ] || fail "tclass_one, node 2 alone at 106: $(classes_of tclass_one)"
	run cat "$WIRE/node2/tclass_one.log"
	assert_line --regexp '^ibv_modify_qp +: INIT -> RTR: .*, traffic class 106 \(DSCP 26, ECN 2\), SL 5, '
	assert_line --regexp '^ibv_query_qp +: the QP holds SL 0, not the 5 we gave: '
	# No packet of any case carries a VLAN tag, so no priority field a service level could set.
	run awk -F'\t' 'NR > 1 && $30 != "" { print }' "$WIRE/packets.tsv"
	assert_output ''
	# Through rdma_cm: node 2's --tclass (RDMA_OPTION_ID_TOS) decides both directions, since
	# node 1's QP answers in the class of the REQ.
	[ "$(classes_of cm_tclass)" = "$(printf -- '-> 26 2 -\n<- 26 2 -')" ] || fail "cm_tclass, node 2's --tclass 106: $(classes_of cm_tclass)"
	run cat "$WIRE/node2/cm_tclass.log"
	assert_line --regexp '^rdma_set_option +: RDMA_OPTION_ID_TOS 106 \(DSCP 26, ECN 2\): '
	# The CM's own datagrams of that connection travel in its class too, the REP and DREP from node 1 included.
	[ "$(cm_packets_of cm_tclass classes)" = "$(printf -- '%s 26 2\n' '-> 0x10' '<- 0x13' '-> 0x14' '-> 0x15' '<- 0x16')" ] ||
		fail "cm_tclass's CM packets are not REQ, REP, RTU, DREQ, DREP, each DSCP 26, ECN 2: $(cm_packets_of cm_tclass classes)"
	# No --tclass on either side, node 2's rdma_cm default ToS at 106 (configfs' default_roce_tos): the same.
	[ "$(classes_of cm_default_tos)" = "$(printf -- '-> 26 2 -\n<- 26 2 -')" ] || fail "cm_default_tos: $(classes_of cm_default_tos)"
	run cat "$WIRE/node2/cm_default_tos.log"
	refute_line --regexp '^rdma_set_option '
	assert_line --regexp '^rdma_cm chose +: GRH to GID ::ffff:198\.18\.0\.1 from our GID index [0-9]+, hop limit [0-9]+, traffic class 106 \(DSCP 26, ECN 2\), '
	run cat "$WIRE/node1/cm_default_tos.log"
	assert_line --regexp '^rdma_cm chose +: .*, traffic class 106 \(DSCP 26, ECN 2\), '
}

@test "wire: a WRITE whose every packet a queue marked Congestion Experienced arrives whole: node 1's rxe ACKs it as any other and sends no CNP" {
	# netem on node 2's NIC set CE, ECN 3, on each RoCE packet node 2 sent; node 1's ACKs left with ECT(0).
	[ "$(classes_of ce_mark)" = "$(printf -- '-> 26 3 -\n<- 26 2 -')" ] || fail "ce_mark, node 2's packets marked CE: $(classes_of ce_mark)"
	# The packets of an unmarked WRITE and nothing more: the ICRC, computed with the ToS byte masked,
	# still checks, and no packet answers the marks (a CNP would be one more packet to node 2's QP).
	assert_opcodes ce_mark "->6 ->7 ->7 ->8 <-17"
	run cat "$WIRE/node1/ce_mark.log"
	assert_line --regexp '^data check +: 4096 bytes arrived intact$'
}
