/* Verified records: a warm pull from the caller's own cache need not hash its blobs again.
 *
 * When a blob of the own cache has been hashed and found to be what its name says, the
 * caller records that in CACHE/tmp/uUID/verified/HEX (a file of the caller's alone, in the
 * caller's private directory, written by tmp + rename; a shared cache's blob that root or
 * the caller wrote, in verified-shared/HEX of the own cache's): the blob
 * file's identity as it was hashed (st_dev, st_ino, st_size, st_ctime in seconds and
 * nanoseconds) and, once an unpack has checked it, the layer's DiffID. A later use that
 * finds the blob with the same identity skips the hash: only the owner or root can write
 * such a blob (it must be safe by fp_trust_file_is_safe), no user can set a ctime, and any
 * write, chmod, link or rename-over changes it. A record that does not match, is not the
 * caller's own file, is a symlink or cannot be read is ignored: the blob is hashed as ever. */
#ifndef FP_CACHE_VERIFIED_H
#define FP_CACHE_VERIFIED_H

#include <sys/stat.h>

#include "base/digest.h"
#include "fpull/cache.h"

/* 1 when the blob of digest, open in c (the own cache or a shared one) with *st (fstat of
 * that descriptor), is the file a record of ours says was verified; 0 otherwise (no record,
 * a record that does not match, a blob others could write, records distrusted). */
int fp_verified_blob_ok(const struct fpull_cache *c, const char *digest, const struct stat *st);

/* Records that the blob of digest, as *st identified it before it was hashed, verified.
 * Nothing for a blob that others could write; failures are ignored. */
void fp_verified_note_blob(const struct fpull_cache *c, const char *digest, const struct stat *st);

/* The DiffID recorded for the blob of digest that fd holds open (a layer taken from the
 * own cache), into out: 1; 0 when there is no matching record or it has no DiffID yet. */
int fp_verified_diff_id(const struct fpull_cache *c, const char *digest, int fd,
                        char out[FP_DIGEST_MAX]);

/* After an unpack checked diff_id against the stream read from fd: adds it to the record
 * of the blob of digest, when fd is still the file that record names. */
void fp_verified_note_diff_id(const struct fpull_cache *c, const char *digest, int fd,
                              const char *diff_id);

/* From now on no record is trusted for c and its shared caches (records are still
 * written; a shared cache added later inherits it): a pull under a
 * signature policy hashes every blob and layer it uses, since the cache and its records are
 * the user's own to forge, and the policy may be a site's that the user must not get past
 * (issue 39). */
void fp_verified_distrust(struct fpull_cache *c);

/* Removes the caller's record of digest (housekeeping removes it with the blob). */
void fp_verified_remove(const struct fpull_cache *c, const char *digest);

/* Removes the caller's records whose blob is gone, and temporary files killed runs left
 * there (when a cache is opened). */
void fp_verified_clean(const struct fpull_cache *c);

#endif
