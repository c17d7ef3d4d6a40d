/* reg_mr.h: stage 2 of the verbs workflow: register memory (pin its pages, get lkey and rkey). */
#ifndef RDMA_STEPS_REG_MR_H
#define RDMA_STEPS_REG_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <infiniband/verbs.h>

#include "cli.h"
#include "fault.h"
#include "open_pd.h"

#define REG_MR_DEFAULT_SIZE 4096
#define REG_MR_DEFAULT_ACCESS \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* Stage 2's long-only option keys (cli.h's blocks). */
enum reg_mr_key {
	CLI_KEY_ODP = CLI_STAGE_KEYS(2),	/* --odp */
	CLI_KEY_FORK,				/* --fork */
};

/* Stage 2's command-line choices. */
struct reg_mr_opts {
	size_t size;		/* -s: bytes to register */
	int access;		/* IBV_ACCESS_* flags: -a's, or what the step grants */
	bool access_given;	/* -a was on the command line */
	const char *access_why;	/* why this access, shown beside it */
	bool odp;		/* --odp: register on demand (IBV_ACCESS_ON_DEMAND), pinning nothing */
	bool fork;		/* --fork: fork after registering; the child touches the buffer */
};

/*
 * Stage 2's part of the command line, -s and -a, filling a struct
 * reg_mr_opts; REG_MR_PAGING_STAGE adds --odp and --fork, which step 02
 * takes: they show what registration does to the process's pages.
 * REG_MR_ODP_STAGE is --odp alone, for a later step that shows the first
 * access to a region registered on demand, which needs a work request.
 */
extern const struct cli_option reg_mr_cli_options[];
extern const struct cli_option reg_mr_paging_cli_options[];
extern const struct cli_option reg_mr_odp_cli_options[];
int reg_mr_parse_option(int key, const char *arg, void *opts);
#define REG_MR_STAGE(opts) { reg_mr_cli_options, reg_mr_parse_option, (opts) }
#define REG_MR_PAGING_STAGE(opts) { reg_mr_paging_cli_options, reg_mr_parse_option, (opts) }
#define REG_MR_ODP_STAGE(opts) { reg_mr_odp_cli_options, reg_mr_parse_option, (opts) }

void reg_mr_opts_default(struct reg_mr_opts *opts);

/*
 * Least privilege: unless -a was given, the MR gets ACCESS, what the step's
 * role needs, shown with the reason WHY.  -a stays, to show what wrong
 * access does.
 */
void reg_mr_grant(struct reg_mr_opts *opts, int access, const char *why);

/* Whether ACCESS lets a peer reach the memory, so that its rkey means something. */
bool access_is_remote(int access);


/* The access flags as "local_write,remote_read", into BUF. */
void access_flags_format(int access, char *buf, size_t len);

struct rdma_buf {
	void *addr;		/* page-aligned memory */
	size_t len;
	int access;		/* what the MR allows: IBV_ACCESS_* */
	struct ibv_mr *mr;	/* its registration: lkey for us, rkey for the peer */
	bool on_demand;		/* registered with IBV_ACCESS_ON_DEMAND: no page pinned */
};

/*
 * --odp: shows the device's odp_caps (stage 1 read them) and fails, saying
 * which kernel has it, unless they have IBV_ODP_SUPPORT.  register_buffer
 * calls it before registering on demand; a side that registers pinned but
 * runs with a peer that does not calls it too.  0 or -1.
 */
int check_odp_support(const struct rdma_dev *dev);

/*
 * Stage 2: allocates a page-aligned buffer and registers it with DEV's PD,
 * showing VmPin before and after and the RLIMIT_MEMLOCK in force.
 * Returns 0, or -1 with nothing left allocated.
 */
int register_buffer(struct rdma_dev *dev, const struct reg_mr_opts *opts, struct rdma_buf *buf);

/*
 * --fork: forks a child that reads and writes the buffer's first byte and
 * exits, and says how it ended and what it did to our copy: with ODP, or on a
 * kernel that copies pinned pages at fork, the child has a copy of its own;
 * under RDMAV_FORK_SAFE a pinned MR's pages are not in the child at all.
 * Returns 0, or -1 if the child could not be made or changed our byte.
 */
int fork_and_touch(const struct rdma_buf *buf);

/* Deregisters what register_buffer made, then frees the buffer unless that failed; returns how many releases failed. */
int release_buffer(struct rdma_buf *buf);

/* Stage 2's fault points: registering the buffer, and deregistering it (release_mr). */
extern const struct fault_point reg_mr_faults[];

#endif
