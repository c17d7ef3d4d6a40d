/* reg_mr.c: stage 2 of the verbs workflow: register memory (pin its pages, get lkey and rkey). */
#include "reg_mr.h"
#include "fault.h"
#include "procstat.h"
#include "report.h"
#include "teardown.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
	{ "size", 's', "BYTES", "buffer size, e.g. 4096, 64K, 1M (default: 4096, unless the purpose above gives another)" },
	{ "access", 'a', "LIST", "MR access: local_write,remote_write,remote_read,remote_atomic,mw_bind,"
				 "relaxed_ordering (default: what the step's role needs; step 02: the first three)" },
	{ 0 },
};

int reg_mr_parse_option(int key, const char *arg, void *ctx)
{
	struct reg_mr_opts *opts = ctx;

	if (key == 's')
		return cli_parse_size("--size", arg, 1, MAX_MR_SIZE, &opts->size);
	/* -a */
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
}

int register_buffer(struct rdma_dev *dev, const struct reg_mr_opts *opts, struct rdma_buf *buf)
{
	long page = sysconf(_SC_PAGESIZE), pin_before, pin_after;
	char access[96];
	int rc;

	*buf = (struct rdma_buf){ .len = opts->size, .access = opts->access };
	rc = posix_memalign(&buf->addr, (size_t)page, buf->len);
	if (rc) {
		report_verb_error("posix_memalign", rc);
		buf->addr = NULL;
		return -1;
	}
	memset(buf->addr, 0, buf->len);
	show("buffer", "%zu bytes at %p, aligned to the %ld-byte page", buf->len, buf->addr, page);
	show_memlock_limit();

	access_flags_format(opts->access, access, sizeof(access));
	show("access", "%s: %s", access, opts->access_why);

	/* Registration pins the pages and gives the NIC their translation: they may no longer move. */
	pin_before = proc_status_kb("VmPin");
	buf->mr = fault_at("reg_mr") ? NULL : ibv_reg_mr(dev->pd, buf->addr, buf->len, opts->access);
	if (!buf->mr) {
		report_reg_mr_failure(errno, opts);
		goto out_free_buffer;
	}
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
	return 0;

out_free_buffer:
	free(buf->addr);
	buf->addr = NULL;
	return -1;
}

int release_buffer(struct rdma_buf *buf)
{
	int failures = release_mr(buf->mr);

	buf->mr = NULL;
	/* Still registered, the pages may still be written by the NIC: leak them rather than reuse them. */
	if (!failures)
		free(buf->addr);
	buf->addr = NULL;
	return failures;
}
