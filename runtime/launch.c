/* launch.c: the job runtime: the rank, the world size and rank 0's address, from the options or a launcher's variables. */
#include "launch.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The launchers whose variables give a rank and a world size, innermost first. */
static const struct launcher {
	const char *name, *rank_var, *size_var;
} launchers[] = {
	{ "torchrun", "RANK", "WORLD_SIZE" },
	{ "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
	{ "MPICH", "PMI_RANK", "PMI_SIZE" },
	{ "Slurm", "SLURM_PROCID", "SLURM_NTASKS" },
};

static int env_int(const struct launcher *ln, const char *var, long max, int *out)
{
	const char *text = getenv(var);
	char what[64];

	snprintf(what, sizeof(what), "%s (%s)", var, ln->name);
	return cli_parse_int(what, text, 0, max, out);
}

int launch_resolve(const struct job_opts *job, const struct cli_common *common, struct launch *l)
{
	*l = (struct launch){ .rank = job->rank, .world = job->world, .source = "command line",
			      .port = common->tcp_port };
	if ((job->rank < 0) != (job->world < 0)) {
		report_error("give --rank and --world-size together, or neither (then a launcher's "
			     "variables give them)");
		return -1;
	}
	for (size_t i = 0; l->rank < 0 && i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const struct launcher *ln = &launchers[i];

		if (!getenv(ln->rank_var) || !getenv(ln->size_var))
			continue;
		if (env_int(ln, ln->rank_var, 1 << 20, &l->rank) ||
		    env_int(ln, ln->size_var, JOB_MAX_RANKS, &l->world))
			return -1;
		if (l->world < 1) {
			report_error("%s (%s) is 0: a job has at least one rank", ln->size_var, ln->name);
			return -1;
		}
		l->source = ln->name;
		show("launcher", "%s: rank %d of %d, from %s and %s", ln->name, l->rank, l->world,
		     ln->rank_var, ln->size_var);
	}
	if (l->rank < 0) {
		report_error("no rank: give --rank R --world-size N, or run under torchrun, mpirun or "
			     "srun, whose variables (RANK and WORLD_SIZE, OMPI_COMM_WORLD_RANK, "
			     "PMI_RANK, SLURM_PROCID) say it");
		return -1;
	}
	if (!strcmp(l->source, "command line"))
		show("launcher", "none: rank %d of %d, from --rank and --world-size", l->rank, l->world);
	l->host = common->host ? common->host : getenv("MASTER_ADDR");
	if (l->rank > 0 && l->world > 1 && !l->host) {
		report_error("rank %d: no address for rank 0's rendezvous: give it as HOST or set "
			     "MASTER_ADDR (torchrun sets it; with mpirun add -x MASTER_ADDR=HOST)", l->rank);
		return -1;
	}
	if (l->world > 1)
		show("rendezvous", "rank 0 at %s, TCP port %d (-p; torchrun's own store holds "
		     "MASTER_PORT)", l->rank == 0 ? "this process" : l->host, l->port);
	return 0;
}
