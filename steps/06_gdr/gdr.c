/* gdr.c: stage 6: GPUDirect RDMA: register GPU memory with the NIC, and the three data paths of Figure 1. */
#include "gdr.h"
#include "clock.h"
#include "completion.h"
#include "exchange.h"
#include "post_wr.h"
#include "report.h"
#include "sock.h"
#include "teardown.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *const path_names[N_PATHS] = { "tcp", "rdma", "gdr" };

const struct cli_option gdr_cli_options[] = {
	{ "path", 'P', "PATH", "tcp, rdma, gdr or all (default: all, in that order)", CLI_STAGE_PARSES },
	{ 0 },
};

int gdr_parse_option(int key, const char *arg, void *ctx)
{
	unsigned *paths = ctx;
	int p = cli_pick(arg, path_names, N_PATHS);

	(void)key;
	if (!strcmp(arg, "all")) {
		*paths = ALL_PATHS;
		return 0;
	}
	if (p >= 0) {
		*paths = 1u << p;
		return 0;
	}
	report_error("--path: unknown path '%s'; use tcp, rdma, gdr or all", arg);
	return -1;
}

const char *path_name(enum data_path path)
{
	return path_names[path];
}

const char *paths_name(unsigned paths)
{
	for (int p = 0; p < N_PATHS; p++)
		if (paths == 1u << p)
			return path_names[p];
	return "all";
}

/* The gdr path is a SEND into a posted receive: the NIC writes GPU memory locally, and no peer reaches it. */
static const int gpu_access = IBV_ACCESS_LOCAL_WRITE;

/* DMA-BUF: the GPU driver exports the range as a dma-buf; the NIC driver imports it. */
static struct ibv_mr *register_dmabuf(struct rdma_dev *dev, struct gpu *g, void *dev_ptr,
				      size_t len, struct gpu_mr *gmr, char *why, size_t why_len)
{
	uintptr_t base = (uintptr_t)dev_ptr & ~(GPU_PAGE_SIZE - 1);
	size_t span = ((uintptr_t)dev_ptr + len - base + GPU_PAGE_SIZE - 1) & ~(GPU_PAGE_SIZE - 1);
	struct ibv_mr *mr;

	gmr->dmabuf_fd = gpu_dmabuf_fd(g, (void *)base, span, why, why_len);
	if (gmr->dmabuf_fd < 0)
		return NULL;
	mr = ibv_reg_dmabuf_mr(dev->pd, (uintptr_t)dev_ptr - base, len, (uintptr_t)dev_ptr,
			       gmr->dmabuf_fd, gpu_access);
	if (!mr) {
		int err = errno;

		snprintf(why, why_len, "ibv_reg_dmabuf_mr: %s%s", strerror(err),
			 err == EOPNOTSUPP ? " (this provider has no DMA-BUF registration)" : "");
		close(gmr->dmabuf_fd);
		gmr->dmabuf_fd = -1;
	}
	return mr;
}

void register_gpu_memory(struct rdma_dev *dev, struct gpu *g, void *dev_ptr, size_t len,
			 struct gpu_mr *gmr)
{
	char dmabuf_why[160] = "";
	int err;

