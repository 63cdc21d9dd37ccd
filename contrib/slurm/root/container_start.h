/* fpull Slurm plugin: slurmstepd starts the step's runner (root/container_start.c), as
 * root: the runner's child makes the job's directory, drops every id to the job's user and
 * execs fpull-slurm-runner with the request (common/request.h) on a pipe. The container the
 * tasks join is task/container.h's. */
#ifndef FPULL_SLURM_CONTAINER_START_H
#define FPULL_SLURM_CONTAINER_START_H

#include <stddef.h>

#include <fpull/error.h>

#include "common/request.h"
#include "task/container.h"

/* In slurmstepd: starts the runner, which pulls and creates the step's container (see
 * task/container.h), and returns at once: the tasks wait for it (fp_slurm_container_wait), so that
 * the step is running and scancel reaches the pull. */
int fp_slurm_container_start(struct fp_slurm_container *c, const struct fp_slurm_request *r,
                             fpull_err *err);

/* The path of a program of the plugin's (the runner, the holder) into buf: beside the
 * plugin, else in the libexec directory it was installed for. */
const char *fp_slurm_program(const char *name, char *buf, size_t len);

/* Kills the runner of this process, if one is running (scancel during the pull). */
void fp_slurm_container_cancel(void);

#endif
