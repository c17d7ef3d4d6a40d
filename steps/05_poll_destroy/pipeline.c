/* pipeline.c: stage 5: the initiator's pipelined loop, --depth work requests in flight, few of them signalled. */
#include "pipeline.h"
#include "clock.h"
#include "completion.h"
#include "credits.h"
#include "pattern.h"
#include "perf_report.h"
#include "report.h"

/*
 * Work requests retired by one signalled completion.  Half the depth: while
 * one half waits for its completion, the other half is already posted, so
 * the send queue never runs dry.
 */
static int signal_interval(int depth)
{
	return (depth + 1) / 2;
}

/* Whether work request number N (from 1) asks for a completion: every EVERYth, and the last. */
static bool is_signalled(int n, int iters, int every)
{
	return n % every == 0 || n == iters;
}

/*
 * How many work requests are done after one more signalled completion, DONE
 * before it.  A send queue completes in order, so a signalled completion
 * means that every work request posted before it has finished too: their
 * slots in the queue are free again.
 */
static int retire(int done, int every, int iters)
{
	int next = (done / every + 1) * every;

	return next < iters ? next : iters;
}

/* A pipelined run: its work requests posted and done so far, and the limits on what may be in flight. */
struct pipe {
	int iters, depth, every;
	int posted, done;
	struct credits credits;
};

/* Posts work requests until DEPTH are in flight, all ITERS are posted, or the target's receives run out. */
static int fill_pipe(struct poller *p, struct prepared_op *op, struct pipe *pp)
{
	while (pp->posted < pp->iters && pp->posted - pp->done < pp->depth) {
		prepared_imm(op, (uint32_t)pp->posted);
		prepared_signal(op, is_signalled(pp->posted + 1, pp->iters, pp->every));
		if (credits_wait_for(&pp->credits, pp->posted) || post_prepared(p->conn, op))
			return -1;
		if (pp->posted == 0) {
			show("pipeline", "up to %d work requests in flight; a completion asked for once "
			     "in every %d and on the last, the rest unsignalled", pp->depth, pp->every);
			show("iterations", "the first post shown above; %d more run quietly", pp->iters - 1);
			show_quiet(true);
		}
		pp->posted++;
	}
	return 0;
}

/* Keeps the pipe full until all its work requests have completed. */
static int pump(struct poller *p, struct prepared_op *op, struct pipe *pp)
{
	struct ibv_wc wc;

	while (pp->done < pp->iters) {
		if (fill_pipe(p, op, pp) || poller_wait_for(p, WR_ID_SEND, &wc))
			return -1;
		pp->done = retire(pp->done, pp->every, pp->iters);
	}
	return 0;
}

int run_pipelined_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int depth, int timeout_s)
{
	struct pipe pp = { .iters = iters, .depth = depth, .every = signal_interval(depth) };
	struct prepared_op op;
	double start;
	int rc, left;

	/* A buffer must hold still while work requests that read it are in flight: it is
	 * filled once, with the pattern the target checks for the last message.  A READ's
	 * buffer is spoilt instead, so that the check sees what the READs brought. */
	fill_pattern(buf->addr, buf->len, post->op == OP_READ ? READ_POISON_SEED : (uint8_t)(iters - 1));
	credits_init(&pp.credits, p, post->op, false, iters, timeout_s);
	/* Every message is the same operation on the same bytes: one WR, built once. */
	prepare_operation(&op, p->conn, buf, buf->len, post);
	if (poller_sync(p, 'P', timeout_s))
		return -1;
	start = now_us();
	rc = pump(p, &op, &pp);
	show_quiet(false);
	if (rc)
		return -1;
	show_pipeline_report(iters, buf->len, now_us() - start, post->op, depth, p->completions);
	if (post->op == OP_READ && !check_pattern(buf->addr, buf->len, 0))
		return -1;
	left = drain_completions(p->conn, false);
	if (left < 0)
		return -1;
	show("initiator CQ", "%d completion(s) left after the last signalled one: the unsignalled "
	     "work requests made none", left);
	credits_report(&pp.credits, true);
	poller_report(p);
	return poller_sync(p, 'D', timeout_s);
}
