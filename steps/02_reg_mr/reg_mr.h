/* reg_mr.h: stage 2 of the verbs workflow: register memory (pin its pages, get lkey and rkey). */
#ifndef RDMA_STEPS_REG_MR_H
#define RDMA_STEPS_REG_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <infiniband/verbs.h>

#include "cli.h"
#include "open_pd.h"

#define REG_MR_DEFAULT_SIZE 4096
#define REG_MR_DEFAULT_ACCESS \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* Stage 2's command-line choices. */
struct reg_mr_opts {
	size_t size;		/* -s: bytes to register */
	int access;		/* IBV_ACCESS_* flags: -a's, or what the step grants */
	bool access_given;	/* -a was on the command line */
	const char *access_why;	/* why this access, shown beside it */
};

/* The options stage 2 adds, for a step's option table; DEFAULT_SIZE is the text --help shows. */
#define REG_MR_CLI_OPTIONS_SIZED(default_size) \
	{ "size", 's', "BYTES", "buffer size, e.g. 4096, 64K, 1M (default: " default_size ")" }, \
	{ "access", 'a', "LIST", "MR access: local_write,remote_write,remote_read,remote_atomic" \
				 " (default: the first three)" }
#define REG_MR_CLI_OPTIONS REG_MR_CLI_OPTIONS_SIZED("4096")

void reg_mr_opts_default(struct reg_mr_opts *opts);

/*
 * Least privilege: unless -a was given, the MR gets ACCESS, what the step's
 * role needs, shown with the reason WHY.  -a stays, to show what wrong
 * access does.
 */
void reg_mr_grant(struct reg_mr_opts *opts, int access, const char *why);

/* Whether ACCESS lets a peer reach the memory, so that its rkey means something. */
bool access_is_remote(int access);

/* Parses -s or -a; returns 0, -1 on bad input, or 1 when KEY is not stage 2's. */
int reg_mr_parse_option(int key, const char *arg, struct reg_mr_opts *opts);

/* The access flags as "local_write,remote_read", into BUF. */
void access_flags_format(int access, char *buf, size_t len);

struct rdma_buf {
	void *addr;		/* page-aligned memory */
	size_t len;
	int access;		/* what the MR allows: IBV_ACCESS_* */
	struct ibv_mr *mr;	/* its registration: lkey for us, rkey for the peer */
};

/*
 * Stage 2: allocates a page-aligned buffer and registers it with DEV's PD,
 * showing VmPin before and after and the RLIMIT_MEMLOCK in force.
 * Returns 0, or -1 with nothing left allocated.
 */
int register_buffer(struct rdma_dev *dev, const struct reg_mr_opts *opts, struct rdma_buf *buf);

/* Deregisters what register_buffer made, then frees the buffer unless that failed; returns how many releases failed. */
int release_buffer(struct rdma_buf *buf);

#endif
