/* kv_report.h: the lines of step 08's data path (datapath.c) that explain: a post or a completion refused and why, the peer gone, a stall, and what the WR with a revoked rkey did. */
#ifndef RDMA_STEPS_KV_REPORT_H
#define RDMA_STEPS_KV_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* The operation's name, for one WR or for N: RDMA READ (PULL) or RDMA WRITE with immediate. */
const char *kv_op_words(bool pull, int n);

/*
 * ibv_post_send refused WR BAD_WR (-1: bad_wr was left unset, as an
 * injected fault leaves it) of a chain of N on QP K with RC.  Says which
 * WR, and, when RC is ENOMEM, why a full send queue is the usual cause:
 * the queue holds SEND_CAP WRs, IN_FLIGHT were posted and not retired.
 */
void kv_report_post_failed(int k, int rc, int bad_wr, int n, unsigned int send_cap, int in_flight);

/*
 * ibv_wr_complete refused a chain of N on QP K with RC: the whole batch,
 * none of it posted (the extended API has no bad_wr).  SEND_CAP and
 * IN_FLIGHT as for kv_report_post_failed.
 */
void kv_report_complete_failed(int k, int rc, int n, unsigned int send_cap, int in_flight);

/*
 * Completion WC of request REQUEST on QP K is in error: says which, and the
 * status that says why.  Its opcode is not defined: RECEIVE says whether it
 * was a receive (the decoder in push mode), else one of the initiator's
 * WRs, a READ when PULL.  Always -1.
 */
int kv_report_completion_failed(int k, const struct ibv_wc *wc, bool receive, bool pull,
				int request);

/*
 * The peer closed the side channel mid-request: it has stopped.  Says how
 * far REQUEST got: the DECODER's BLOCKS of TOTAL_BLOCKS in, or the
 * prefiller's CHAINS_DONE of N_CHAINS completed.  Always -1.
 */
int kv_report_peer_gone(bool decoder, int request, int blocks, int total_blocks, int chains_done,
			int n_chains);

/* Nothing completed for TIMEOUT_S (-t), BLOCKS of TOTAL_BLOCKS of REQUEST in.  Always -1. */
int kv_report_stalled(int request, int timeout_s, int blocks, int total_blocks);

/*
 * --windows' probe, the WR (a READ when PULL) on QP K with REQUEST's window
 * rkey RKEY after the peer revoked it: no completion within TIMEOUT_S, or
 * one with STATUS other than a remote access error, is a failure, said,
 * -1; a remote access error is shown, as it must be.
 */
int kv_report_probe_silent(int k, int timeout_s, bool pull);
int kv_report_probe_passed(int k, bool pull, int request, uint32_t rkey,
			   enum ibv_wc_status status);
void kv_show_probe_refused(bool pull, int request, uint32_t rkey, enum ibv_wc_status status);

#endif
