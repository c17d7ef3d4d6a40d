/* main.c: step 11: a buffer moved over UC QPs in chunks of one path MTU, made reliable by the program: a bitmap of chunks in, selective acknowledgements, and only what is missing sent again. */
#include "chunk_map.h"
#include "cq_qp_rts.h"
#include "exchange.h"
#include "lossy_datapath.h"
#include "lossy_options.h"
#include "lossy_paths.h"
#include "lossy_wire.h"
#include "pattern.h"
#include "pause.h"
#include "post_wr.h"
#include "reg_mr.h"
#include "report.h"
#include "session.h"

#include <stdlib.h>

static const char purpose[] =
	"Step 11: on top of steps 01-05, move -s bytes (1M unless given) from the server (the\n"
	"sender: no HOST) to the client (the receiver) in chunks of one path MTU, each a WRITE\n"
	"with immediate (its number) over UC QPs, which never resend and never say that a\n"
	"packet was lost.  The receiver keeps a bitmap of the chunks in and answers the\n"
	"sender's asks with it (selective acknowledgements, over the session's RC QP); after\n"
	"each round and its timer (--rto-ms) the sender sends again only the chunks missing,\n"
	"until every chunk is in and checked byte for byte.  --qp-type rc moves the same\n"
	"chunks over RC QPs, whose transport resends a lost packet and every one after it\n"
	"(go-back-N).  Give both sides the same options.";

struct step_opts {
	struct reg_mr_opts mr;		/* the buffer: stage 2's one buffer */
	struct conn_opts conn;		/* the session's QP: the control channel */
	struct lossy_opts lossy;
};

/* What the end of the transfer says on both sides: the sender's account and the receiver's check. */
static void show_summary(const struct lossy_xfer *x, const struct lossy_end *e, bool right)
{
	double ms = (x->end_us - x->start_us) / 1000;

	show("goodput", "%zu bytes in %.1f ms, %.2f MB/s (10^6 bytes a second), from the go-ahead "
	     "to the final SACK (%s)", x->m->size, ms, ms > 0 ? (double)x->m->size / ms / 1e3 : 0.0,
	     x->bits ? "received here" : "sent from here");
	show("summary", "%s over %d path%s, %u chunks of %u bytes: sent again %llu chunks (%llu "
	     "bytes), rounds %u, check %s", lossy_qp_type_name(x->o), x->l->n, x->l->n > 1 ? "s" : "",
	     x->m->n, x->m->bytes, (unsigned long long)e->again, (unsigned long long)e->again_bytes,
	     e->rounds, right ? "right" : "WRONG");
}

/* The sender's account of the transfer to the receiver, the receiver's check back; both sides print the summary. */
static int finish(struct session *s, struct lossy_xfer *x, bool sender, int timeout_s)
{
	struct lossy_end e = { .rounds = x->round, .posts = x->posts, .again = x->again,
			       .again_bytes = x->again_bytes };
	bool right = false;

	if (sender) {
		if (lossy_end_send(s->conn.sock, &e, &right, timeout_s))
			return -1;
	} else {
		show("arrivals", "%llu WRITEs with immediate taken: %llu taken as lost by the test, %llu "
		     "duplicates; %u asks answered", (unsigned long long)x->arrivals,
		     (unsigned long long)x->dropped, (unsigned long long)x->duplicates, x->answered);
		if (lossy_end_recv(s->conn.sock, x->m, x->answered, &e, timeout_s))
			return -1;
		right = chunk_map_check(x->m, s->buf.addr);
		if (lossy_verdict_send(s->conn.sock, right, timeout_s))
			return -1;
	}
	lossy_show_planes(x, sender);
	show_summary(x, &e, right);
	if (!right) {
		if (sender)
			report_error("the receiver found bytes that are not ours in its buffer (see its "
				     "output)");
		return -1;
	}
	return 0;
}

/* The receiver's plan to the sender: the chunks, their size, its window, the paths; each side checks. */
static int agree_plan(struct session *s, struct lossy_link *l, const struct chunk_map *m,
		      bool sender, int timeout_s)
{
	struct lossy_plan ours = { .chunks = m->n, .chunk_bytes = m->bytes, .window = l->window,
				   .paths = (uint32_t)l->n }, theirs;

	show("chunks", "%u of %u bytes (the path MTU: one WRITE Only with Immediate packet each)%s",
	     m->n, m->bytes, m->size % m->bytes ? ", the last shorter" : "");
	if (!sender)
		return lossy_plan_send(s->conn.sock, &ours, timeout_s);
	if (lossy_plan_recv(s->conn.sock, &ours, &theirs, timeout_s))
		return -1;
	l->window = theirs.window;
	/* Until its first SACK, the receives it posts before the go-ahead are all our credit. */
	for (int k = 0; k < l->n; k++)
		l->path[k].receives = l->window;
	show("window", "the receiver keeps %u receives posted on each path: at most that many WRITEs "
	     "unconsumed a path", l->window);
	return 0;
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    post_wr_faults, lossy_plane_faults, NULL };

