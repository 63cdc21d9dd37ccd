/* fpull Slurm plugin: a task's seccomp filter in the container (seccomp.c). */
#ifndef FPULL_SLURM_SECCOMP_H
#define FPULL_SLURM_SECCOMP_H

#include <fpull/error.h>

/* Installs the filter that makes chown- and setuid-family calls succeed without effect
 * (where the plugin knows the architecture; elsewhere nothing). As the job's user. */
int fp_slurm_task_seccomp(fpull_err *err);

#endif
