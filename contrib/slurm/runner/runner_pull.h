/* fpull-slurm-runner: fpull under the step's pull policy (runner_pull.c). */
#ifndef FPULL_SLURM_RUNNER_PULL_H
#define FPULL_SLURM_RUNNER_PULL_H

#include <cjson/cJSON.h>

#include "stage.h"

/* Pulls (or with rn->inspect, resolves) rn->pull_image; fpull's --json result. 0, or
 * fpull's exit code after it said why on the step's stderr. */
int fp_runner_pull(struct runner *rn, cJSON **result);
/* The one line that says what this node chose, and why. */
void fp_runner_say_chosen(const struct runner *rn, const cJSON *res);
/* The image config of the entry DIGEST (from the cache, else fetched); NULL with *rc. */
cJSON *fp_runner_image_config(const struct runner *rn, const char *digest, const char *what,
                              int *rc);
/* --fpull-entrypoint: the image's Entrypoint as N records. */
int fp_runner_send_entrypoint(const struct runner *rn, const char *digest, struct fp_buf *info);
/* --fpull-save: the entry as a SquashFS file; says why when it cannot, never fails. */
void fp_runner_save(struct runner *rn, const char *digest, const char *index_digest);
/* Where a node of a step on several nodes writes --fpull-save=save: save with ".SHORT" (the
 * digest's first 12 hex digits) before its ".sqsh", or after it when it has none. */
char *fp_runner_save_path(const char *save, const char *digest);

#endif
