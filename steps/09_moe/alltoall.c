/* alltoall.c: step 09's one-sided all-to-all: a chain of WRITEs into a peer's buffer, then its signal (a FETCH_ADD, or the last WRITE's immediate); the waits. */
#include "alltoall.h"
#include "clock.h"
#include "completion.h"
#include "fault.h"
#include "post_wr.h"
#include "procstat.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

/* rxe reaches its bandwidth at 64 KiB WRITEs (ib_write_bw), as step 07's slots. */
#define WRITE_PIECE ((size_t)64 << 10)
/* Looks at our signals between two looks at the clock and the control channel. */
#define CLOCK_EVERY 1024
/* A crowded wait's first nap, and its longest: the wait doubles it up to there. */
#define NAP_FIRST_NS 1000L
#define NAP_MOST_NS 1000000L

static const char *const phase_names[PHASES] = { "layout", "dispatch", "combine" };

const char *a2a_phase_name(enum moe_phase ph)
{
	return phase_names[ph];
}

void a2a_init(struct a2a *a, struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l,
	      enum moe_signal signal, int recvs, int timeout_s)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	*a = (struct a2a){ .m = m, .ctl = ctl, .l = l, .signal = signal, .timeout_s = timeout_s,
			   .crowded = cpus > 0 && m->world > cpus };
	for (int p = 0; p < m->world; p++)
		a->recv_left[p] = p == m->rank ? 0 : recvs;
	if (a->crowded)
		show("waits", "%d ranks on %ld online CPUs (every rank counted as on this node): the "
		     "ranks outnumber the CPUs, so a waiting rank sleeps between looks (nanosleep, 1 us "
		     "doubling to 1 ms) instead of yielding, which would hand the CPU to another "
		     "waiting rank and leave rxe's kernel work behind them", m->world, cpus);
	else
		show("waits", "%d ranks on %ld online CPUs: a waiting rank yields between looks "
		     "(sched_yield), as a proxy thread on a core of its own would spin", m->world, cpus);
}

/* The immediate of our signal: the exchange (16 bits), the phase, the sender. */
static uint32_t imm_of(const struct a2a *a)
{
	return (a->seq & 0xffff) << 16 | (uint32_t)a->ph << 8 | (uint32_t)a->m->rank;
}

int a2a_begin(struct a2a *a, enum moe_phase ph, struct a2a_stats *st)
{
	struct moe_mesh *m = a->m;

	a->ph = ph;
	a->st = st;
	a->rounds[ph]++;
	if (a->signal != SIGNAL_IMM)
		return 0;
	for (int p = 0; p < m->world; p++) {
		int more = A2A_RECV_BATCH - a->recv_left[p];

		if (p == m->rank)
			continue;
		if (a->came[0][p] && a->came[0][p] != ph + 1) {
			ctl_fail(a->ctl, p, "its early signal of exchange %u named the %s, ours is the %s",
				 a->seq, phase_names[a->came[0][p] - 1], phase_names[ph]);
			return -1;
		}
		if (a->recv_left[p] >= A2A_RECV_LOW)
			continue;
		if (post_receives(&m->conn[p], &m->buf, 0, more)) {
			ctl_fail(a->ctl, m->rank, "it could not post its receives for rank %d", p);
			return -1;
		}
		a->recv_left[p] += more;
		st->recv_posts++;
	}
	return 0;
}

/* The piece size that fits the chain in the send queue, the signal included. */
static size_t piece_for(size_t len)
{
	size_t fit = (len + QUEUE_DEPTH - 2) / (QUEUE_DEPTH - 1);

	return fit > WRITE_PIECE ? fit : WRITE_PIECE;
}

/* Fills WR[0..] with the WRITEs of LEN bytes, each taking the next SGE; returns how many. */
static int chain_writes(struct moe_mesh *m, const struct rdma_conn *c, size_t src, uint64_t dst,
			size_t len, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	size_t piece = piece_for(len);
	int n = 0;

	for (size_t off = 0; off < len; off += piece, n++) {
		size_t bytes = len - off < piece ? len - off : piece;

		sge[n] = (struct ibv_sge){ .addr = (uintptr_t)m->buf.addr + src + off,
					   .length = (uint32_t)bytes, .lkey = m->buf.mr->lkey };
		wr[n] = (struct ibv_send_wr){
			.wr_id = WR_ID_SEND,
			.sg_list = &sge[n],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.next = &wr[n + 1],
			.wr.rdma = { .remote_addr = c->remote.addr + dst + off, .rkey = c->remote.rkey },
		};
	}
	return n;
}

