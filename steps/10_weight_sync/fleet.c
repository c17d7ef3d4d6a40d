/* fleet.c: step 10's verbs objects: one device, one registered buffer (the words, then a trainer's shard or a serving rank's two versions), one RC QP per trainer and serving pair. */
#include "fleet.h"
#include "dev_limits.h"
#include "pairs.h"
#include "report.h"
#include "sync_shape.h"

#include <stdio.h>

void fleet_init(struct fleet *f, const struct launch *l, const struct sync_opts *opts)
{
	*f = (struct fleet){ .rank = l->rank, .world = l->world, .trainers = opts->trainers,
			     .tp = opts->tp, .late_from = opts->late_replica ? l->world - opts->tp :
			     l->world, .gathers = sync_runs_way(opts, WAY_GATHER) };
	for (int p = 0; p < SYNC_MAX_RANKS; p++)
		f->conn[p].sock = -1;
}

uint64_t fleet_bytes(const struct fleet *f, const struct model *m, const struct plan *p, int r)
{
	uint64_t whole = 0;

	if (r == 0 && f->gathers) {
		for (int k = 0; k < p->trainers; k++)
			whole += m->tr_bytes[k];
		return FLEET_DATA + whole;
	}
	if (r < p->trainers)
		return FLEET_DATA + m->tr_bytes[r];
	return FLEET_DATA + 2 * m->tp_bytes[plan_tp_rank(p, r)];
}

/*
 * What this rank asks of the device, after stage 1 and before anything else
 * is created: its buffer pinned as one MR; a serving rank's remote atomics
 * (the trainers' FETCH_ADDs); a trainer's device initiating one atomic at
 * least (one that initiates none would offer 0 in stage 3's exchange, which
 * the peer refuses as no offer), its send queue holding SYNC_CHAINS chains
 * and the FETCH_ADD, each of its WRITEs one message of up to the largest run.
 */
static int check_limits(const struct fleet *f, const struct sync_opts *opts, const struct model *m,
			const struct plan *p, uint64_t bytes)
{
	char request[96];
	uint64_t largest = 0;

	snprintf(request, sizeof(request), "--model-dim %d --layers %d", opts->dim, opts->layers);
	if (limit_check_pin(&f->dev, bytes + (fleet_converts(f, opts) ? SYNC_SLOTS * SYNC_SLOT_BYTES : 0),
			    bytes, request,
			    "give a smaller --model-dim or fewer --layers"))
		return -1;
	if (!fleet_trains(f) && fleet_pull_peer(f, f->rank) >= 0 &&
	    (fleet_late(f, f->rank) ?
	     limit_check(&f->dev, LIMIT_QP_INIT_RD_ATOM, 1, "RDMA READs a QP keeps in flight (the "
			 "late replica's pull)", "--late-replica", "leave --late-replica out") :
	     limit_check(&f->dev, LIMIT_QP_RD_ATOM, 1, "RDMA READs a QP serves (the late "
			 "replica's pull from us)", "--late-replica", "leave --late-replica out")))
		return -1;
	if (!fleet_trains(f) || (f->gathers && f->rank == 0))
		if (limit_check_atomics(&f->dev, "the trainers' FETCH_ADDs", "this step signals "
					"with atomics: use a device that serves them") ||
		    limit_check(&f->dev, LIMIT_QP_RD_ATOM, 1, "atomic served a QP (the trainers' "
				"FETCH_ADDs)", "step 10", "this device cannot run it"))
			return -1;
	if (!fleet_trains(f))
		return 0;
	/* Under --way gather, rank 0 WRITEs every trainer's runs, and each trainer its shard whole. */
	for (uint64_t i = 0; i < p->n; i++)
		if ((p->runs[i].src == f->rank || (f->gathers && f->rank == 0)) &&
		    p->runs[i].dst_len > largest)
			largest = p->runs[i].dst_len;
	/* Converted on the way, a run goes in WRITEs of at most a staging slot. */
	if (opts->serve_dtype == DTYPE_FP8 && largest > SYNC_SLOT_BYTES)
		largest = SYNC_SLOT_BYTES;
	if (f->gathers && f->rank != 0 && m->tr_bytes[f->rank] > largest)
		largest = m->tr_bytes[f->rank];
	return limit_check(&f->dev, LIMIT_QP_INIT_RD_ATOM, 1, "atomic initiated a QP (the "
			   "FETCH_ADD)", "step 10", "this device cannot run it") ||
	       limit_check(&f->dev, LIMIT_QP_WR, SYNC_CHAINS * SYNC_CHAIN + 1, "send WRs a QP (the "
			   "chains in flight and the FETCH_ADD)", "step 10", "this device cannot run it") ||
	       limit_check(&f->dev, LIMIT_MSG_SZ, largest, f->gathers ? "bytes in one WRITE (the "
			   "plan's longest run, or a trainer's shard to rank 0)" : "bytes in one WRITE "
			   "(the plan's longest run)", request, "give a smaller --model-dim") ||
	       cq_qp_check_limits(&f->dev, &opts->conn) ? -1 : 0;
}

