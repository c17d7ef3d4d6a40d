/* launch.h: the job runtime: the rank, the world size and rank 0's address, from the options or a launcher's variables. */
#ifndef RDMA_STEPS_LAUNCH_H
#define RDMA_STEPS_LAUNCH_H

#include "cli.h"
#include "job_options.h"

/* Where this process sits in the job, and who told it. */
struct launch {
	int rank, world;
	const char *source;	/* "command line", "torchrun", "Open MPI", "MPICH" or "Slurm" */
	const char *host;	/* rank 0's address (NULL on rank 0) */
	int port;		/* the rendezvous port */
};

/*
 * The rank and world size: --rank and --world-size, else the first
 * launcher whose variables are set, innermost first: torchrun's RANK and
 * WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, MPICH's PMI_RANK
 * and PMI_SIZE, Slurm's SLURM_PROCID and SLURM_NTASKS (an srun that starts
 * torchrun or mpirun sets Slurm's per task, theirs per process).  Rank 0's
 * address: HOST, else MASTER_ADDR.  JOB's rank and world are --rank and
 * --world-size, -1 when not given.  Returns 0, or -1 after saying what is missing.
 */
int launch_resolve(const struct job_opts *job, const struct cli_common *common, struct launch *l);

#endif
