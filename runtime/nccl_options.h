/* nccl_options.h: the job runtime: nccl-tests' options, one table for every program that prints its table: the sizes, the runs, the check. */
#ifndef RDMA_STEPS_NCCL_OPTIONS_H
#define RDMA_STEPS_NCCL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"

/* nccl-tests' one long-only option: the runtime's second block of keys (cli.h). */
enum nccl_key {
	CLI_KEY_MAXBYTES = CLI_STAGE_KEYS(101),
};

struct nccl_opts {
	size_t minbytes, maxbytes;	/* -b, --maxbytes */
	int stepfactor;		/* -f */
	int iters, warmup;	/* -n, -w */
	int check;		/* -c */
	bool sized;		/* -b or --maxbytes was given */
};

/* nccl-tests' sizes scaled to rxe: 1 MiB once, 20 timed runs after 5 warm-ups, checked. */
void nccl_opts_default(struct nccl_opts *opts);

/* -b, --maxbytes, -f, -n, -w and -c, as nccl-tests names them (but -e: -e is event mode's letter in these steps). */
extern const struct cli_option nccl_cli_options[];
int nccl_parse_option(int key, const char *arg, void *opts);
#define NCCL_STAGE(opts) { nccl_cli_options, nccl_parse_option, (opts) }

/* Checks the sizes together; 0, or -1 after saying what does not fit. */
int nccl_opts_check(const struct nccl_opts *opts);

/* The size after BYTES in the sweep: times -f; from 0, STEP (the smallest size that moves anything). */
size_t nccl_next_size(const struct nccl_opts *opts, size_t bytes, size_t step);

/* The options as text, for the rendezvous to compare: "-b ... -c N". */
void nccl_opts_format(const struct nccl_opts *opts, char *buf, size_t len);

#endif