/*
 * The signal, after the data on the same QP, on the peer's word of the phase
 * kept for us.  RC executes one QP's WRs in order, and the responder places a
 * WRITE's data before it executes a later atomic: so once that word counts
 * this exchange, our bytes are there.  No IBV_SEND_FENCE: a fence holds a WR
 * until earlier READs and atomics complete, for a WR that depends on what
 * they bring back; nothing here reads.  On two QPs no order holds at all.
 * WR N; returns N + 1.
 */
static int signal_fadd(const struct a2a *a, const struct rdma_conn *c, int peer, int n,
		       struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	sge[n] = (struct ibv_sge){ .addr = (uintptr_t)a->m->buf.addr + a->l->old + 8 * (size_t)peer,
				   .length = 8, .lkey = a->m->buf.mr->lkey };
	wr[n] = (struct ibv_send_wr){
		.wr_id = WR_ID_SEND,
		.sg_list = &sge[n],
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = c->remote.addr +
					      layout_sig_word(a->l, a->ph, a->m->rank),
			       .compare_add = 1, .rkey = c->remote.rkey },
	};
	return n + 1;
}

/*
 * The signal as the last WRITE's immediate: the peer's receive completes
 * only once that WRITE's data is placed, and RC placed every WRITE before it
 * on this QP first.  With no data, a zero-byte WRITE with immediate (no SGE)
 * carries it alone.  Returns the chain's length.
 */
static int signal_imm(const struct a2a *a, const struct rdma_conn *c, uint64_t dst, int n,
		      struct ibv_send_wr *wr)
{
	if (n == 0)
		wr[n++] = (struct ibv_send_wr){
			.wr_id = WR_ID_SEND,
			.wr.rdma = { .remote_addr = c->remote.addr + dst, .rkey = c->remote.rkey },
		};
	wr[n - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[n - 1].imm_data = htonl(imm_of(a));
	wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	return n;
}

static void show_posted(const struct a2a *a, int peer, int writes, uint64_t dst, size_t len)
{
	const char *ph = phase_names[a->ph], *s = writes == 1 ? "" : "s";

	if (a->signal == SIGNAL_FADD)
		show("ibv_post_send", "%s to rank %d: %d WRITE%s of %zu B in all at its offset %llu, "
		     "unsignalled, then FETCH_ADD +1 on its %s word for rank %d, signalled: one post",
		     ph, peer, writes, s, len, (unsigned long long)dst, ph, a->m->rank);
	else
		show("ibv_post_send", "%s to rank %d: %d WRITE%s of %zu B in all at its offset %llu, "
		     "the last with immediate 0x%08x (exchange %u, %s, from rank %d), signalled: one "
		     "post", ph, peer, writes, s, len, (unsigned long long)dst, imm_of(a), a->seq, ph,
		     a->m->rank);
}

/*
 * The write() system calls of a post, from /proc/self/io's syscw read before
 * and after it: on rxe, ibv_post_send rings its doorbell with one write() to
 * the uverbs device.  Reading the file is a read(), not counted there.
 */
static long syscw_now(const struct a2a *a)
{
	return a->count_syscalls ? proc_io_count("syscw") : -1;
}

static void count_post(struct a2a_stats *st, long before, long after)
{
	if (before < 0 || after < 0)
		st->post_syscalls = -1;
	else if (st->post_syscalls >= 0)
		st->post_syscalls += after - before;
}

int a2a_post(struct a2a *a, int peer, size_t src, uint64_t dst, size_t len,
	     struct a2a_stats *st)
{
	struct rdma_conn *c = &a->m->conn[peer];
	struct ibv_send_wr wr[QUEUE_DEPTH], *bad;
	struct ibv_sge sge[QUEUE_DEPTH];
	int writes = chain_writes(a->m, c, src, dst, len, wr, sge), n, rc;
	long syscw;

