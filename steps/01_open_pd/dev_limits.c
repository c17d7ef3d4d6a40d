/* dev_limits.c: stage 1: what a run asks of the device, checked against the limits stage 1 read, and the process's memlock limit, before anything else is created. */
#include "dev_limits.h"
#include "procstat.h"
#include "report.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const limit_names[] = {
	[LIMIT_QP_WR] = "max_qp_wr",
	[LIMIT_CQE] = "max_cqe",
	[LIMIT_SGE] = "max_sge",
	[LIMIT_MR_SIZE] = "max_mr_size",
	[LIMIT_MW] = "max_mw",
	[LIMIT_QP_RD_ATOM] = "max_qp_rd_atom",
	[LIMIT_QP_INIT_RD_ATOM] = "max_qp_init_rd_atom",
	[LIMIT_MSG_SZ] = "max_msg_sz",
};

static uint64_t nonnegative(int value)
{
	return value < 0 ? 0 : (uint64_t)value;
}

uint64_t limit_value(const struct rdma_dev *dev, enum dev_limit limit)
{
	const struct ibv_device_attr *a = &dev->attr;
	/* Beside limit_names: the device's value of each, as stage 1 read it. */
	const uint64_t values[] = {
		[LIMIT_QP_WR] = nonnegative(a->max_qp_wr),
		[LIMIT_CQE] = nonnegative(a->max_cqe),
		[LIMIT_SGE] = nonnegative(a->max_sge),
		[LIMIT_MR_SIZE] = a->max_mr_size,
		[LIMIT_MW] = nonnegative(a->max_mw),
		[LIMIT_QP_RD_ATOM] = nonnegative(a->max_qp_rd_atom),
		[LIMIT_QP_INIT_RD_ATOM] = nonnegative(a->max_qp_init_rd_atom),
		[LIMIT_MSG_SZ] = dev->port_attr.max_msg_sz,
	};

	return (size_t)limit < sizeof(values) / sizeof(values[0]) ? values[limit] : 0;
}

static const char *dev_name(const struct rdma_dev *dev)
{
	return ibv_get_device_name(dev->ctx->device);
}

int limit_check(const struct rdma_dev *dev, enum dev_limit limit, uint64_t asked,
		const char *what, const char *request, const char *fix)
{
	uint64_t allowed = limit_value(dev, limit);
	char where[48] = "";

	if (asked <= allowed)
		return 0;
	/* The message size is the port's, not the device's. */
	if (limit == LIMIT_MSG_SZ)
		snprintf(where, sizeof(where), " of port %u", dev->port);
	report_error("%s asks for %llu %s, but %s allows %llu (%s%s); %s", request,
		     (unsigned long long)asked, what, dev_name(dev), (unsigned long long)allowed,
		     limit_names[limit], where, fix);
	return -1;
}

int limit_check_option(const struct rdma_dev *dev, enum dev_limit limit, const char *option,
		       long long value, uint64_t per, uint64_t base, const char *what)
{
	uint64_t allowed = limit_value(dev, limit), asked = per * (uint64_t)value + base;
	char request[64], fix[96];

	if (asked <= allowed)
		return 0;
	snprintf(request, sizeof(request), "%s %lld", option, value);
	if (allowed >= base + per)
		snprintf(fix, sizeof(fix), "use %s %llu or less", option,
			 (unsigned long long)((allowed - base) / per));
	else
		snprintf(fix, sizeof(fix), "no %s fits: this device cannot run it", option);
	return limit_check(dev, limit, asked, what, request, fix);
}

int limit_check_atomics(const struct rdma_dev *dev, const char *request, const char *fix)
{
	if (dev->attr.atomic_cap != IBV_ATOMIC_NONE)
		return 0;
	report_error("%s asks for remote atomics, but %s does none (atomic_cap IBV_ATOMIC_NONE, "
		     "see ibv_devinfo -v); %s", request, dev_name(dev), fix);
	return -1;
}

int limit_check_reads(const struct rdma_dev *dev, bool initiator, const char *request,
		      const char *fix)
{
	if (initiator)
		return limit_check(dev, LIMIT_QP_INIT_RD_ATOM, 1, "RDMA READ or atomic in flight a QP",
				   request, fix);
	return limit_check(dev, LIMIT_QP_RD_ATOM, 1, "RDMA READ or atomic served a QP", request, fix);
}

int limit_check_windows(const struct rdma_dev *dev, uint64_t windows, const char *option,
			const char *request, const char *fix)
{
	const unsigned int type_2 = IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B;

	if (!(dev->attr.device_cap_flags & type_2)) {
		report_error("%s asks for type 2 memory windows, but %s binds none (its "
			     "device_cap_flags has neither MEM_WINDOW_TYPE_2A nor MEM_WINDOW_TYPE_2B, "
			     "see ibv_devinfo -v); leave %s out", option, dev_name(dev), option);
		return -1;
	}
	return limit_check(dev, LIMIT_MW, windows, "memory windows at once", request, fix);
}

/*
 * Whether the kernel lets this process pin past RLIMIT_MEMLOCK: it asks
 * capable(CAP_IPC_LOCK), the capability in the effective set (root has it,
 * unless it was dropped).
 */
static bool has_ipc_lock(void)
{
	struct __user_cap_header_struct head = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };

	if (syscall(SYS_capget, &head, data))
		return false;
	return data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective & CAP_TO_MASK(CAP_IPC_LOCK);
}

int limit_check_pin(const struct rdma_dev *dev, uint64_t bytes, uint64_t largest,
		    const char *request, const char *fix)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), pages = (bytes + page - 1) / page;
	uint64_t pinned_pages, limit_pages;
	long pinned_kb = proc_status_kb("VmPin");
	struct rlimit rl;

	if (limit_check(dev, LIMIT_MR_SIZE, largest, "bytes in one MR", request, fix))
		return -1;
	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		report_verb_error("getrlimit (RLIMIT_MEMLOCK)", errno);
		return -1;
	}
	if (rl.rlim_cur == RLIM_INFINITY || has_ipc_lock())
		return 0;
	/* As ib_umem_get counts: whole pages, the process's pinned ones (VmPin) and these. */
	pinned_pages = pinned_kb > 0 ? (uint64_t)pinned_kb * 1024 / page : 0;
	limit_pages = (uint64_t)rl.rlim_cur / page;
	if (pinned_pages + pages <= limit_pages)
		return 0;
	report_error("%s asks to pin %llu bytes, but RLIMIT_MEMLOCK allows %llu (%llu pinned "
		     "already), and this process has no CAP_IPC_LOCK to pass it: raise it with "
		     "'ulimit -l' (KiB, or unlimited) or 'memlock' in /etc/security/limits.conf, "
		     "run with CAP_IPC_LOCK (root has it), or %s", request, (unsigned long long)(pages * page),
		     (unsigned long long)rl.rlim_cur, (unsigned long long)(pinned_pages * page), fix);
	return -1;
}