	*gmr = (struct gpu_mr){ .buf = { .addr = dev_ptr, .len = len, .access = gpu_access },
				.dmabuf_fd = -1 };
	if (g->emulated) {
		gmr->buf.mr = ibv_reg_mr(dev->pd, dev_ptr, len, gpu_access);
		if (gmr->buf.mr) {
			gmr->how = "emulated";
			show("GPU memory MR", "registered the emulated GPU buffer directly (lkey 0x%x): "
			     "the NIC reads and writes it, as it would real GPU memory under GPUDirect RDMA",
			     gmr->buf.mr->lkey);
			return;
		}
		snprintf(gmr->why_not, sizeof(gmr->why_not), "ibv_reg_mr: %s", strerror(errno));
		show("GPU memory MR", "refused: %s; the gdr path will stage through host memory",
		     gmr->why_not);
		return;
	}
	gmr->buf.mr = register_dmabuf(dev, g, dev_ptr, len, gmr, dmabuf_why, sizeof(dmabuf_why));
	if (gmr->buf.mr) {
		gmr->how = "DMA-BUF";
		show("ibv_reg_dmabuf_mr", "GPU memory registered through DMA-BUF (lkey 0x%x): GPUDirect RDMA",
		     gmr->buf.mr->lkey);
		return;
	}
	show("ibv_reg_dmabuf_mr", "refused: %s", dmabuf_why);
	/* The older way: the peer-memory client (nvidia-peermem) resolves the device pointer. */
	gmr->buf.mr = ibv_reg_mr(dev->pd, dev_ptr, len, gpu_access);
	if (gmr->buf.mr) {
		gmr->how = "peer memory (nvidia-peermem)";
		show("ibv_reg_mr", "GPU memory registered through nvidia-peermem (lkey 0x%x): GPUDirect RDMA",
		     gmr->buf.mr->lkey);
		return;
	}
	err = errno;
	snprintf(gmr->why_not, sizeof(gmr->why_not), "DMA-BUF: %s; ibv_reg_mr on the GPU pointer: %s%s",
		 dmabuf_why, strerror(err),
		 err == EFAULT ? " (no peer-memory module: is nvidia-peermem loaded?)" : "");
	show("ibv_reg_mr", "refused on the GPU pointer: %s", strerror(err));
}

int release_gpu_memory(struct gpu_mr *gmr)
{
	int failures = release_mr(gmr->buf.mr, NULL);

	gmr->buf.mr = NULL;
	if (gmr->dmabuf_fd >= 0)
		close(gmr->dmabuf_fd);
	gmr->dmabuf_fd = -1;
	return failures;
}

/* Each path gets its own pattern, so stale bytes from an earlier path cannot pass the check. */
static uint8_t path_seed(enum data_path path)
{
	return (uint8_t)(0x31 + 0x22 * path);
}

/* TCP: the sender stages into a host buffer and send() copies it into the kernel; the receiver in reverse. */
static int tcp_path(struct gdr_side *s, struct path_result *res)
{
	size_t len = s->staging->len;

	if (s->sender) {
		if (gpu_to_host(s->gpu, s->staging->addr, s->gpu_buf, len, &res->copies) ||
		    sock_send_all(s->conn->sock, s->staging->addr, len, s->timeout_s))
			return -1;
		copy_count_add(&res->copies, "host->kernel (send)", len);
		return 0;
	}
	if (sock_recv_all(s->conn->sock, s->staging->addr, len, s->timeout_s))
		return -1;
	copy_count_add(&res->copies, "kernel->host (recv)", len);
	return host_to_gpu(s->gpu, s->gpu_buf, s->staging->addr, len, &res->copies);
}

/* RDMA from BUF (registered memory): the NIC moves the bytes; the kernel is not involved. */
static int rdma_transfer(struct gdr_side *s, const struct rdma_buf *buf, bool gpu_memory)
{
	struct post_opts send = { .op = OP_SEND, .no_inline = gpu_memory };
	struct ibv_wc wc;

	if (!s->sender) {
		if (take_good_completion(s->conn, &wc, POLL_TIMEOUT_MS) || expect_wr_id(&wc, WR_ID_RECV) ||
		    check_received_length(&wc, buf->len))
			return -1;
		return 0;
	}
	if (post_operation(s->conn, buf, buf->len, &send) ||
	    take_good_completion(s->conn, &wc, POLL_TIMEOUT_MS))
		return -1;
	return expect_wr_id(&wc, WR_ID_SEND);
}

/* RDMA through registered host memory: one copy each side between GPU and host. */
static int staged_path(struct gdr_side *s, struct path_result *res)
{
	size_t len = s->staging->len;

	if (s->sender)
		return gpu_to_host(s->gpu, s->staging->addr, s->gpu_buf, len, &res->copies) ||
		       rdma_transfer(s, s->staging, false);
	return rdma_transfer(s, s->staging, false) ||
	       host_to_gpu(s->gpu, s->gpu_buf, s->staging->addr, len, &res->copies);
}

