/* reg_mr.c: stage 2 of the verbs workflow: register memory (pin its pages, get lkey and rkey). */
#include "reg_mr.h"
#include "clock.h"
#include "fault.h"
#include "procstat.h"
#include "report.h"
#include "teardown.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

const struct fault_point reg_mr_faults[] = {
	{ "reg_mr", "ibv_reg_mr", ENOMEM },
	{ "dereg_mr", "ibv_dereg_mr", EBUSY },
	{ 0 },
};

#define MAX_MR_SIZE ((size_t)1 << 34)

static const struct flag_name access_names[] = {
	{ "local_write", IBV_ACCESS_LOCAL_WRITE },
	{ "remote_write", IBV_ACCESS_REMOTE_WRITE },
	{ "remote_read", IBV_ACCESS_REMOTE_READ },
	{ "remote_atomic", IBV_ACCESS_REMOTE_ATOMIC },
	{ "mw_bind", IBV_ACCESS_MW_BIND },
#ifdef HAVE_IBV_WR_FLUSH
	/* rdma-core 45 and later: the right to FLUSH the MR, per placement type. */
	{ "flush_global", IBV_ACCESS_FLUSH_GLOBAL },
	{ "flush_persistent", IBV_ACCESS_FLUSH_PERSISTENT },
#endif
	/*
	 * An optional flag (IBV_ACCESS_OPTIONAL_RANGE): a device that cannot relax the order of its
	 * PCIe writes registers the MR without it, and no verb says which happened.
	 */
	{ "relaxed_ordering", IBV_ACCESS_RELAXED_ORDERING },
};

#define N_ACCESS (sizeof(access_names) / sizeof(access_names[0]))

void reg_mr_opts_default(struct reg_mr_opts *opts)
{
	*opts = (struct reg_mr_opts){
		.size = REG_MR_DEFAULT_SIZE,
		.access = REG_MR_DEFAULT_ACCESS,
		.access_why = "step 02's default, all three rights, so that both keys can be seen; "
			      "later steps grant only what their role needs",
	};
}

void reg_mr_grant(struct reg_mr_opts *opts, int access, const char *why)
{
	if (opts->access_given)
		return;
	opts->access = access;
	opts->access_why = why;
}

bool access_is_remote(int access)
{
	return access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
}

/* Parses a comma-separated list of access_names, in place of a copy that could truncate it. */
static int parse_access(const char *arg, int *access)
{
	const char *word = arg;
	size_t i, len;

	if (!*arg) {
		report_error("--access: the list is empty; name at least local_write (an MR always "
			     "allows local reads), or leave -a out");
		return -1;
	}
	*access = 0;
	for (;;) {
		len = strcspn(word, ",");
		for (i = 0; i < N_ACCESS; i++)
			if (strlen(access_names[i].name) == len && !strncmp(word, access_names[i].name, len))
				break;
		if (i == N_ACCESS) {
			report_error("--access: unknown flag '%.*s'; use a comma-separated list of "
				     "local_write, remote_write, remote_read, remote_atomic, mw_bind, "
				     "relaxed_ordering", (int)len,
				     word);
			return -1;
		}
		*access |= (int)access_names[i].flag;
		if (!word[len])
			return 0;
		word += len + 1;
	}
}

const struct cli_option reg_mr_cli_options[] = {
	{ "size", 's', "BYTES", "buffer size, e.g. 4096, 64K, 1M (default: 4096, unless the purpose above gives another)", CLI_SIZE_AT(struct reg_mr_opts, size, 1, MAX_MR_SIZE) },
	{ "access", 'a', "LIST", "MR access: local_write,remote_write,remote_read,remote_atomic,mw_bind,"
				 "relaxed_ordering (default: what the step's role needs; step 02: the first three)", CLI_STAGE_PARSES },
	{ 0 },
};

/* --odp, in both tables that offer it. */
#define REG_MR_ODP_OPTION \
	{ "odp", CLI_KEY_ODP, NULL, "register on demand (IBV_ACCESS_ON_DEMAND): no page pinned, each " \
				    "faulted in at the NIC's first access; needs a device whose odp_caps say so", \
				    CLI_FLAG_AT(struct reg_mr_opts, odp) }

const struct cli_option reg_mr_odp_cli_options[] = {
	REG_MR_ODP_OPTION,
	{ 0 },
};

