/* pipeline.c: stage 5: the initiator's pipelined loop, --depth work requests in flight, few of them signalled. */
#include "pipeline.h"
#include "pattern.h"
#include "perf_report.h"
#include "pingpong.h"
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

/* Posts work requests until DEPTH are in flight or all ITERS are posted. */
static int fill_pipe(struct poller *p, const struct rdma_buf *buf, struct post_opts *wr, int *posted,
		     int done, int iters, int depth, int every)
{
	while (*posted < iters && *posted - done < depth) {
		wr->imm = (uint32_t)*posted;
		wr->unsignaled = !is_signalled(*posted + 1, iters, every);
		if (post_operation(p->conn, buf, buf->len, wr))
			return -1;
		if (*posted == 0) {
			show("pipeline", "up to %d work requests in flight; a completion asked for once "
			     "in every %d and on the last, the rest unsignalled", depth, every);
			show("iterations", "the first post shown above; %d more run quietly", iters - 1);
			show_quiet(true);
		}
		(*posted)++;
	}
	return 0;
}

/* Keeps the pipe full until all ITERS work requests have completed. */
static int pump(struct poller *p, const struct rdma_buf *buf, struct post_opts *wr, int iters,
		int depth)
{
	int every = signal_interval(depth), posted = 0, done = 0;
	struct ibv_wc wc;

	while (done < iters) {
		if (fill_pipe(p, buf, wr, &posted, done, iters, depth, every) ||
		    poller_wait_for(p, WR_ID_SEND, &wc))
			return -1;
		done = retire(done, every, iters);
	}
	return 0;
}

int run_pipelined_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int depth, int timeout_s)
{
	struct post_opts wr = *post;
	double start;
	int rc, left;

	/* A buffer must hold still while work requests that read it are in flight: it is
	 * filled once, with the pattern the target checks for the last message.  A READ's
	 * buffer is spoilt instead, so that the check sees what the READs brought. */
	fill_pattern(buf->addr, buf->len, post->op == OP_READ ? READ_POISON_SEED : (uint8_t)(iters - 1));
	if (poller_sync(p, 'P', timeout_s))
		return -1;
	start = now_us();
	rc = pump(p, buf, &wr, iters, depth);
	show_quiet(false);
	if (rc)
		return -1;
	show_pipeline_report(iters, buf->len, now_us() - start, post->op, depth, p->completions);
	if (post->op == OP_READ && !check_pattern(buf->addr, buf->len, 0))
		return -1;
	left = drain_completions(p->conn);
	if (left < 0)
		return -1;
	show("initiator CQ", "%d completion(s) left after the last signalled one: the unsignalled "
	     "work requests made none", left);
	poller_report(p);
	return poller_sync(p, 'D', timeout_s);
}
