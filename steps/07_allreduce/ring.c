/* ring.c: stage 7: the ring on verbs, set up and torn down: one RC QP to the next rank and one from the previous, K slots of C bytes (the data path: datapath.c). */
#include "ring.h"
#include "dev_limits.h"
#include "post_wr.h"
#include "report.h"

#include <stdio.h>
#include <unistd.h>

/*
 * What the ring asks of the device, after stage 1 and before anything else
 * is created: the user buffer and the slots pinned, a piece of --slot-bytes
 * in one WRITE, and on each QP K WRITEs with immediate (or K credits) in
 * flight with a receive for each of the peer's, all completing on its CQ.
 */
static int check_limits(const struct rdma_dev *dev, const struct ring_opts *opts, size_t bytes,
			size_t slot_area, bool qps)
{
	const struct conn_opts conn = { 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* Two MRs, each pinned in whole pages. */
	size_t pinned = (bytes + page - 1) / page * page + (slot_area + page - 1) / page * page;
	char request[96];

	snprintf(request, sizeof(request), "--maxbytes %zu --slots %d --slot-bytes %zu", bytes,
		 opts->slots, opts->slot_bytes);
	if (limit_check_pin(dev, pinned, bytes > slot_area ? bytes : slot_area, request,
			    "give a smaller --maxbytes, or fewer --slots or --slot-bytes") ||
	    limit_check_option(dev, LIMIT_MSG_SZ, "--slot-bytes", (long long)opts->slot_bytes, 1, 0,
			       "bytes in one message (a piece, one WRITE)"))
		return -1;
	if (!qps)
		return 0;
	return limit_check_option(dev, LIMIT_QP_WR, "--slots", opts->slots, 1, 0,
				  "receive WRs a QP (one for each slot's WRITE or credit)") ||
	       limit_check_option(dev, LIMIT_CQE, "--slots", opts->slots, 2, 0,
				  "CQ entries a QP (a send and a receive for each slot)") ||
	       cq_qp_check_limits(dev, &conn) ? -1 : 0;
}

int ring_open(struct rdma_ring *r, const struct cli_common *common, const struct ring_opts *opts,
	      const struct launch *l, size_t bytes)
{
	struct reg_mr_opts data_mr = { .size = bytes }, slots_mr = { .size = (size_t)opts->slots * opts->slot_bytes };

	*r = (struct rdma_ring){ .rank = l->rank, .world = l->world, .k = opts->slots,
				 .c = opts->slot_bytes, .to_next.sock = -1, .from_prev.sock = -1,
				 .slow_ms = opts->slow_rank == l->rank ? opts->slow_ms : 0 };
	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(common, &r->dev) ||
	    check_limits(&r->dev, opts, bytes, slots_mr.size, r->world > 1))
		return -1;
	show_heading("stage 2: register the user buffer, once, and the receive slots");
	reg_mr_grant(&data_mr, IBV_ACCESS_LOCAL_WRITE,
		     "the user buffer: our NIC reads it for each WRITE and the CPU sums into it; no "
		     "peer may reach it");
	reg_mr_grant(&slots_mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		     "K slots of C bytes: the previous rank WRITEs pieces here, one per credit");
	if (register_buffer(&r->dev, &data_mr, &r->data) ||
	    register_buffer(&r->dev, &slots_mr, &r->slots))
		return -1;
	if (r->world == 1)
		return 0;
	show_heading("stage 3: a QP to the next rank and a QP from the previous one");
	if (create_cq_qp(&r->dev, &r->data, &opts->conn, &r->to_next, NULL) ||
	    create_cq_qp(&r->dev, &r->slots, &opts->conn, &r->from_prev, NULL))
		return -1;
	r->to_next.timeout = r->from_prev.timeout = (uint8_t)opts->job.qp_timeout;
	r->rule = progress_rule_for(&r->dev, r->world);
	/* Each WRITE with immediate takes a receive (carrying no bytes), each credit SEND too. */
	if (post_receives(&r->from_prev, &r->slots, 0, r->k) ||
	    post_receives(&r->to_next, &r->data, 0, r->k))
		return -1;
	return 0;
}

int ring_connect(struct rdma_ring *r, const struct neighbours *nb)
{
	if (r->world == 1)
		return 0;
	r->to_next.remote = nb->next_qp;
	r->from_prev.remote = nb->prev_qp;
	exchange_show("next rank's", &nb->next_qp);
	exchange_show("prev rank's", &nb->prev_qp);
	return bring_up_qp(&r->dev, &r->to_next) || bring_up_qp(&r->dev, &r->from_prev) ? -1 : 0;
}

int ring_meet(struct rdma_ring *r, struct ring_ctl *ctl, const struct launch *l,
	      struct hello *mine, const char *failure, struct neighbours *nb)
{
	struct rank_result none = { 0 }, all[MAX_WORLD];

	mine->to_next = r->to_next.local;
	mine->from_prev = r->from_prev.local;
	show_heading("rendezvous: every rank's two QPs, through rank 0");
	if (rendezvous(ctl, l, mine, failure, nb) || failure)
		return -1;
	if (ring_connect(r, nb)) {
		ctl_fail(ctl, l->rank, "its QPs did not reach RTS (see its output)");
		return -1;
	}
	/* Every QP is in RTS before the first credit goes out (ring_grant_slots, next). */
	return ctl_gather(ctl, &none, all);
}

int ring_leave(struct ring_ctl *ctl)
{
	struct rank_result none = { 0 }, all[MAX_WORLD];

	return ctl_gather(ctl, &none, all);
}

int ring_close(struct rdma_ring *r)
{
	int failures = destroy_cq_qp(&r->from_prev);

	failures += destroy_cq_qp(&r->to_next);
	failures += release_buffer(&r->slots);
	failures += release_buffer(&r->data);
	failures += close_device_pd(&r->dev);
	return failures;
}