const struct cli_option reg_mr_paging_cli_options[] = {
	REG_MR_ODP_OPTION,
	{ "fork", CLI_KEY_FORK, NULL, "fork after registering: the child reads and writes the buffer, "
				      "and we say what it saw and what it did to our copy", CLI_FLAG_AT(struct reg_mr_opts, fork) },
	{ 0 },
};

/* -a; cli_parse fills the others, as their entries say. */
int reg_mr_parse_option(int key, const char *arg, void *ctx)
{
	struct reg_mr_opts *opts = ctx;

	(void)key;
	opts->access_given = true;
	opts->access_why = "as -a asked";
	return parse_access(arg, &opts->access);
}

void access_flags_format(int access, char *buf, size_t len)
{
	if (!flag_names_format((uint64_t)access, access_names, N_ACCESS, buf, len))
		snprintf(buf, len, "none");
}

static void format_limit(rlim_t limit, char *buf, size_t len)
{
	if (limit == RLIM_INFINITY)
		snprintf(buf, len, "unlimited");
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)limit);
}

static void show_memlock_limit(void)
{
	struct rlimit rl;
	char soft[32];

	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		return;
	format_limit(rl.rlim_cur, soft, sizeof(soft));
	show("RLIMIT_MEMLOCK", "%s%s", soft,
	     geteuid() == 0 ? " (root, with CAP_IPC_LOCK, is exempt)" : "");
}

