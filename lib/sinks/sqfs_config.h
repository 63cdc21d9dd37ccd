/* Internal: the image's configuration inside a SquashFS output, stored the way enroot's
 * import stores it (enroot src/docker.sh, docker::configure), so that `enroot start`, pyxis
 * and fpull's Slurm plugin run a saved .sqsh as the image ran:
 *   /etc/environment  Env, one NAME=VALUE a line
 *   /etc/rc           the command script enroot start runs with sh: a provenance comment,
 *                     the Labels as comments, cd to WorkingDir, then Entrypoint + Cmd
 *   /etc/rc.local     enroot's empty hook, which /etc/rc sources
 *   /etc/fstab        the Volumes, as enroot's bind mounts of the image's own directories
 * Each replaces what the image holds under that name, as enroot's import does. */
#ifndef FP_SQFS_CONFIG_H
#define FP_SQFS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "fpull/error.h"
#include "fpull/manifest.h"
#include "fpull/unpack.h"
#include "base/util.h"

/* What the SquashFS sink stores besides the layers. */
struct fp_sqfs_image {
  const char *config; /* the image config JSON (verified), config_len bytes */
  size_t config_len;
  const char *source; /* what /etc/rc's "# enroot-provenance:" names, or NULL */
  /* What /.fpull/platform.json records (sqfs_platform.h); none written without a
   * manifest_digest. */
  const char *reference;
  const char *index_digest; /* NULL for a single manifest */
  const char *manifest_digest;
  const struct fpull_platform *platform;
};

struct fp_sqfs_config_file {
  const char *path; /* cleaned, below the root: "etc/rc" */
  struct fp_buf data;
};

#define FP_SQFS_CONFIG_FILES 4

struct fp_sqfs_config {
  struct fp_sqfs_config_file files[FP_SQFS_CONFIG_FILES];
  char *workdir;    /* WorkingDir cleaned (inroot.h), to be made when missing; NULL: none */
  uint64_t dropped; /* Env entries and Volumes that cannot be written in enroot's format */
};

/* The files for image config json (len bytes) and source (NULL: an empty provenance). The
 * strings of an untrusted config cannot break out of their line or their quotes: an Env
 * entry or Volume that would is left out and counted in dropped. Errors: FPULL_EINTEGRITY
 * for a config that is not strict JSON. */
int fp_sqfs_config_make(struct fp_sqfs_config *out, const char *json, size_t len,
                        const char *source, fpull_err *err);
void fp_sqfs_config_free(struct fp_sqfs_config *c);

/* enroot's URI for reference (fpull's normalised form) pinned to digest:
 * docker://REGISTRY#REPOSITORY[:TAG]@DIGEST. Caller frees; NULL when reference does not
 * parse. */
char *fp_sqfs_provenance(const char *reference, const char *digest);

/* fpull_unpack_squashfs with the image's configuration stored too (img NULL: the layers
 * only, as fpull_unpack_squashfs). The files count as entries in stats. */
int fp_unpack_squashfs_image(const char *dest, const struct fpull_layer *layers, size_t n,
                             const struct fpull_unpack_opts *opts, const struct fp_sqfs_image *img,
                             struct fpull_unpack_stats *stats, fpull_err *err);

#endif
