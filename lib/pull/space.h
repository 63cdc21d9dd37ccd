/* Internal: disk space of a pull (space.c). */
#ifndef FP_SPACE_H
#define FP_SPACE_H

#include <stdint.h>

#include "fpull/cache.h"
#include "fpull/error.h"
#include "fpull/manifest.h"
#include "fpull/unpack.h"

struct fp_space {
  uint64_t cache_need; /* compressed bytes of the layers not in the cache yet */
  uint64_t dest_need;  /* an estimate of what DEST takes */
  const char *cache_dir, *dest;
};

/* The format of an OCI layout or archive (oci:, oci-archive:, docker-archive:): its blobs'
 * own size. */
#define FP_SPACE_LAYOUT (-1)

/* What the pull of m into dest (NULL: prefetch) in format (enum fpull_unpack_format, or
 * FP_SPACE_LAYOUT) will write: a rootfs takes its layers' uncompressed size where a cached
 * blob says it, else twice their compressed size. */
void fp_space_estimate(struct fp_space *sp, fpull_cache *cache, const struct fpull_manifest *m,
                       const char *dest, int format);
/* FPULL_EFAIL "not enough disk space: needs N MB, M free" when the estimate does not fit
 * the free space of the cache's and DEST's file systems (one sum when they are one). */
int fp_space_check(const struct fp_space *sp, fpull_err *err);
/* Adds the estimate, the free space and the prune hint to an ENOSPC failure's message. */
void fp_space_explain(const struct fp_space *sp, fpull_err *err);

#endif
