/* fpull-slurm-runner: the container's config.json (runner_spec.c). */
#ifndef FPULL_SLURM_RUNNER_SPEC_H
#define FPULL_SLURM_RUNNER_SPEC_H

#include "stage.h"
#include "base/util.h"

/* Writes b to path (mode 0644, never through a symlink); -1 when it cannot. */
int fp_runner_write_small(const char *path, const struct fp_buf *b);
/* The bundle's config.json; the image's WorkingDir and Env to *workdir and *env. */
int fp_runner_write_spec(struct runner *rn, char **workdir, char ***env);

#endif
