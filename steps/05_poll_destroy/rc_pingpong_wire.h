/* rc_pingpong_wire.h: the out-of-band exchange of rdma-core's ibv_rc_pingpong, a second codec beside our own. */
#ifndef RDMA_STEPS_RC_PINGPONG_WIRE_H
#define RDMA_STEPS_RC_PINGPONG_WIRE_H

#include <infiniband/verbs.h>

#include "cli.h"
#include "cq_qp_rts.h"
#include "exchange.h"
#include "open_pd.h"

/*
 * One text line each way, NUL included: "LLLL:QQQQQQ:PPPPPP:G...G" with the
 * LID, QPN and PSN in hex and the GID as its 16 bytes in 32 hex digits.  No
 * MTU, address or rkey: ibv_rc_pingpong takes its path MTU from -m and never
 * does one-sided operations.  Then the client sends "done" and a NUL.
 */
#define RC_PINGPONG_MSG_LEN 52
#define RC_PINGPONG_DONE "done"

void rc_pingpong_encode(const struct peer_info *info, char msg[RC_PINGPONG_MSG_LEN]);

/* Copies MSG into SHOWN up to its NUL or its 51st byte, each unprintable byte as '?'. */
void rc_pingpong_printable(const char msg[RC_PINGPONG_MSG_LEN], char shown[RC_PINGPONG_MSG_LEN]);

/* Decodes and validates the peer's line; returns 0, or -1 after saying what is wrong with it. */
int rc_pingpong_decode(const char msg[RC_PINGPONG_MSG_LEN], struct peer_info *info);

/*
 * Stage 3's stranger_namer, for when this program runs without
 * --peer=rc_pingpong: names ibv_rc_pingpong's line ("LLLL:QQQQQQ:" in hex)
 * and the option that speaks to it; NULL for anything else.
 */
const char *rc_pingpong_line_named(const uint8_t start[EXCHANGE_START_LEN]);

/*
 * connect_qp, in ibv_rc_pingpong's order: the server reads the client's line,
 * brings its QP up, then answers; the client sends, reads, says "done", then
 * brings its QP up.  PATH_MTU stands in for the MTU the peer does not send.
 */
int connect_qp_rc_pingpong(struct rdma_dev *dev, const struct cli_common *opts,
			   enum ibv_mtu path_mtu, struct rdma_conn *conn);

#endif
