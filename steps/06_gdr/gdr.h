/* gdr.h: stage 6: GPUDirect RDMA: register GPU memory with the NIC, and the three data paths of Figure 1. */
#ifndef RDMA_STEPS_GDR_H
#define RDMA_STEPS_GDR_H

#include <stdbool.h>
#include <stddef.h>
#include <infiniband/verbs.h>

#include "cq_qp_rts.h"
#include "gpu_mem.h"
#include "open_pd.h"
#include "reg_mr.h"

enum data_path { PATH_TCP, PATH_RDMA, PATH_GDR, N_PATHS };

/* Stage 6's part of the command line, --path, into a bit mask (unsigned) of 1 << enum data_path. */
extern const struct cli_option gdr_cli_options[];
int gdr_parse_option(int key, const char *arg, void *paths);
#define GDR_STAGE(paths) { gdr_cli_options, gdr_parse_option, (paths) }

#define ALL_PATHS ((1u << N_PATHS) - 1)

const char *path_name(enum data_path path);

/* What --path named, for the options text the peer must match: "all", "tcp", "rdma" or "gdr". */
const char *paths_name(unsigned paths);

/* GPU memory registered for the NIC, and how. */
struct gpu_mr {
	struct rdma_buf buf;	/* addr is the GPU pointer; mr is NULL when registration failed */
	const char *how;	/* "DMA-BUF", "peer memory (nvidia-peermem)", "emulated" */
	char why_not[256];	/* why the NIC cannot reach it, when mr is NULL */
	int dmabuf_fd;
};

/*
 * Registers GPU memory with the NIC: first through DMA-BUF (ibv_reg_dmabuf_mr),
 * then with ibv_reg_mr on the device pointer (needs nvidia-peermem).  In
 * emulation the stand-in buffer is registered directly.  Failure is not an
 * error: the gdr path then falls back to staging through host memory.
 */
void register_gpu_memory(struct rdma_dev *dev, struct gpu *g, void *dev_ptr, size_t len,
			 struct gpu_mr *gmr);
int release_gpu_memory(struct gpu_mr *gmr);

/* Everything one side needs to run the paths. */
struct gdr_side {
	struct rdma_conn *conn;
	struct gpu *gpu;
	void *gpu_buf;			/* the "gradient" in GPU memory */
	struct rdma_buf *staging;	/* registered host memory (stage 2) */
	struct gpu_mr *gpu_mr;
	bool sender;			/* the server sends, the client receives */
	int timeout_s;
	bool gdr_used;			/* the gdr path ran with both sides' GPU memory registered */
};

struct path_result {
	struct copy_count copies;
	size_t moved;
	double us;
	double user_us, system_us;	/* this process's CPU time during the transfer (getrusage) */
	bool fell_back;
};

/* Moves the buffer from the sender's GPU memory to the receiver's along PATH; the receiver checks it. */
int run_path(struct gdr_side *side, enum data_path path, struct path_result *res);

/* Prints one side's line for PATH. */
void show_path_result(const struct gdr_side *side, enum data_path path,
		      const struct path_result *res);

#endif
