/* a2a_report.c: step 09's all-to-all, its bookkeeping and its lines: the waits' rule, each post's line and system calls, the signals counted and kept for the next exchange, and whom a wait that ran out names. */
#include "moe_datapath.h"
#include "procstat.h"
#include "report.h"

static const char *const phase_names[PHASES] = { "layout", "dispatch", "combine" };

const char *a2a_phase_name(enum moe_phase ph)
{
	return phase_names[ph];
}

void a2a_init(struct a2a *a, struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l,
	      enum moe_signal signal, int recvs, int timeout_s)
{
	*a = (struct a2a){ .m = m, .ctl = ctl, .l = l, .signal = signal, .timeout_s = timeout_s,
			   .rule = progress_rule_for(&m->dev, m->world) };
	for (int p = 0; p < m->world; p++)
		a->recv_left[p] = p == m->rank ? 0 : recvs;
}

/*
 * The write() system calls of a post, from /proc/self/io's syscw read before
 * and after it: on rxe, ibv_post_send rings its doorbell with one write() to
 * the uverbs device.  Reading the file is a read(), not counted there.
 */
long a2a_syscw(const struct a2a *a)
{
	return a->count_syscalls ? proc_io_count("syscw") : -1;
}

void a2a_count_post(struct a2a_stats *st, long before, long after)
{
	if (before < 0 || after < 0)
		st->post_syscalls = -1;
	else if (st->post_syscalls >= 0)
		st->post_syscalls += after - before;
}

void a2a_posted(const struct a2a *a, int peer, int writes, uint64_t dst, size_t len,
		struct a2a_stats *st)
{
	const char *ph = phase_names[a->ph], *s = writes == 1 ? "" : "s";

	if (a->signal == SIGNAL_FADD)
		show("ibv_post_send", "%s to rank %d: %d WRITE%s of %zu B in all at its offset %llu, "
		     "unsignalled, then FETCH_ADD +1 on its %s word for rank %d, signalled: one post",
		     ph, peer, writes, s, len, (unsigned long long)dst, ph, a->m->rank);
	else
		show("ibv_post_send", "%s to rank %d: %d WRITE%s of %zu B in all at its offset %llu, "
		     "the last with immediate 0x%08x (exchange %u, %s, from rank %d), signalled: one "
		     "post", ph, peer, writes, s, len, (unsigned long long)dst,
		     moe_imm(a->seq, a->ph, a->m->rank), a->seq, ph, a->m->rank);
	st->posts++;
	st->writes += (uint64_t)writes;
	st->atomics += a->signal == SIGNAL_FADD;
	st->imms += a->signal == SIGNAL_IMM;
	st->bytes += len;
}

void a2a_show_signal(int peer, uint32_t imm, int slot)
{
	show("signal", "rank %d's WRITE with immediate 0x%08x: exchange %u, %s, from rank %u%s",
	     peer, imm, moe_imm_exchange(imm), phase_names[moe_imm_phase(imm)], moe_imm_sender(imm),
	     slot ? " (the next exchange's, early: kept for it)" : "");
}

void a2a_show_sent(const struct a2a *a, int peer)
{
	if (a->signal == SIGNAL_FADD)
		show("completion", "rank %d: FETCH_ADD done, the old value of our word there was %llu",
		     peer, (unsigned long long)*(uint64_t *)((char *)a->m->buf.addr + a->l->old +
							     8 * (size_t)peer));
	else
		show("completion", "rank %d: our WRITE with immediate acknowledged, and every WRITE "
		     "before it", peer);
}

void a2a_show_signals(struct a2a *a, uint64_t now)
{
	if (a->signal == SIGNAL_FADD) {
		a->signals_in += now;
		show("signal", "our %llu %s word%s (one per sender)%s read %u: every peer's data is "
		     "here", (unsigned long long)now, phase_names[a->ph], now == 1 ? "" : "s",
		     now == 1 ? "" : " each", a->rounds[a->ph]);
	} else {
		show("signal", "%llu WRITEs with immediate of our %s came = N - 1: every peer's data "
		     "is here", (unsigned long long)now, phase_names[a->ph]);
	}
}

void a2a_name_silent(struct a2a *a, int silent, uint64_t signals)
{
	ctl_fail(a->ctl, silent, "its %s signal did not come within %d s (%llu of %d peers "
		 "signalled): alive or not, it did not send it", phase_names[a->ph], a->timeout_s,
		 (unsigned long long)signals, a->m->world - 1);
}

int a2a_first_sending(const struct a2a *a)
{
	for (int p = 0; p < a->m->world; p++)
		if (a->sending[p])
			return p;
	return -1;
}

int a2a_waited(struct a2a *a, const struct progress *pr, int rc)
{
	a->st->yields += pr->yields;
	a->st->naps += pr->naps;
	return rc;
}

int a2a_check_early(struct a2a *a)
{
	for (int p = 0; p < a->m->world; p++)
		if (a->came[0][p] && a->came[0][p] != a->ph + 1) {
			ctl_fail(a->ctl, p, "its early signal of exchange %u named the %s, ours is the %s",
				 a->seq, phase_names[a->came[0][p] - 1], phase_names[a->ph]);
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
