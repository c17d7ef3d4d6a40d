/* recovery.h: stage 5's recovery drill: a QP broken on purpose, then brought back from ERR to RTS. */
#ifndef RDMA_STEPS_RECOVERY_H
#define RDMA_STEPS_RECOVERY_H

#include "cli.h"
#include "session.h"

/*
 * The initiator posts an RDMA WRITE with a wrong rkey, which moves both QPs
 * to ERR.  Each side then shows its completions, its QP's state and the
 * asynchronous events of its device, takes the QP through RESET and INIT,
 * exchanges again and brings it back to RTS.  Returns 0 or -1.
 */
int run_recovery_drill(struct session *s, const struct cli_common *opts);

#endif
