/* fpull Slurm plugin: one resolution per job (issue 41.2). The submit command (srun,
 * sbatch, salloc) resolves an --fpull-image tag once, as the user, to the digest of its
 * index (fpull manifest inspect: one request, nothing cached), and leaves it in the job's
 * environment, FPULL_IMAGE_PINS
 * ("IMAGE@DIGEST" entries separated by blanks, IMAGE as the option gave it), which every
 * step and node of the job (and a batch script's own sruns) sees: each node then pulls
 * IMAGE pinned to that digest, picks its entry from that index, and reads manifests and
 * blobs by digest from the caches. A step whose submit finds its image pinned already
 * (an srun in a job sbatch or salloc gave the image) asks the registry nothing. */
#ifndef FPULL_SLURM_JOB_PIN_H
#define FPULL_SLURM_JOB_PIN_H

#include <stddef.h>

#include "settings.h"

#define FP_SLURM_PINS_ENV "FPULL_IMAGE_PINS"

/* Whether an --fpull-image value is a registry image named by a tag (not a digest, a
 * SquashFS file, none or empty): the only kind worth pinning. */
int fp_slurm_pin_wanted(const char *image);

/* The entry of an image whose registry did not answer the submit's check in time
 * ("IMAGE@-"): the nodes then run a cached image at once, with the warning, instead of
 * each waiting for the registry again. */
#define FP_SLURM_PIN_UNANSWERED "-"

/* IMAGE's digest in pins (FPULL_IMAGE_PINS's value) into digest; 1 when found (the
 * digest valid, or FP_SLURM_PIN_UNANSWERED). */
int fp_slurm_pin_find(const char *pins, const char *image, char *digest, size_t len);

/* pins with IMAGE's entry (if any) replaced by IMAGE@DIGEST (digest NULL: removed); the
 * caller frees it. */
char *fp_slurm_pin_set(const char *pins, const char *image, const char *digest);

/* At submit, as the user: resolves image with fpull manifest inspect (the site's fpull and
 * config, within check_timeout= seconds, through coreutils' timeout) into digest. 0, or
 * fpull's code (nothing pinned then: each node checks the tag itself), or -1 when the
 * registry did not answer within the deadline. */
int fp_slurm_pin_resolve(const struct fp_slurm_settings *s, const char *image, char *digest,
                         size_t len);

#endif
