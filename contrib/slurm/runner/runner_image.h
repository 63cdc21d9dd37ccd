/* fpull-slurm-runner: the container's tree when it is not a plain pull (runner_image.c):
 * a .sqsh file, --fpull-format=squashfs, --fpull-name, the node store, the site's SquashFS
 * store. It uses the pull,
 * spec and runtime stages below it. */
#ifndef FPULL_SLURM_RUNNER_IMAGE_H
#define FPULL_SLURM_RUNNER_IMAGE_H

#include <cjson/cJSON.h>

#include "stage.h"

int fp_runner_from_squashfs(struct runner *rn, struct fp_buf *info);
int fp_runner_pull_squashfs(struct runner *rn, cJSON **res);
int fp_runner_from_name(struct runner *rn, cJSON **res, int *lock, int *reused);
int fp_runner_from_store(struct runner *rn, cJSON **res, int *lock);
/* sqsh_store=: the chosen entry's SquashFS file in dir (DIR/UID, sqsh_store.h), converted
 * when no node did yet, mounted with a layer of the step's own; its image config and
 * --fpull-entrypoint's N records from the file's enroot files. *lock: held (shared) while
 * the step runs. *res: what say_chosen needs. */
int fp_runner_from_sqsh_store(struct runner *rn, const char *dir, cJSON **res, struct fp_buf *info,
                              int *lock);

#endif
