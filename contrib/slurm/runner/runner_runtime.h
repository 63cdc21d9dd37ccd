/* fpull-slurm-runner: the OCI runtime (runner_runtime.c): runc/crun create, start,
 * delete. */
#ifndef FPULL_SLURM_RUNNER_RUNTIME_H
#define FPULL_SLURM_RUNNER_RUNTIME_H

#include <stddef.h>

#include "stage.h"

/* Where the program rt is (fp_slurm_find_program), else rt as given. */
const char *fp_runner_runtime_path(const char *rt, char *buf, size_t len);
/* The runtime's VERB for the step's container, with EXTRA arguments. */
int fp_runner_runtime(struct runner *rn, const char *verb, const char *const *extra, int quiet);
/* Creates and starts the container, whose process is the holder; its and its child's pids. */
int fp_runner_start_holder(struct runner *rn, long *holder, long *nested);
/* The runtime's delete --force of the step's container (errors unsaid). */
int fp_runner_delete(struct runner *rn);

#endif