	if (a->signal == SIGNAL_FADD)
		n = signal_fadd(a, c, peer, writes, wr, sge);
	else
		n = writes = signal_imm(a, c, dst, writes, wr);
	wr[n - 1].next = NULL;
	syscw = syscw_now(a);
	rc = fault_at("post_send") ? errno : ibv_post_send(c->qp, wr, &bad);
	count_post(st, syscw, syscw_now(a));
	if (rc) {
		report_verb_error(a->signal == SIGNAL_FADD ? "ibv_post_send (WRITEs, then FETCH_ADD)" :
				  "ibv_post_send (WRITEs, the last with immediate)", rc);
		ctl_fail(a->ctl, a->m->rank, "it could not post its %s to rank %d", phase_names[a->ph],
			 peer);
		return -1;
	}
	show_posted(a, peer, writes, dst, len);
	a->sending[peer] = true;
	st->posts++;
	st->writes += (uint64_t)writes;
	st->atomics += a->signal == SIGNAL_FADD;
	st->imms += a->signal == SIGNAL_IMM;
	st->bytes += len;
	return 0;
}

/* A receive completion: PEER's WRITE with immediate, which must name PEER, a phase and this exchange or the next. */
static int take_signal(struct a2a *a, int peer, const struct ibv_wc *wc)
{
	uint32_t imm = ntohl(wc->imm_data), from = imm & 0xff, ph = imm >> 8 & 0xff, seq = imm >> 16;
	int slot = seq == (a->seq & 0xffff) ? 0 : seq == ((a->seq + 1) & 0xffff) ? 1 : -1;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || from != (uint32_t)peer || ph >= PHASES || slot < 0 ||
	    (slot == 0 && ph != a->ph) || a->came[slot][peer]) {
		ctl_fail(a->ctl, peer, "its WRITE with immediate 0x%08x (exchange %u, phase %u, rank "
			 "%u) is no signal we wait for: we are at exchange %u, the %s", imm, seq, ph,
			 from, a->seq, phase_names[a->ph]);
		return -1;
	}
	a->came[slot][peer] = (uint8_t)(ph + 1);
	a->recv_left[peer]--;
	a->signals_in++;
	show("signal", "rank %d's WRITE with immediate 0x%08x: exchange %u, %s, from rank %u%s",
	     peer, imm, seq, phase_names[ph], from, slot ? " (the next exchange's, early: kept for it)" :
	     "");
	return 0;
}

/* A send completion: our signal to PEER is done, and every WRITE before it. */
static void take_sent(struct a2a *a, int peer)
{
	a->sending[peer] = false;
	if (a->signal == SIGNAL_FADD)
		show("completion", "rank %d: FETCH_ADD done, the old value of our word there was %llu",
		     peer, (unsigned long long)*(uint64_t *)((char *)a->m->buf.addr + a->l->old +
							     8 * (size_t)peer));
	else
		show("completion", "rank %d: our WRITE with immediate acknowledged, and every WRITE "
		     "before it", peer);
}

/* Takes what our CQ to PEER holds now: our signal's completion, and (imm) the peer's signals. 0 or -1. */
static int reap_peer(struct a2a *a, int peer)
{
	struct ibv_wc wc[4];
	int n = ibv_poll_cq(a->m->conn[peer].cq, 4, wc);

	if (n < 0) {
		ctl_fail(a->ctl, a->m->rank, "it could not poll its CQ to rank %d", peer);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		/* Stage 4's check: a failed status (or the fault point "completion") is named there. */
		if (check_good_completion(&wc[i])) {
			ctl_fail_neighbour(a->ctl, peer, "our WRs to it did not complete (see the line "
					   "above): its QP is gone or unreachable");
			return -1;
		}
		if (!(wc[i].opcode & IBV_WC_RECV))
			take_sent(a, peer);
		else if (take_signal(a, peer, &wc[i]))
			return -1;
	}
	return 0;
}

static int reap_all(struct a2a *a)
{
	for (int p = 0; p < a->m->world; p++)
		if (p != a->m->rank && reap_peer(a, p))
			return -1;
	return 0;
}

/* Whether PEER's signal of this exchange has come: its word of the phase (fadd), or a receive completion (imm). */
static bool signalled(const struct a2a *a, int peer)
{
	const uint64_t *word;

	if (a->signal == SIGNAL_IMM)
		return a->came[0][peer] != 0;
	/* PEER's word of the phase grows by 1 each exchange of that phase. */
	word = (const uint64_t *)((char *)a->m->buf.addr + layout_sig_word(a->l, a->ph, peer));
	return __atomic_load_n(word, __ATOMIC_ACQUIRE) >= a->rounds[a->ph];
}

