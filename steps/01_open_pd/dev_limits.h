/* dev_limits.h: stage 1: what a run asks of the device, checked against the limits stage 1 read, and the process's memlock limit, before anything else is created. */
#ifndef RDMA_STEPS_DEV_LIMITS_H
#define RDMA_STEPS_DEV_LIMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "open_pd.h"

/*
 * The limits a request is checked against, by their verbs names: the
 * ibv_device_attr fields ibv_query_device filled in (after RDMA_STEPS_CAPS),
 * and the port's max_msg_sz from ibv_query_port.
 */
enum dev_limit {
	LIMIT_QP_WR,		/* max_qp_wr: WRs one queue of a QP holds */
	LIMIT_CQE,		/* max_cqe: entries of one CQ */
	LIMIT_SGE,		/* max_sge: scatter-gather entries of one WR */
	LIMIT_MR_SIZE,		/* max_mr_size: bytes of one MR */
	LIMIT_MW,		/* max_mw: memory windows */
	LIMIT_QP_RD_ATOM,	/* max_qp_rd_atom: READs and atomics a QP serves at once */
	LIMIT_QP_INIT_RD_ATOM,	/* max_qp_init_rd_atom: READs and atomics a QP keeps in flight */
	LIMIT_MSG_SZ,		/* the port's max_msg_sz: bytes of one message */
};

/* DEV's value of LIMIT. */
uint64_t limit_value(const struct rdma_dev *dev, enum dev_limit limit);

/*
 * REQUEST (the options as given: "-s 16777216") asks for ASKED WHAT ("bytes
 * in one message") of LIMIT.  0 if DEV holds it; otherwise -1 after one line:
 *   error: -s 16777216 asks for 16777216 bytes in one message, but rxe0
 *   allows 8388608 (max_msg_sz of port 1); FIX
 * FIX says what to change ("use -s 8388608 or less").  Never shrinks a
 * request: the run asked for it, and only its user may ask for less.
 */
int limit_check(const struct rdma_dev *dev, enum dev_limit limit, uint64_t asked,
		const char *what, const char *request, const char *fix);

/*
 * The usual case of limit_check: OPTION at VALUE asks for PER x VALUE +
 * BASE of LIMIT; a refusal names the largest VALUE that fits ("use -s
 * 8388608 or less"), or says that none does.
 */
int limit_check_option(const struct rdma_dev *dev, enum dev_limit limit, const char *option,
		       long long value, uint64_t per, uint64_t base, const char *what);

/*
 * REQUEST posts remote atomics (FETCH_ADD, CMP_SWAP): 0 if DEV's atomic_cap
 * is not IBV_ATOMIC_NONE; otherwise -1, naming FIX.
 */
int limit_check_atomics(const struct rdma_dev *dev, const char *request, const char *fix);

/*
 * REQUEST reads (RDMA READ) or posts atomics, as the INITIATOR, or serves
 * them as the target: 0 if DEV keeps one in flight (max_qp_init_rd_atom) or
 * serves one (max_qp_rd_atom) at least; otherwise -1, naming FIX.
 */
int limit_check_reads(const struct rdma_dev *dev, bool initiator, const char *request,
		      const char *fix);

/*
 * OPTION binds type 2 memory windows, REQUEST WINDOWS of them
 * at once: 0 if DEV's device_cap_flags has IBV_DEVICE_MEM_WINDOW_TYPE_2A or
 * _2B and max_mw holds them; otherwise -1, saying to leave OPTION out, or
 * naming FIX.
 */
int limit_check_windows(const struct rdma_dev *dev, uint64_t windows, const char *option,
			const char *request, const char *fix);

/*
 * REQUEST registers MRs of BYTES in all, the largest LARGEST: 0 if one MR of
 * LARGEST is within max_mr_size, and pinning BYTES more (whole pages) stays
 * within the process's memlock limit as the kernel counts it
 * (ib_umem_get: RLIMIT_MEMLOCK against the pages the process has pinned,
 * VmPin, unless it has CAP_IPC_LOCK); otherwise -1, naming the limit, how
 * to raise it and FIX.  The limit is read now, never assumed.
 */
int limit_check_pin(const struct rdma_dev *dev, uint64_t bytes, uint64_t largest,
		    const char *request, const char *fix);

#endif
