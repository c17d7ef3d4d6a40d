/* verbs_probe.c: try, on one RDMA device, each verb of book/where-next.md's table that a single process can
 * try without a peer, and print one line per verb: "VERB: ok" or "VERB: failed: ERRNO_NAME (N)", or the value
 * it returned.  tests/05_rdma_core_examples.bats builds it and checks each line against the table.
 *
 * Usage: verbs_probe DEVICE
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

static const char *errno_name(int e)
{
	switch (e) {
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOSYS: return "ENOSYS";
	case EINVAL: return "EINVAL";
	case ENOMEM: return "ENOMEM";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOENT: return "ENOENT";
	case EFAULT: return "EFAULT";
	default: return "other";
	}
}

/* Prints VERB's outcome: ok when OK, else the error E (an errno value). */
static void outcome(const char *verb, int ok, int e)
{
	if (ok)
		printf("%s: ok\n", verb);
	else
		printf("%s: failed: %s (%d)\n", verb, errno_name(e), e);
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	return ibv_create_qp(pd, &a);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	if (argc != 2) {
		fprintf(stderr, "usage: verbs_probe DEVICE\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "verbs_probe: cannot open %s\n", argv[1]);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	static char buf[4096] __attribute__((aligned(4096)));
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!pd || !cq || !mr) {
		fprintf(stderr, "verbs_probe: the PD, CQ or MR failed on %s\n", argv[1]);
		return 1;
	}

	/* What the device reports. */
	struct ibv_device_attr_ex attrx;
	memset(&attrx, 0, sizeof attrx);
	errno = ibv_query_device_ex(ctx, NULL, &attrx);
	outcome("ibv_query_device_ex", !errno, errno);
	printf("odp_caps.general_caps: %#llx\n", (unsigned long long)attrx.odp_caps.general_caps);
	printf("completion_timestamp_mask: %#llx\n", (unsigned long long)attrx.completion_timestamp_mask);
	printf("max_dm_size: %llu\n", (unsigned long long)attrx.max_dm_size);
	printf("atomic_cap: %d\n", attrx.orig_attr.atomic_cap);

	/* The shared receive queue, and a QP that takes its receives from it. */
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	outcome("ibv_create_srq", srq != NULL, errno);
	if (srq) {
		struct ibv_srq_attr lim = { .srq_limit = 4 };
		int rc = ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT);
		outcome("ibv_modify_srq (srq_limit)", !rc, rc);
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		};
		struct ibv_qp *q = ibv_create_qp(pd, &qa);
		outcome("ibv_create_qp (RC on the SRQ)", q != NULL, errno);
		if (q)
			ibv_destroy_qp(q);
	}

	/* QP types. */
	struct ibv_qp *rc = make_qp(pd, cq, IBV_QPT_RC);
	outcome("ibv_create_qp (RC)", rc != NULL, errno);
	struct ibv_qp *ud = make_qp(pd, cq, IBV_QPT_UD);
	outcome("ibv_create_qp (UD)", ud != NULL, errno);
	struct ibv_qp *uc = make_qp(pd, cq, IBV_QPT_UC);
	outcome("ibv_create_qp (UC)", uc != NULL, errno);
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = -1, .oflags = 0 };
	struct ibv_xrcd *xrcd = ibv_open_xrcd(ctx, &xa);
	outcome("ibv_open_xrcd", xrcd != NULL, errno);

	/* Memory. */
	errno = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
			      &(struct ibv_sge){ .addr = (uintptr_t)buf, .length = sizeof buf, .lkey = mr->lkey }, 1);
	outcome("ibv_advise_mr", !errno, errno);
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	outcome("ibv_alloc_mw (type 1)", mw1 != NULL, errno);
	struct ibv_alloc_dm_attr da = { .length = 64 };
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &da);
	outcome("ibv_alloc_dm", dm != NULL, errno);
	struct ibv_mr *null_mr = ibv_alloc_null_mr(pd);
	outcome("ibv_alloc_null_mr", null_mr != NULL, errno);
	errno = 0;
	int rr = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, pd, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	outcome("ibv_rereg_mr", rr == 0, errno);

	/* Completions. */
	struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN };
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &ca);
	outcome("ibv_create_cq_ex (byte_len)", cqx != NULL, errno);
	struct ibv_cq_init_attr_ex ct = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	struct ibv_cq_ex *cqt = ibv_create_cq_ex(ctx, &ct);
	outcome("ibv_create_cq_ex (completion timestamp)", cqt != NULL, errno);
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	errno = ibv_query_rt_values_ex(ctx, &v);
	outcome("ibv_query_rt_values_ex", !errno, errno);
	struct ibv_modify_cq_attr mca = { .attr_mask = IBV_CQ_ATTR_MODERATE, .moderate = { .cq_count = 8, .cq_period = 16 } };
	errno = ibv_modify_cq(cq, &mca);
	outcome("ibv_modify_cq", !errno, errno);
	errno = ibv_resize_cq(cq, 64);
	outcome("ibv_resize_cq", !errno, errno);

	/* Threads, sharing, connection options. */
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_td *td = ibv_alloc_td(ctx, &ta);
	outcome("ibv_alloc_td", td != NULL, errno);
	struct ibv_context *imported = ibv_import_device(dup(ctx->cmd_fd));
	outcome("ibv_import_device", imported != NULL, errno);
	if (rc) {
		struct ibv_ece ece;
		errno = ibv_query_ece(rc, &ece);
		outcome("ibv_query_ece", !errno, errno);
		struct ibv_qp_rate_limit_attr rl = { .rate_limit = 1000 };
		errno = ibv_modify_qp_rate_limit(rc, &rl);
		outcome("ibv_modify_qp_rate_limit", !errno, errno);
		printf("ibv_query_qp_data_in_order (RDMA_WRITE): %d\n",
		       ibv_query_qp_data_in_order(rc, IBV_WR_RDMA_WRITE, 0));
	}
	enum ibv_fork_status fs = ibv_is_fork_initialized();
	printf("ibv_is_fork_initialized: %s\n", fs == IBV_FORK_UNNEEDED ? "IBV_FORK_UNNEEDED" :
	       fs == IBV_FORK_ENABLED ? "IBV_FORK_ENABLED" : "IBV_FORK_DISABLED");
	uint16_t pkey = 0;
	int pr = ibv_query_pkey(ctx, 1, 0, &pkey);
	printf("ibv_query_pkey (index 0): %s %#x\n", pr ? "failed" : "ok", pkey);
	pr = ibv_query_pkey(ctx, 1, 1, &pkey);
	outcome("ibv_query_pkey (index 1)", !pr, errno);
	/* The process exits here: the kernel releases what it created. */
	return 0;
}
