/* lossy_options.c: stage 11's part of the command line: the QP type, the paths, the resend timer and the test's dropped chunks. */
#include "lossy_options.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const struct cli_option lossy_cli_options[] = {
	{ "qp-type", CLI_KEY_QP_TYPE, "TYPE", "uc: chunks over unreliable-connected QPs, resent by this "
	  "program; rc: the same transfer over RC QPs, resent by the transport (default: uc)", CLI_STAGE_PARSES },
	{ "paths", CLI_KEY_PATHS, "K", "data QPs to deal the chunks over on each plane, each its own flow "
	  "(default: 1)", CLI_INT_AT(struct lossy_opts, paths, 1, LOSSY_MAX_PATHS) },
	{ "plane", CLI_KEY_PLANE, "DEV", "one more plane: the device DEV, on a network of its own, with "
	  "--paths QPs of its own (-d's device is plane 0; give it once for each plane, up to 3, in the "
	  "same order on both sides)", CLI_STAGE_PARSES },
	{ "rto-ms", CLI_KEY_RTO, "MS", "the resend timer: how long the sender waits after a round's last "
	  "WRITE before it asks what came (default: 50)", CLI_INT_AT(struct lossy_opts, rto_ms, 1, LOSSY_MAX_RTO_MS) },
	{ "qp-timeout", CLI_KEY_LOSSY_QP_TIMEOUT, "T", "every RC QP's ACK timeout (the control QP's, and "
	  "the data QPs' under --qp-type rc), 4.096 us x 2^T a try, 1 to 31 (default: 14, stage 3's)", CLI_INT_AT(struct lossy_opts, qp_timeout, 1, 31) },
	{ "retry-cnt", CLI_KEY_LOSSY_RETRY_CNT, "N", "every RC QP's retries after a timeout before its WR "
	  "completes with status 12, 0 to 7; rxe takes 7 as retry for ever (default: 7, stage 3's)", CLI_INT_AT(struct lossy_opts, retry_cnt, 0, 7) },
	{ "drop-chunks", CLI_KEY_DROP, "LIST", "for tests, UC only: the receiver treats the first arrival "
	  "of each of these chunks (0,5,17) as lost: no bit in its bitmap, its bytes poisoned", CLI_STAGE_PARSES },
	{ 0 },
};

void lossy_opts_default(struct lossy_opts *opts)
{
	*opts = (struct lossy_opts){ .paths = 1, .planes = 1, .rto_ms = LOSSY_DEFAULT_RTO_MS, .retry_cnt = -1 };
}

/* "3,17,40": whole numbers, comma-separated, none twice. */
static int parse_drops(const char *arg, struct lossy_opts *opts)
{
	const char *p = arg;

	opts->n_drops = 0;
	for (;;) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(p, &end, 10);
		if (end == p || *p < '0' || *p > '9' || errno || v > UINT32_MAX ||
		    (*end && *end != ',')) {
			report_error("--drop-chunks: '%s' is not a list of chunk numbers such as 3,17,40",
				     arg);
			return -1;
		}
		if (opts->n_drops == LOSSY_MAX_DROPS) {
			report_error("--drop-chunks: more than %d chunks named; name at most %d",
				     LOSSY_MAX_DROPS, LOSSY_MAX_DROPS);
			return -1;
		}
		for (int i = 0; i < opts->n_drops; i++)
			if (opts->drop[i] == v) {
				report_error("--drop-chunks: chunk %lu is named twice", v);
				return -1;
			}
		opts->drop[opts->n_drops++] = (uint32_t)v;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

/* --qp-type, --plane and --drop-chunks; cli_parse fills the others, as their entries say. */
int lossy_parse_option(int key, const char *arg, void *ctx)
{
	static const char *const types[] = { "uc", "rc" };
	struct lossy_opts *opts = ctx;
	int i;

	switch (key) {
	case CLI_KEY_QP_TYPE:
		i = cli_pick_named("--qp-type", "QP type", arg, types, 0, 2);
		if (i < 0)
			return -1;
		opts->rc = i == 1;
		return 0;
	case CLI_KEY_PLANE:
		if (opts->planes == LOSSY_MAX_PLANES) {
			report_error("--plane %s: at most %d planes, -d's and %d --plane", arg,
				     LOSSY_MAX_PLANES, LOSSY_MAX_PLANES - 1);
			return -1;
		}
		opts->plane[opts->planes++] = arg;
		return 0;
	}
	/* --drop-chunks */
	return parse_drops(arg, opts);
}

/* Each plane a device of its own: the same device twice would be one NIC, not two planes. */
static int check_planes(struct lossy_opts *opts, const char *dev)
{
	if (opts->planes == 1)
		return 0;
	if (!dev) {
		report_error("--plane %s: give -d too, the device of plane 0 (where the control QP "
			     "goes): with planes, which device is which must be said on both sides",
			     opts->plane[1]);
		return -1;
	}
	opts->plane[0] = dev;
	for (int p = 1; p < opts->planes; p++)
		for (int q = 0; q < p; q++)
			if (!strcmp(opts->plane[p], opts->plane[q])) {
				report_error("--plane %s: that device is plane %d's already%s: each "
					     "plane needs a device of its own, on a network of its own "
					     "('rdma link show' lists them)", opts->plane[p], q,
					     q ? "" : " (-d)");
				return -1;
			}
	if (opts->paths * opts->planes > LOSSY_MAX_PATHS) {
		report_error("--paths %d on each of %d planes is %d data QPs; at most %d: give a "
			     "smaller --paths", opts->paths, opts->planes, opts->paths * opts->planes,
			     LOSSY_MAX_PATHS);
		return -1;
	}
	return 0;
}

int lossy_opts_check(struct lossy_opts *opts, const char *dev)
{
	if (opts->rc && opts->n_drops) {
		report_error("--drop-chunks stands for packets a UC QP loses; over RC the transport "
			     "resends a lost packet itself and the program never sees a hole: leave "
			     "--drop-chunks out, or use --qp-type uc");
		return -1;
	}
	return check_planes(opts, dev);
}

int lossy_check_drops(const struct lossy_opts *opts, uint32_t chunks)
{
	for (int i = 0; i < opts->n_drops; i++)
		if (opts->drop[i] >= chunks) {
			report_error("--drop-chunks: chunk %u is past the last chunk, %u: the buffer "
				     "holds chunks 0 to %u", opts->drop[i], chunks - 1, chunks - 1);
			return -1;
		}
	return 0;
}

const char *lossy_qp_type_name(const struct lossy_opts *opts)
{
	return opts->rc ? "rc" : "uc";
}