/* How many peers have signalled this exchange: one look at each peer's word (fadd) or receive (imm). */
static uint64_t signals_now(const struct a2a *a)
{
	uint64_t n = 0;

	for (int p = 0; p < a->m->world; p++)
		n += p != a->m->rank && signalled(a, p);
	return n;
}

/* The first peer whose signal of this exchange has not come, or -1 when every one has. */
static int first_silent(const struct a2a *a)
{
	for (int p = 0; p < a->m->world; p++)
		if (p != a->m->rank && !signalled(a, p))
			return p;
	return -1;
}

/* Between two looks: a yield, or, when the ranks outnumber the CPUs, a nap that doubles up to 1 ms. */
static void give_cpu(struct a2a *a, long *nap_ns)
{
	struct timespec t = { .tv_nsec = *nap_ns };

	if (!a->crowded) {
		sched_yield();
		a->st->yields++;
		return;
	}
	nanosleep(&t, NULL);
	a->st->naps++;
	*nap_ns = *nap_ns * 2 > NAP_MOST_NS ? NAP_MOST_NS : *nap_ns * 2;
}

/*
 * Every CLOCK_EVERY looks (every look when they sleep): another rank's
 * failure, or -t passed.  Then PEER, whose completion we wait for, is named;
 * or, waiting for signals (PEER -1), the first peer whose signal has not
 * come, and how many have.
 */
static int look_around(struct a2a *a, unsigned spins, const struct timespec *start, int peer)
{
	uint64_t want = (uint64_t)(a->m->world - 1);
	int silent;

	if (!a->crowded && spins % CLOCK_EVERY)
		return 0;
	if (ctl_check(a->ctl))
		return -1;
	if (ms_since(start) <= a->timeout_s * 1000L)
		return 0;
	if (peer >= 0) {
		ctl_fail(a->ctl, peer, "our %s to it did not complete within %d s", a->signal ==
			 SIGNAL_FADD ? "FETCH_ADD" : "WRITE with immediate", a->timeout_s);
		return -1;
	}
	silent = first_silent(a);
	/* The last signal came since the last look: the wait's next look ends it. */
	if (silent < 0)
		return 0;
	ctl_fail(a->ctl, silent, "its %s signal did not come within %d s (%llu of %llu peers "
		 "signalled): alive or not, it did not send it", phase_names[a->ph], a->timeout_s,
		 (unsigned long long)signals_now(a), (unsigned long long)want);
	return -1;
}

int a2a_wait_signal(struct a2a *a)
{
	uint64_t want = (uint64_t)(a->m->world - 1), now;
	long nap_ns = NAP_FIRST_NS;
	struct timespec start;
	unsigned spins = 0;

	clock_start(&start);
	/* Under emulation rxe's work runs on the ranks' CPUs: give ours away between looks. */
	while ((now = signals_now(a)) < want) {
		if (a->signal == SIGNAL_IMM && reap_all(a))
			return -1;
		give_cpu(a, &nap_ns);
		if (look_around(a, ++spins, &start, -1))
			return -1;
	}
	if (a->signal == SIGNAL_FADD) {
		a->signals_in += now;
		show("signal", "our %llu %s word%s (one per sender)%s read %u: every peer's data is "
		     "here", (unsigned long long)now, phase_names[a->ph], now == 1 ? "" : "s",
		     now == 1 ? "" : " each", a->rounds[a->ph]);
	} else {
		show("signal", "%llu WRITEs with immediate of our %s came = N - 1: every peer's data "
		     "is here", (unsigned long long)now, phase_names[a->ph]);
	}
	return 0;
}

/* The first peer whose signal from us has not completed, or -1. */
static int first_sending(const struct a2a *a)
{
	for (int p = 0; p < a->m->world; p++)
		if (a->sending[p])
			return p;
	return -1;
}

int a2a_wait_sent(struct a2a *a)
{
	long nap_ns = NAP_FIRST_NS;
	struct timespec start;
	unsigned spins = 0;
	int p;

	clock_start(&start);
	while ((p = first_sending(a)) >= 0) {
		if (reap_all(a))
			return -1;
		if (first_sending(a) < 0)
			break;
		give_cpu(a, &nap_ns);
		if (look_around(a, ++spins, &start, p))
			return -1;
	}
	return 0;
}

void a2a_end(struct a2a *a)
{
	for (int p = 0; p < a->m->world; p++) {
		a->came[0][p] = a->came[1][p];
		a->came[1][p] = 0;
	}
	a->seq++;
}