/* The receiver posts its receive before the barrier, so the sender's SEND finds it. */
static int post_receiver_buffer(struct gdr_side *s, enum data_path path, bool direct)
{
	if (s->sender || path == PATH_TCP)
		return 0;
	return post_receive(s->conn, direct ? &s->gpu_mr->buf : s->staging, s->staging->len);
}

static double timeval_us(const struct timeval *t)
{
	return t->tv_sec * 1e6 + t->tv_usec;
}

/* Adds the CPU time spent since BEFORE, user and system, to RES. */
static void add_cpu_since(const struct rusage *before, struct path_result *res)
{
	struct rusage now;

	getrusage(RUSAGE_SELF, &now);
	res->user_us += timeval_us(&now.ru_utime) - timeval_us(&before->ru_utime);
	res->system_us += timeval_us(&now.ru_stime) - timeval_us(&before->ru_stime);
}

int run_path(struct gdr_side *s, enum data_path path, struct path_result *res)
{
	/* Both sides must agree: GPUDirect only if both registered their GPU memory. */
	bool direct = path == PATH_GDR && s->gpu_mr->buf.mr;
	char peer_direct = 0, mine = direct ? 'G' : 'S';
	struct rusage cpu;
	double start;
	int rc;

	*res = (struct path_result){ .moved = s->staging->len };
	if (s->sender && gpu_fill_pattern(s->gpu, s->gpu_buf, s->staging->len, path_seed(path)))
		return -1;
	if (path == PATH_GDR && (sock_send_all(s->conn->sock, &mine, 1, s->timeout_s) ||
				 sock_recv_all(s->conn->sock, &peer_direct, 1, s->timeout_s)))
		return -1;
	direct = direct && peer_direct == 'G';
	res->fell_back = path == PATH_GDR && !direct;
	s->gdr_used = s->gdr_used || direct;
	if (post_receiver_buffer(s, path, direct) || exchange_sync(s->conn->sock, 'A' + path, s->timeout_s))
		return -1;
	getrusage(RUSAGE_SELF, &cpu);
	start = now_us();
	if (path == PATH_TCP)
		rc = tcp_path(s, res);
	else if (direct)
		rc = rdma_transfer(s, &s->gpu_mr->buf, true);
	else
		rc = staged_path(s, res);
	res->us = now_us() - start;
	add_cpu_since(&cpu, res);
	if (rc)
		return -1;
	if (!s->sender && !gpu_check_pattern(s->gpu, s->gpu_buf, s->staging->len, path_seed(path)))
		return -1;
	return exchange_sync(s->conn->sock, 'a' + path, s->timeout_s);
}

void show_path_result(const struct gdr_side *s, enum data_path path, const struct path_result *res)
{
	char key[32], list[160] = "";
	size_t used = 0;

	for (int i = 0; i < res->copies.n && i < MAX_COPIES; i++)
		used += snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : ": ",
				 res->copies.what[i]);
	snprintf(key, sizeof(key), "path %s", path_name(path));
	show(key, "%s, %d extra cop%s%s; %zu bytes in %.0f us%s%s [%s GPU memory]",
	     s->sender ? "sender" : "receiver", res->copies.n, res->copies.n == 1 ? "y" : "ies",
	     list, res->moved, res->us, s->sender ? "" : ", data intact",
	     res->fell_back ? "; fell back to staging through host memory" : "",
	     s->gpu->emulated ? "emulated" : "real");
	snprintf(key, sizeof(key), "cpu %s", path_name(path));
	show(key, "%s, user %.0f us, system %.0f us in those %.0f us (getrusage: this process)",
	     s->sender ? "sender" : "receiver", res->user_us, res->system_us, res->us);
}