/*
 * A late rank's QP to the rank it pulls from: the READs it offers to keep in
 * flight, SYNC_READS or fewer where the device initiates fewer
 * (max_qp_init_rd_atom); stage 3 agrees the number with the peer's
 * max_qp_rd_atom when the QP goes to RTR.
 */
static int offer_reads(struct fleet *f, struct rdma_conn *c)
{
	uint64_t most = limit_value(&f->dev, LIMIT_QP_INIT_RD_ATOM);

	if (most > EXCHANGE_RD_ATOMIC_MAX)
		most = EXCHANGE_RD_ATOMIC_MAX;
	return conn_offer_rd_atomic(&f->dev, c, most < SYNC_READS ? (int)most : SYNC_READS);
}

int fleet_open(struct fleet *f, const struct cli_common *common, const struct sync_opts *opts,
	       const struct model *m, const struct plan *p)
{
	struct reg_mr_opts mr = { .size = fleet_bytes(f, m, p, f->rank) };
	int qps = 0;

	if (!fleet_trains(f))
		f->slice = m->tp_bytes[plan_tp_rank(p, f->rank)];
	for (int k = 1; k < f->trainers; k++)
		f->stage_off[k] = f->stage_off[k - 1] + m->tr_bytes[k - 1];
	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(common, &f->dev) || check_limits(f, opts, m, p, mr.size))
		return -1;
	show_heading("stage 2: register one buffer, once: the words, then the weights");
	/* Least privilege: a trainer's buffer is only ever read by its own NIC. */
	if (fleet_trains(f) && f->gathers && f->rank == 0)
		reg_mr_grant(&mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC, "--way gather: every other trainer WRITEs its "
			     "shard after ours and FETCH_ADDs its word here; our NIC reads the whole "
			     "model from here for the WRITEs to every replica");
	else if (fleet_trains(f))
		reg_mr_grant(&mr, IBV_ACCESS_LOCAL_WRITE, "our NIC reads our shard for the WRITEs and "
			     "writes our FETCH_ADDs' old values; no peer touches it");
	else if (fleet_pull_peer(f, f->rank) >= 0 && !fleet_late(f, f->rank))
		reg_mr_grant(&mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ, "the trainers WRITE our "
			     "slices into the version buffer being filled, and FETCH_ADD their signal "
			     "words; the late replica's rank READs the version we serve");
	else
		reg_mr_grant(&mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC, "the trainers WRITE our slices into the version "
			     "buffer being filled, and FETCH_ADD their signal words");
	if (register_buffer(&f->dev, &mr, &f->buf))
		return -1;
	if (fleet_converts(f, opts)) {
		struct reg_mr_opts st = { .size = SYNC_SLOTS * SYNC_SLOT_BYTES };

		/* Least privilege again: a WRITE's source needs no access flag, local read is always on. */
		reg_mr_grant(&st, 0, "--serve-dtype fp8: the staging slots, registered once here, not "
			     "per update: we convert each chain's runs into one and our NIC reads its "
			     "WRITEs from there; no peer touches it");
		if (register_buffer(&f->dev, &st, &f->stage))
			return -1;
	}
	show_heading("stage 3: one RC QP to every rank of the other side");
	for (int q = 0; q < f->world; q++) {
		bool pull = q == fleet_pull_peer(f, f->rank);

		if (q == f->rank || (fleet_trains(f) == (q < f->trainers) && !pull &&
				      !fleet_gather_pair(f, q)))
			continue;
		if (create_cq_qp(&f->dev, &f->buf, &opts->conn, &f->conn[q], NULL))
			return -1;
		f->conn[q].timeout = (uint8_t)opts->job.qp_timeout;
		f->paired[q] = true;
		qps++;
		if (pull && fleet_late(f, f->rank) && offer_reads(f, &f->conn[q]))
			return -1;
	}
	if (f->gathers)
		show("QPs", "%d here, %d in the job: one per trainer and serving rank, T x S = %d x %d, "
		     "and --way gather's one between trainer rank 0 and each other trainer, %d", qps,
		     2 * (f->trainers * (f->world - f->trainers) + f->trainers - 1), f->trainers,
		     f->world - f->trainers, f->trainers - 1);
	else if (f->late_from < f->world)
		show("QPs", "%d here, %d in the job: one per trainer and serving rank, T x S = %d x %d, "
		     "and one per rank of the late replica to the rank of replica 0 it pulls from, "
		     "%d", qps, 2 * (f->trainers * (f->world - f->trainers) + f->tp), f->trainers,
		     f->world - f->trainers, f->tp);
	else
		show("QPs", "%d here, %d in the job: one per trainer and serving rank, T x S = %d x %d; "
		     "no QP between two trainers or two serving ranks", qps,
		     2 * f->trainers * (f->world - f->trainers), f->trainers, f->world - f->trainers);
	return 0;
}

