/* fpull: the content-addressed blob cache, CACHE/blobs/sha256/HEX, shared safely by
 * simultaneous processes. */
#ifndef FPULL_CACHE_H
#define FPULL_CACHE_H

#include "error.h"
#include "registry.h"

struct fpull_config;
typedef struct fpull_cache fpull_cache;

/* --cache-dir, else $FPULL_CACHE, else the config's cache-dir, else
 * $XDG_CACHE_HOME/fpull, else ~/.cache/fpull. Caller frees. */
FPULL_API char *fpull_cache_resolve_dir(const char *cli_dir, const struct fpull_config *config);

/* Creates the directory layout when missing. */
FPULL_API int fpull_cache_open(fpull_cache **out, const char *dir, fpull_err *err);
FPULL_API void fpull_cache_free(fpull_cache *c);
FPULL_API const char *fpull_cache_dir(const fpull_cache *c);

/* Path a verified blob has (or would have). Caller frees. */
FPULL_API char *fpull_cache_blob_path(const fpull_cache *c, const char *digest);
/* 1 when a regular file (not a symlink) of the right size is there. */
FPULL_API int fpull_cache_has_blob(const fpull_cache *c, const char *digest, int64_t size);
/* Re-hashes a cached blob; a corrupt one is removed and FPULL_EINTEGRITY returned. */
FPULL_API int fpull_cache_verify_blob(fpull_cache *c, const char *digest, int64_t size,
                                      fpull_err *err);

/* Writing one blob: takes the blob's lock (waiting for another process that holds it),
 * reopens a partial download left by an earlier run (re-hashing it), and gives a sink.
 * *done is set to 1 when the blob turned out to be complete already (then *out is NULL). */
struct fpull_cache_writer;
FPULL_API int fpull_cache_writer_begin(struct fpull_cache_writer **out, int *done, fpull_cache *c,
                                       const char *digest, int64_t size, fpull_err *err);
FPULL_API uint64_t fpull_cache_writer_offset(const struct fpull_cache_writer *w);
FPULL_API const struct fpull_blob_sink *fpull_cache_writer_sink(struct fpull_cache_writer *w);
/* Verifies size and sha256, renames into place, unlocks, frees w. On mismatch the partial
 * file is removed and FPULL_EINTEGRITY returned. */
FPULL_API int fpull_cache_writer_commit(struct fpull_cache_writer *w, fpull_err *err);
/* Keeps the partial file for a later resume, unlocks, frees w. NULL is a no-op. */
FPULL_API void fpull_cache_writer_abort(struct fpull_cache_writer *w);

/* Small verified blobs (manifests, configs) kept in memory. */
FPULL_API int fpull_cache_put_bytes(fpull_cache *c, const char *digest, const void *data,
                                    size_t len, fpull_err *err);
/* Reads a cached blob of at most max bytes; FPULL_ENOTFOUND when absent. Caller frees. */
FPULL_API int fpull_cache_get_bytes(fpull_cache *c, const char *digest, size_t max, char **data,
                                    size_t *len, fpull_err *err);

/* tag -> digest records for --offline (normalised reference without digest). */
FPULL_API int fpull_cache_tag_record(fpull_cache *c, const char *reference, const char *digest,
                                     fpull_err *err);
FPULL_API int fpull_cache_tag_lookup(fpull_cache *c, const char *reference, char **digest,
                                     fpull_err *err);

#endif
