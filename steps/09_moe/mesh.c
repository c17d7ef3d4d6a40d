/* mesh.c: step 09's verbs objects: one device, one registered buffer, one RC QP (and CQ) per peer, N - 1 a rank. */
#include "mesh.h"
#include "dev_limits.h"
#include "moe_shape.h"
#include "pairs.h"
#include "post_wr.h"
#include "report.h"

#include <stdio.h>

void mesh_init(struct moe_mesh *m, const struct launch *l)
{
	*m = (struct moe_mesh){ .rank = l->rank, .world = l->world };
	for (int p = 0; p < MOE_MAX_RANKS; p++)
		m->conn[p].sock = -1;
}

/*
 * What this rank asks of the device, after stage 1 and before anything else
 * is created: the buffer pinned as one MR; with --signal fadd, remote
 * atomics; on each QP a chain of at least a WRITE and its signal, and with
 * --signal imm A2A_RECV_BATCH receives ahead, all completing on its CQ; and
 * the longest WRITE of that chain within the port's max_msg_sz.
 */
static int check_limits(const struct rdma_dev *dev, const struct moe_opts *opts, size_t bytes,
			size_t to_one_peer, bool qps)
{
	const struct conn_opts conn = { 0 };
	bool fadd = opts->signal == SIGNAL_FADD;
	const char *signal = fadd ? "--signal fadd" : "--signal imm";
	char request[96];

	if (opts->sizes.sized)
		snprintf(request, sizeof(request), "--maxbytes %zu --hidden %zu", opts->sizes.maxbytes,
			 opts->hidden);
	else
		snprintf(request, sizeof(request), "--tokens %d --hidden %zu", opts->tokens,
			 opts->hidden);
	if (limit_check_pin(dev, bytes, bytes, request, opts->sizes.sized ?
			    "give a smaller --maxbytes or --hidden" :
			    "give fewer --tokens or a smaller --hidden"))
		return -1;
	if (!qps)
		return 0;
	/* Every rank both sends FETCH_ADDs and serves its peers'. */
	if (fadd && (limit_check_atomics(dev, signal, "use --signal imm") ||
		     limit_check_reads(dev, true, signal, "use --signal imm") ||
		     limit_check_reads(dev, false, signal, "use --signal imm")))
		return -1;
	return limit_check(dev, LIMIT_QP_WR, 2, "send WRs a QP (a WRITE and its signal)", "step 09",
			   "this device cannot run it") ||
	       (!fadd && limit_check(dev, LIMIT_QP_WR, A2A_RECV_BATCH, "receive WRs a QP (the "
				     "peer's signals ahead)", signal, "use --signal fadd")) ||
	       limit_check(dev, LIMIT_CQE, 2 * (fadd ? 2 : A2A_RECV_BATCH), "CQ entries a QP (as "
			   "many for each queue)", signal, fadd ? "use --signal imm" :
			   "use --signal fadd") ||
	       cq_qp_check_limits(dev, &conn) ||
	       limit_check(dev, LIMIT_MSG_SZ, a2a_longest_write(to_one_peer,
							       cq_qp_send_depth(dev, &conn)),
			   "bytes in one WRITE (a phase's tokens for one peer, cut to fit the send "
			   "queue)", request, opts->sizes.sized ? "give a smaller --maxbytes or "
			   "--hidden" : "give fewer --tokens or a smaller --hidden") ? -1 : 0;
}