/*
 * A serving rank's buffer as it told us (a trainer's peer, or the rank a
 * late rank pulls from): the plan says how long it is, so a length other
 * than that one, or an address that wraps, is refused before any WRITE or
 * READ is aimed at it.  0, or -1 after every rank was told.
 */
static int check_peer_buffer(struct ring_ctl *ctl, const struct fleet *f, const struct model *m,
			     const struct plan *p, int d, const struct peer_info *in)
{
	uint64_t want = fleet_bytes(f, m, p, d);

	if (in->len != want && d < p->trainers) {
		ctl_fail(ctl, d, "its buffer length %llu B is not the %llu B the plan lays out for it "
			 "(%llu B of words, then every trainer's shard: --way gather's stage): refused "
			 "before any WRITE", (unsigned long long)in->len, (unsigned long long)want,
			 (unsigned long long)FLEET_DATA);
		return -1;
	}
	if (in->len != want) {
		ctl_fail(ctl, d, "its buffer length %llu B is not the %llu B the plan lays out for it "
			 "(%llu B of words, then 2 versions of %llu B): refused before any WRITE or "
			 "READ", (unsigned long long)in->len, (unsigned long long)want,
			 (unsigned long long)FLEET_DATA, (unsigned long long)m->tp_bytes[plan_tp_rank(p, d)]);
		return -1;
	}
	if (!in->addr || in->addr + in->len < in->addr) {
		ctl_fail(ctl, d, "its buffer address 0x%llx with %llu B wraps past the end of memory: "
			 "refused before any WRITE or READ", (unsigned long long)in->addr,
			 (unsigned long long)in->len);
		return -1;
	}
	return 0;
}

int fleet_meet(struct fleet *f, struct ring_ctl *ctl, const struct launch *l, struct hello *mine,
	       const char *failure, const struct model *m, const struct plan *p,
	       const struct sync_opts *opts)
{
	struct peer_info ours[SYNC_MAX_RANKS] = { 0 }, theirs[SYNC_MAX_RANKS] = { 0 };
	struct rank_result none = { 0 }, all[JOB_MAX_RANKS];
	struct neighbours nb;

	int any = -1;

	for (int q = 0; q < f->world; q++)
		if (f->paired[q]) {
			ours[q] = f->conn[q].local;
			if (opts->plant_rank == f->rank)
				ours[q].len = (uint64_t)opts->plant_len;
			if (any < 0)
				any = q;
		}
	/*
	 * The runtime hands on a description for every pair, and checks each
	 * one's fields (rendezvous.c, pairs.c): a pair the plan does not join
	 * (two trainers, two serving ranks) carries a copy of one of our QPs'
	 * descriptions, which its peer never connects.
	 */
	for (int q = 0; q < f->world && any >= 0; q++)
		if (!f->paired[q])
			ours[q] = ours[any];
	if (any >= 0)
		mine->to_next = mine->from_prev = ours[any];
	if (opts->plant_rank == f->rank)
		show_now("plant", "rank %d says its buffer is %d B (--plant-len): every trainer must "
			 "refuse it", f->rank, opts->plant_len);
	show_heading("rendezvous: every rank's options through rank 0, then the trainers' and the "
		     "serving ranks' QPs and buffers, once");
	if (rendezvous(ctl, l, mine, failure, &nb) || failure)
		return -1;
	if (ctl_exchange_pairs(ctl, ours, theirs))
		return -1;
	for (int q = 0; q < f->world; q++) {
		char who[32];

		if (!f->paired[q])
			continue;
		/* What we WRITE into (a trainer's serving ranks) or READ from (a late rank's source). */
		if (((fleet_trains(f) && (q >= f->trainers || q == 0)) ||
		     (fleet_late(f, f->rank) && q < f->late_from)) &&
		    check_peer_buffer(ctl, f, m, p, q, &theirs[q]))
			return -1;
		f->conn[q].remote = theirs[q];
		snprintf(who, sizeof(who), "rank %d's", q);
		exchange_show(who, &theirs[q]);
		if (bring_up_qp(&f->dev, &f->conn[q])) {
			ctl_fail(ctl, f->rank, "its QP to rank %d did not reach RTS (see its output)", q);
			return -1;
		}
	}
	if (fleet_trains(f))
		show("buffers", "every serving rank's address, length and rkey taken once, here, each "
		     "length the plan's: no update asks for them again");
	/* Every QP of every rank is in RTS before the first WRITE. */
	return ctl_gather(ctl, &none, all);
}

int fleet_close(struct fleet *f)
{
	int failures = 0;

	/* Every QP we may have begun, paired or not yet: stage 3's release takes what is NULL. */
	for (int q = f->world - 1; q >= 0; q--)
		if (q != f->rank)
			failures += destroy_cq_qp(&f->conn[q]);
	failures += release_buffer(&f->stage);
	failures += release_buffer(&f->buf);
	failures += close_device_pd(&f->dev);
	return failures;
}