int main(int argc, char **argv)
{
	struct step_opts step = { 0 };
	const struct cli_stage stages[] = { REG_MR_STAGE(&step.mr), CQ_QP_PATH_STAGE(&step.conn),
					    LOSSY_STAGE(&step.lossy), { 0 } };
	const struct cli_spec spec = { .program = "11_lossy", .purpose = purpose,
				       .connects = true, .pauses = true, .stages = stages,
				       .faults = faults };
	struct cli_common opts;
	struct conn_hook hook;
	struct session sess;
	struct lossy_link link = { 0 };
	struct chunk_map map = { 0 };
	struct lossy_xfer x = { 0 };
	bool sender;
	int usage, status = EXIT_FAILURE, failures = 0;

	reg_mr_opts_default(&step.mr);
	step.mr.size = LOSSY_DEFAULT_SIZE;
	lossy_opts_default(&step.lossy);
	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;
	if (lossy_opts_check(&step.lossy, opts.ib_dev))
		return CLI_BAD_USAGE;
	sender = opts.host == NULL;
	if (sender)
		reg_mr_grant(&step.mr, 0, "the sender: our NIC only reads this buffer, which needs no "
			     "right; no peer may reach it");
	else
		reg_mr_grant(&step.mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			     "the receiver: the sender WRITEs every chunk into it (remote_write needs "
			     "local_write)");
	hook = (struct conn_hook){ .cap = lossy_ctl_caps() };
	step.conn.hook = &hook;

	show("role", "%s", sender ? "sender (the server: no HOST): its buffer goes out chunk by chunk" :
	     "receiver (the client): the chunks land in its buffer, and its bitmap says which");
	if (session_open(&sess, &opts, &step.mr, &step.conn))
		goto out_close_session;
	exchange_set_options(&sess.conn.local, "-s %zu --qp-type %s --paths %d", sess.buf.len,
			     lossy_qp_type_name(&step.lossy), step.lossy.paths);
	show_heading("stage 11: the data QPs, one a path");
	if (lossy_paths_create(&link, &sess, &step.lossy, &opts, &step.conn, sender))
		goto out_destroy_paths;
	if (connect_qp(&sess.dev, &opts, &sess.conn) ||
	    lossy_paths_connect(&link, &sess, sender, opts.timeout_s))
		goto out_destroy_paths;
	show_heading("stage 11: the chunks, and a buffer for the asks and SACKs");
	if (chunk_map_init(&map, sess.buf.len, lossy_path_mtu(&link), sender))
		goto out_destroy_paths;
	if (lossy_check_drops(&step.lossy, map.n) ||
	    agree_plan(&sess, &link, &map, sender, opts.timeout_s))
		goto out_free_map;
	x = (struct lossy_xfer){ .s = &sess, .l = &link, .m = &map, .o = &step.lossy,
				 .timeout_s = opts.timeout_s, .spin = !rdma_dev_is_software(&sess.dev) };
	show("waits", x.spin ? "a hardware NIC: a waiting side looks again at once, no system call, "
	     "and naps only once %d looks in a row found nothing (the timer's wait)" :
	     "a software device: a waiting side yields between looks (its \"NIC\" is kernel work "
	     "on these CPUs), and naps once %d looks in a row found nothing", LOSSY_SPIN_LOOKS);
	if (sender) {
		x.bits = calloc(1, chunk_map_bytes(map.n));
		if (!x.bits) {
			report_error("no memory for a SACK's bitmap of %u chunks", map.n);
			goto out_free_map;
		}
	}
	if (lossy_ctl_register(&link, &sess, sack_max_len(link.n, map.n)))
		goto out_free_bits;
	/* The receiver's bytes differ from the sender's in every byte until a chunk lands. */
	fill_pattern(sess.buf.addr, sess.buf.len, sender ? CHUNK_SEED : CHUNK_POISON_SEED);
	chunk_map_set_drops(&map, step.lossy.drop, sender ? 0 : step.lossy.n_drops);

	show_heading("stage 11: the transfer, round by round");
	if (lossy_post_first_receives(&x, sender) ||
	    exchange_sync(sess.conn.sock, 'G', opts.timeout_s) ||
	    (sender ? lossy_send(&x) : lossy_receive(&x)) ||
	    finish(&sess, &x, sender, opts.timeout_s))
		goto out_free_bits;
	if (opts.pause && pause_until_told("transfer done (see 'rdma resource show qp')"))
		goto out_free_bits;
	status = EXIT_SUCCESS;

	show_heading("teardown, in reverse order of creation");
out_free_bits:
	free(x.bits);
out_free_map:
	chunk_map_free(&map);
out_destroy_paths:
	/* The control QP goes first: its receives point into the control buffer. */
	failures += destroy_cq_qp(&sess.conn);
	failures += lossy_paths_destroy(&link);
out_close_session:
	failures += session_close(&sess);
	show("teardown", "%s", failures ? "some releases failed (see above)" : "every object released");
	return failures ? EXIT_FAILURE : status;
}