int mesh_open(struct moe_mesh *m, const struct cli_common *common, size_t bytes,
	      size_t to_one_peer, const struct moe_opts *opts)
{
	struct reg_mr_opts mr = { .size = bytes };

	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(common, &m->dev) || check_limits(&m->dev, opts, bytes, to_one_peer, m->world > 1))
		return -1;
	show_heading("stage 2: register one buffer for every phase");
	/* Least privilege: remote atomics only when the signal is one. */
	if (opts->signal == SIGNAL_FADD)
		reg_mr_grant(&mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC, "peers WRITE counts, tokens and results into "
			     "it, and FETCH_ADD its signal words");
	else
		reg_mr_grant(&mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "peers WRITE "
			     "counts, tokens and results into it, the last WRITE to us with immediate");
	if (register_buffer(&m->dev, &mr, &m->buf))
		return -1;
	if (m->world == 1)
		return 0;
	show_heading("stage 3: one RC QP per peer, N - 1 of them");
	for (int p = 0; p < m->world; p++) {
		if (p == m->rank)
			continue;
		if (create_cq_qp(&m->dev, &m->buf, &opts->conn, &m->conn[p], NULL))
			return -1;
		m->conn[p].timeout = (uint8_t)opts->job.qp_timeout;
	}
	show("QPs", "%d here, %d in the job: N x (N - 1) for N = %d", m->world - 1,
	     m->world * (m->world - 1), m->world);
	return 0;
}

/* Each QP to RTS against what its peer made for us. */
static int connect_peers(struct moe_mesh *m, const struct peer_info *theirs)
{
	for (int p = 0; p < m->world; p++) {
		char who[32];

		if (p == m->rank)
			continue;
		m->conn[p].remote = theirs[p];
		snprintf(who, sizeof(who), "rank %d's", p);
		exchange_show(who, &theirs[p]);
		if (bring_up_qp(&m->dev, &m->conn[p]))
			return -1;
	}
	return 0;
}

/*
 * RECVS zero-byte receives on each QP, for the peers' WRITEs with immediate:
 * before the go-ahead, since a WRITE with immediate that finds no receive
 * is refused with an RNR NAK and retried after min_rnr_timer (rnr_retry 7:
 * forever), which stalls its QP.  A QP takes receives from INIT on.
 */
static int post_signal_receives(struct moe_mesh *m, int recvs)
{
	for (int p = 0; p < m->world; p++)
		if (p != m->rank && post_receives(&m->conn[p], &m->buf, 0, recvs))
			return -1;
	show("receives", "%d on each of our %d QPs, before the go-ahead: a WRITE with immediate "
	     "that found none would be refused with an RNR NAK and retried", recvs, m->world - 1);
	return 0;
}

int mesh_meet(struct moe_mesh *m, struct ring_ctl *ctl, const struct launch *l,
	      struct hello *mine, const char *failure, int recvs)
{
	struct peer_info ours[MOE_MAX_RANKS] = { 0 }, theirs[MOE_MAX_RANKS] = { 0 };
	struct rank_result none = { 0 }, all[JOB_MAX_RANKS];
	struct neighbours nb;
	int next = (m->rank + 1) % m->world, prev = (m->rank + m->world - 1) % m->world;

	for (int p = 0; p < m->world; p++)
		ours[p] = m->conn[p].local;
	mine->to_next = ours[next];
	mine->from_prev = ours[prev];
	show_heading("rendezvous: every rank's options through rank 0, then every rank's N - 1 QPs");
	if (rendezvous(ctl, l, mine, failure, &nb) || failure)
		return -1;
	if (ctl_exchange_pairs(ctl, ours, theirs))
		return -1;
	if (m->world > 1)
		show("rendezvous", "rank 0 handed on %d QPs; the %d made for us came back",
		     m->world * (m->world - 1), m->world - 1);
	if (connect_peers(m, theirs)) {
		ctl_fail(ctl, m->rank, "its QPs did not reach RTS (see its output)");
		return -1;
	}
	if (recvs && m->world > 1 && post_signal_receives(m, recvs)) {
		ctl_fail(ctl, m->rank, "it could not post its receives (see its output)");
		return -1;
	}
	/* Every QP of every rank is in RTS, its receives posted, before the first WRITE. */
	return ctl_gather(ctl, &none, all);
}

int mesh_close(struct moe_mesh *m)
{
	int failures = 0;

	for (int p = m->world - 1; p >= 0; p--)
		if (p != m->rank)
			failures += destroy_cq_qp(&m->conn[p]);
	failures += release_buffer(&m->buf);
	failures += close_device_pd(&m->dev);
	return failures;
}
