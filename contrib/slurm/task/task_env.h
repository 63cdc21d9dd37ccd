/* fpull Slurm plugin: the image's Env and Entrypoint for a task that joined the container
 * (task_init, as the job's user). */
#ifndef FPULL_SLURM_TASK_ENV_H
#define FPULL_SLURM_TASK_ENV_H

#include <slurm/spank.h>

#include <fpull/error.h>

#include "container.h"

/* The image's Env (c->env) under the job's: the job's value wins for Slurm's, the MPI
 * launchers', the GPUs', fpull's, TERM, NAMES (--fpull-env, comma-separated) and SITE
 * (env_passthrough=); for any other name the image's does. Sets FPULL_IMAGE_DIGEST, and
 * HOME to the user's home where it is mounted. */
void fp_slurm_task_env(spank_t sp, const struct fp_slurm_container *c, const char *names,
                       const char *site);

/* --fpull-entrypoint: makes the task run ENTRY... COMMAND ARGS... (S_JOB_ARGV's first
 * element becomes a script that execs them). */
int fp_slurm_task_entrypoint(spank_t sp, char **entry, fpull_err *err);

#endif