/* Explains a failed registration in terms a learner can act on. */
static void report_reg_mr_failure(int err, const struct reg_mr_opts *opts)
{
	struct rlimit rl;

	report_verb_error("ibv_reg_mr", err);
	if ((err == ENOMEM || err == EPERM) && !getrlimit(RLIMIT_MEMLOCK, &rl) &&
	    rl.rlim_cur != RLIM_INFINITY && opts->size > rl.rlim_cur)
		report_error("registering %zu bytes pins them, but RLIMIT_MEMLOCK allows %llu: "
			     "raise it with 'ulimit -l unlimited' (as root), or set 'memlock' in "
			     "/etc/security/limits.conf, or register less with -s",
			     opts->size, (unsigned long long)rl.rlim_cur);
	else if (err == EINVAL && (opts->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		 !(opts->access & IBV_ACCESS_LOCAL_WRITE))
		report_error("remote_write and remote_atomic need local_write too: add it to -a");
#ifdef HAVE_IBV_WR_FLUSH
	else if (err == EINVAL && (opts->access & IBV_ACCESS_FLUSH_PERSISTENT))
		report_error("flush_persistent: the kernel accepts it only for memory that keeps its "
			     "bytes through a power loss (rxe: every page in a persistent-memory "
			     "region), and this buffer is ordinary memory");
#endif
}

/* What an RC QP may do on ODP memory: the bits of odp_caps.per_transport_caps.rc_odp_caps. */
static const struct flag_name odp_op_names[] = {
	{ "send", IBV_ODP_SUPPORT_SEND },
	{ "recv", IBV_ODP_SUPPORT_RECV },
	{ "write", IBV_ODP_SUPPORT_WRITE },
	{ "read", IBV_ODP_SUPPORT_READ },
	{ "atomic", IBV_ODP_SUPPORT_ATOMIC },
	{ "srq_recv", IBV_ODP_SUPPORT_SRQ_RECV },
};

/*
 * --odp: the device's odp_caps (stage 1 read them, ibv_query_device_ex), checked
 * before anything is registered: ibv_reg_mr with IBV_ACCESS_ON_DEMAND on a device
 * without them fails with a bare EINVAL.  0, or -1 after saying which kernel has it.
 */
int check_odp_support(const struct rdma_dev *dev)
{
	const char *name = ibv_get_device_name(dev->ctx->device);
	const struct ibv_odp_caps *odp = &dev->odp_caps;
	char ops[96];

	if (!flag_names_format(odp->per_transport_caps.rc_odp_caps, odp_op_names,
			       sizeof(odp_op_names) / sizeof(odp_op_names[0]), ops, sizeof(ops)))
		snprintf(ops, sizeof(ops), "none");
	show("odp_caps", "general_caps 0x%" PRIx64 "%s, RC: %s", odp->general_caps,
	     odp->general_caps & IBV_ODP_SUPPORT ? " (IBV_ODP_SUPPORT)" : "", ops);
	if (!(odp->general_caps & IBV_ODP_SUPPORT)) {
		report_error("--odp: %s does no on-demand paging (odp_caps.general_caps has no "
			     "IBV_ODP_SUPPORT), so ibv_reg_mr would refuse IBV_ACCESS_ON_DEMAND with "
			     "EINVAL; rxe has it in Linux 7.3 but not in 6.1 or 6.12: boot the VM "
			     "with RDMA_VM_KERNEL=trixie-backports, or drop --odp", name);
		return -1;
	}
	return 0;
}

/*
 * What an ODP registration did to the process: nothing pinned, nothing
 * faulted in; what RLIMIT_MEMLOCK then means; and the one verb that would
 * fault pages in without a work request, which this provider lacks.
 */
static void show_odp_registration(const struct rdma_buf *buf, long rss_before, double reg_us)
{
	/* One SGE's length is 32 bits: a larger region is prefetched from its start. */
	struct ibv_sge sge = { .addr = (uintptr_t)buf->addr,
			       .length = buf->len > UINT32_MAX ? UINT32_MAX : (uint32_t)buf->len,
			       .lkey = buf->mr->lkey };
	long rss_after = proc_status_kb("VmRSS");
	struct rlimit rl;
	int rc;

	show("VmRSS", "%ld kB before, %ld kB after: %ld kB faulted in by ibv_reg_mr, which took "
	     "%.0f us: an ODP MR maps a page when the NIC first touches it", rss_before, rss_after,
	     rss_after - rss_before, reg_us);
	if (geteuid() != 0 && !getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    buf->len > rl.rlim_cur)
		show("memlock", "%zu bytes registered, over RLIMIT_MEMLOCK's %llu: the limit counts "
		     "pinned pages, and an ODP MR pins none", buf->len,
		     (unsigned long long)rl.rlim_cur);
	/* Prefetch: fault the range in now, as the NIC's first access would. */
	rc = ibv_advise_mr(buf->mr->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	if (rc)
		show("ibv_advise_mr", "%s (errno %d): this provider has no prefetch (rxe's has it from "
		     "rdma-core 59 on), so the first access pays the fault",
		     strerror(rc), rc);
	else
		show("ibv_advise_mr", "%u bytes prefetched: VmRSS %ld kB now", sge.length,
		     proc_status_kb("VmRSS"));
}

int register_buffer(struct rdma_dev *dev, const struct reg_mr_opts *opts, struct rdma_buf *buf)
{
	long page = sysconf(_SC_PAGESIZE), pin_before, pin_after, rss_before;
	int access_flags = opts->access | (opts->odp ? IBV_ACCESS_ON_DEMAND : 0);
	char access[96];
	double t0;
	int rc;

	*buf = (struct rdma_buf){ .len = opts->size, .access = opts->access, .on_demand = opts->odp };
	rc = posix_memalign(&buf->addr, (size_t)page, buf->len);
	if (rc) {
		report_verb_error("posix_memalign", rc);
		buf->addr = NULL;
		return -1;
	}
	/* An ODP buffer stays fresh, never touched, so that no page of it is present yet. */
	if (!opts->odp)
		memset(buf->addr, 0, buf->len);
	show("buffer", "%zu bytes at %p, aligned to the %ld-byte page%s", buf->len, buf->addr, page,
	     opts->odp ? ", never touched" : "");
	show_memlock_limit();
	if (opts->odp && check_odp_support(dev))
		goto out_free_buffer;

	access_flags_format(opts->access, access, sizeof(access));
	show("access", "%s%s: %s", access, opts->odp ? ", on_demand" : "", opts->access_why);

	/*
	 * Registration pins the pages and gives the NIC their translation: they may no longer
	 * move.  With IBV_ACCESS_ON_DEMAND it pins nothing: the NIC faults each page in.
	 */
	pin_before = proc_status_kb("VmPin");
	rss_before = proc_status_kb("VmRSS");
	t0 = now_us();
	buf->mr = fault_at("reg_mr") ? NULL : ibv_reg_mr(dev->pd, buf->addr, buf->len, access_flags);
	if (!buf->mr) {
		report_reg_mr_failure(errno, opts);
		goto out_free_buffer;
	}
	t0 = now_us() - t0;
	pin_after = proc_status_kb("VmPin");
	show("ibv_reg_mr", "memory region registered: addr %p, length %zu, access %s",
	     buf->mr->addr, buf->mr->length, access);
	show("lkey", "0x%x (for our own work requests)", buf->mr->lkey);
	if (access_is_remote(opts->access))
		show("rkey", "0x%x (what a peer needs to read or write this memory)", buf->mr->rkey);
	else
		show("rkey", "0x%x, of no use: no remote access was granted, so no peer is given it",
		     buf->mr->rkey);
	show("VmPin", "%ld kB before, %ld kB after: %ld kB pinned", pin_before, pin_after,
	     pin_after - pin_before);
	if (opts->odp)
		show_odp_registration(buf, rss_before, t0);
	return 0;

out_free_buffer:
	free(buf->addr);
	buf->addr = NULL;
	return -1;
}

/*
 * How fork_and_touch's child ended, in the book's words; STATUS is waitpid's,
 * DONTFORK whether the buffer's mapping was VM_DONTCOPY at the fork.  Our
 * byte is still 0xaa.
 */
static void show_child_end(int status, bool dontfork)
{
	if (WIFSIGNALED(status) && dontfork)
		show("fork", "the child was killed by %s when it touched the buffer: the range was "
		     "MADV_DONTFORK, so the child has no page there at all; our byte is still 0xaa",
		     strsignal(WTERMSIG(status)));
	else if (WIFSIGNALED(status))
		show("fork", "the child was killed by %s; our byte is still 0xaa",
		     strsignal(WTERMSIG(status)));
	else
		show("fork", "the child exited %d; our byte is still 0xaa: the child wrote a copy "
		     "of its own, and the NIC's pages stayed ours", WEXITSTATUS(status));
}

int fork_and_touch(const struct rdma_buf *buf)
{
	static const char *const fork_names[] = {
		[IBV_FORK_DISABLED] = "IBV_FORK_DISABLED",
		[IBV_FORK_ENABLED] = "IBV_FORK_ENABLED",
		[IBV_FORK_UNNEEDED] = "IBV_FORK_UNNEEDED",
	};
	enum ibv_fork_status fs = ibv_is_fork_initialized();
	volatile unsigned char *byte = buf->addr;
	const char *safe = getenv("RDMAV_FORK_SAFE");
	int status, dontfork;
	pid_t pid;

	show("ibv_is_fork_initialized", "%s%s; RDMAV_FORK_SAFE %s", fork_names[fs],
	     fs == IBV_FORK_UNNEEDED ? " (the kernel copies pinned pages into a child at fork)" : "",
	     safe ? "set: libibverbs may mark each pinned MR MADV_DONTFORK" : "unset");
	/*
	 * Whether it did is the kernel's to say: MADV_DONTFORK sets VM_DONTCOPY
	 * on the mapping, "dc" among its VmFlags.  rdma-core 44 (Debian 12) marks
	 * the range all the same; rdma-core 56 (Debian 13) skips the mark where
	 * the kernel copies pinned pages at fork, unless RDMAV_USE_MADVISE is set.
	 */
	dontfork = proc_vma_has_flag(buf->addr, "dc");
	if (dontfork < 0) {
		report_error("fork: no mapping of /proc/self/smaps holds the buffer at %p", buf->addr);
		return -1;
	}
	show("VmFlags", "the buffer's mapping %s: %s", dontfork ? "has dc (VM_DONTCOPY, set by "
	     "MADV_DONTFORK)" : "has no dc", dontfork ? "a child gets no page there" :
	     "a child gets a copy of its own");
	*byte = 0xaa;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		report_verb_error("fork", errno);
		return -1;
	}
	if (pid == 0) {
		/* The child: no verb, no teardown (the MR, PD and device are the parent's). */
		unsigned char seen = *byte;

		*byte = 0x55;
		show("child", "read 0x%02x from the buffer, wrote 0x55 there, and exits", seen);
		fflush(stdout);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0) {
		report_verb_error("waitpid", errno);
		return -1;
	}
	if (*byte != 0xaa) {
		report_error("fork: our byte is 0x%02x after the child ran, not the 0xaa we left",
			     *byte);
		return -1;
	}
	show_child_end(status, dontfork);
	return 0;
}

int release_buffer(struct rdma_buf *buf)
{
	int failures = release_mr(buf->mr, buf->on_demand ? "the NIC's translations of its pages "
				  "dropped (registered on demand: nothing was pinned)" : NULL);

	buf->mr = NULL;
	/* Still registered, the pages may still be written by the NIC: leak them rather than reuse them. */
	if (!failures)
		free(buf->addr);
	buf->addr = NULL;
	return failures;
}
