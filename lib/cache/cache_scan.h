/* Housekeeping's view of a cache (fpull cache ls|du|prune|rm): what is in it, and removing
 * entries under the locks pulls take. Which blobs belong to which image is the caller's
 * business (it reads manifests). */
#ifndef FP_CACHE_SCAN_H
#define FP_CACHE_SCAN_H

#include <stdint.h>

#include "base/digest.h"
#include "fpull/cache.h"

/* Opens dir without creating anything in it: FPULL_ENOTFOUND when there is no cache there.
 * write: for removals; a cache root the caller does not own (a shared cache, another
 * user's) is refused with FPULL_EFAIL. Read-only otherwise: nothing is ever changed, bad
 * entries included. */
int fp_cache_admin_open(fpull_cache **out, const char *dir, int write, fpull_err *err);

/* An image the cache knows: a tag record (digest from it), or the last-use stamp of a pull
 * by digest (digest from its reference). */
struct fp_cache_root {
  char *reference;
  char *digest;     /* the top document */
  int64_t last_use; /* the later of the record's and the stamp's mtime */
};
/* Every image, in no particular order. Records and stamps that cannot be read or that name
 * another reference than their file name says are passed over. */
void fp_cache_scan_roots(fpull_cache *c, struct fp_cache_root **out, size_t *n);
void fp_cache_roots_free(struct fp_cache_root *r, size_t n);

struct fp_cache_blob {
  char digest[FP_DIGEST_MAX];
  uint64_t size;
};
/* Every regular file in blobs/sha256 and blobs/sha512 with a valid name, sorted by digest. */
void fp_cache_scan_blobs(fpull_cache *c, struct fp_cache_blob **out, size_t *n);

/* Bytes and count of files in tmp/ (unfinished downloads, temporary records: the users'
 * directories the caller can read), and of the tag records and stamps. */
void fp_cache_scan_partials(fpull_cache *c, uint64_t *bytes, uint64_t *count);
void fp_cache_scan_records(fpull_cache *c, uint64_t *bytes, uint64_t *count);

/* Removes a blob unless a pull pins it or downloads it right now: 0 removed (or gone
 * already), 1 kept because it is in use, -1 failure (errno). */
int fp_cache_remove_blob(fpull_cache *c, const char *digest);
/* Removes the tag record of reference when it still names digest, and its stamp. */
void fp_cache_remove_root(fpull_cache *c, const struct fp_cache_root *r);
/* Removes the unfinished downloads nobody is writing (the caller's own, all for root). */
void fp_cache_remove_partials(fpull_cache *c, uint64_t *bytes, uint64_t *count);

#endif
