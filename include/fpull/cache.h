/* fpull: the content-addressed blob cache, CACHE/blobs/sha256/HEX, shared safely by
 * simultaneous processes. */
#ifndef FPULL_CACHE_H
#define FPULL_CACHE_H

#include "error.h"
#include "registry.h"

struct fpull_config;
typedef struct fpull_cache fpull_cache;

/* --cache-dir, else $FPULL_CACHE, else the config's cache-dir (a leading "~/" is $HOME),
 * else $XDG_CACHE_HOME/fpull (when absolute), else ~/.cache/fpull. Empty values count as
 * unset. Caller frees; NULL when there is no home directory to use. */
FPULL_API char *fpull_cache_resolve_dir(const char *cli_dir, const struct fpull_config *config);

/* Creates the directory layout when missing (a new cache root is mode 0700: blobs may come
 * from private images) and removes what killed runs left behind: partial downloads that
 * nobody holds and nobody touched for a day (younger ones are kept for resume). A root
 * writable by everyone without the sticky bit, or a subdirectory that is a symlink, is
 * refused (FPULL_EFAIL). */
FPULL_API int fpull_cache_open(fpull_cache **out, const char *dir, fpull_err *err);
FPULL_API void fpull_cache_free(fpull_cache *c);
FPULL_API const char *fpull_cache_dir(const fpull_cache *c);

/* Path a verified blob has (or would have). Caller frees. */
FPULL_API char *fpull_cache_blob_path(const fpull_cache *c, const char *digest);
/* 1 when a regular file (not a symlink) of the right size is there (size < 0: any size).
 * Cheap (lstat): use fpull_cache_verify_blob before trusting the bytes. */
FPULL_API int fpull_cache_has_blob(const fpull_cache *c, const char *digest, int64_t size);
/* Opens a cached blob for reading without following a symlink and checks it is a regular
 * file of size bytes (size < 0: any), so what is read is the entry that was checked (no
 * path race). *out is the caller's to close. FPULL_ENOTFOUND when absent; a non-regular or
 * wrong-sized entry is removed and FPULL_ENOTFOUND returned, so the caller fetches it
 * again. The bytes are not re-hashed: see fpull_cache_verify_blob. */
FPULL_API int fpull_cache_open_blob(int *out, fpull_cache *c, const char *digest, int64_t size,
                                    fpull_err *err);
/* Re-hashes a cached blob (size < 0: any size); a corrupt, wrong-sized or non-regular
 * (symlink) entry is removed and FPULL_EINTEGRITY returned; FPULL_ENOTFOUND when absent.
 * This and fpull_cache_open_verified skip the hash of an own-cache blob that the caller's
 * record says was verified as the very same file (man fpull, SECURITY). */
FPULL_API int fpull_cache_verify_blob(fpull_cache *c, const char *digest, int64_t size,
                                      fpull_err *err);

/* Opens a cached blob for use and verifies it from that descriptor: *out holds exactly
 * the bytes whose sha256 (and size, when size >= 0) matched, and nobody can change them any
 * more. A blob that someone other than the caller or root could change (another user's, in
 * a shared cache) is copied into an unnamed file of the caller's while it is hashed, and the
 * copy is returned. Read *out from its start; the caller closes it. FPULL_ENOTFOUND when
 * absent; a corrupt, wrong-sized or non-regular entry is removed and FPULL_EINTEGRITY
 * returned. */
FPULL_API int fpull_cache_open_verified(int *out, fpull_cache *c, const char *digest, int64_t size,
                                        fpull_err *err);
/* Writing one blob: takes the blob's lock (waiting for another process or thread that holds
 * it), reopens a partial download left by an earlier run (re-hashing it), and gives a sink.
 * *done is set to 1 when the blob turned out to be complete already (then *out is NULL):
 * in the cache, committed by the process we waited for, or a complete partial download
 * that verified. Otherwise fetch from fpull_cache_writer_offset on. The sink refuses bytes
 * beyond size (FPULL_EINTEGRITY); its restart(offset) truncates to offset (0: start over).
 * Bad digests and negative sizes: FPULL_EINTEGRITY. */
struct fpull_cache_writer;
FPULL_API int fpull_cache_writer_begin(struct fpull_cache_writer **out, int *done, fpull_cache *c,
                                       const char *digest, int64_t size, fpull_err *err);
FPULL_API uint64_t fpull_cache_writer_offset(const struct fpull_cache_writer *w);
FPULL_API const struct fpull_blob_sink *fpull_cache_writer_sink(struct fpull_cache_writer *w);
/* Verifies size and sha256, renames into place, unlocks, frees w. On mismatch the partial
 * file is removed and FPULL_EINTEGRITY returned, naming the digest, expected and got. */
FPULL_API int fpull_cache_writer_commit(struct fpull_cache_writer *w, fpull_err *err);
/* The same, and *fd (when not NULL) gets a descriptor of the committed blob positioned at
 * its start: the very file whose bytes were verified, which only the caller can write. */
FPULL_API int fpull_cache_writer_commit_fd(struct fpull_cache_writer *w, int *fd, fpull_err *err);
/* Keeps the partial file for a later resume, unlocks, frees w. NULL is a no-op. */
FPULL_API void fpull_cache_writer_abort(struct fpull_cache_writer *w);

/* Small blobs (manifests, configs) that are in memory: stored through a writer, so bytes
 * that do not match digest are refused with FPULL_EINTEGRITY. */
FPULL_API int fpull_cache_put_bytes(fpull_cache *c, const char *digest, const void *data,
                                    size_t len, fpull_err *err);
/* Reads a cached blob of at most max bytes (more: FPULL_EINTEGRITY) and re-verifies it;
 * FPULL_ENOTFOUND when absent, and also when the entry was corrupt or a symlink (it is then
 * removed with a warning, so the caller fetches it again). *data is NUL-terminated. Caller
 * frees. */
FPULL_API int fpull_cache_get_bytes(fpull_cache *c, const char *digest, size_t max, char **data,
                                    size_t *len, fpull_err *err);

/* Shared caches: the directories of $FPULL_SHARED_CACHES (colon-separated; when set, even
 * empty, it replaces the config's list) or else the config's shared-caches. Caller frees
 * (fpull_strv_free); never NULL. */
FPULL_API char **fpull_cache_shared_dirs(const struct fpull_config *config);
/* Adds dir as a read-only cache searched after c's own and those added before: blob,
 * manifest and tag-record lookups (fpull_cache_has_blob, _open_blob, _verify_blob,
 * _open_verified, _get_bytes, _tag_lookup) fall back to it; nothing is ever written or
 * removed there. A missing dir is skipped quietly, one writable by every user without the
 * sticky bit (or unreadable) with a warning: a node keeps working without it. Returns 0. */
FPULL_API int fpull_cache_add_shared(fpull_cache *c, const char *dir, fpull_err *err);
/* fpull_cache_open, then fpull_cache_add_shared for each of fpull_cache_shared_dirs. */
FPULL_API int fpull_cache_open_with_shared(fpull_cache **out, const char *dir,
                                           const struct fpull_config *config, fpull_err *err);

/* tag -> digest records for --offline (normalised reference without digest), kept with
 * the time of the resolution in CACHE/tags/ and replaced atomically. Lookup of a reference
 * never recorded: FPULL_ENOTFOUND; a damaged record: FPULL_EFAIL. */
FPULL_API int fpull_cache_tag_record(fpull_cache *c, const char *reference, const char *digest,
                                     fpull_err *err);
FPULL_API int fpull_cache_tag_lookup(fpull_cache *c, const char *reference, char **digest,
                                     fpull_err *err);

/* Housekeeping (fpull cache ls|du|prune|rm). An image is a tag record, or the last-use stamp
 * of a pull by digest; its blobs are its documents (index, manifests), configs and layers
 * that are in the cache. Pulls pin every blob they use until they end (a shared lock per
 * blob) and stamp each reference they pulled with the time (CACHE/used/), so that what a
 * running pull uses is never removed and "least recently used" means the last pull, not
 * atime. dir: as fpull_cache_resolve_dir gives it. Only the own cache is looked at, never
 * the shared ones. */
struct fpull_cache_image {
  char *reference;      /* REGISTRY/REPO:TAG, or REGISTRY/REPO@DIGEST for a pull by digest */
  char *digest;         /* the top document: index or manifest */
  uint64_t size;        /* bytes of its blobs in the cache */
  uint64_t unique_size; /* of those, the bytes no other image needs: what removing it frees */
  size_t blobs;         /* how many of its blobs are in the cache */
  int64_t last_use;     /* seconds since the epoch: its last pull or prefetch */
  int in_use;           /* a pull or prefetch of it is running now */
};
struct fpull_cache_listing {
  struct fpull_cache_image *images; /* most recently used first */
  size_t n_images;
};
/* Lists the images of the cache at dir (an empty list when there is no cache there). Reads
 * only; any cache the caller can read. Caller frees (fpull_cache_listing_free). */
FPULL_API int fpull_cache_list(struct fpull_cache_listing **out, const char *dir, fpull_err *err);
FPULL_API void fpull_cache_listing_free(struct fpull_cache_listing *l);

struct fpull_cache_kind_usage {
  uint64_t count, bytes;
};
struct fpull_cache_usage {
  struct fpull_cache_kind_usage blobs;        /* configs, layers and blobs no image needs */
  struct fpull_cache_kind_usage manifests;    /* indexes and manifests of the images */
  struct fpull_cache_kind_usage partials;     /* unfinished downloads and temporary files */
  struct fpull_cache_kind_usage records;      /* tag records and last-use stamps */
  struct fpull_cache_kind_usage unreferenced; /* of blobs, those no image needs */
  size_t images;
  uint64_t total; /* blobs + manifests + partials + records */
};
/* Sums up the cache at dir (all zero when there is none). Reads only. */
FPULL_API int fpull_cache_du(struct fpull_cache_usage *out, const char *dir, fpull_err *err);

#define FPULL_CACHE_PRUNE_OPTS_VERSION 1
struct fpull_cache_prune_opts {
  unsigned int version; /* FPULL_CACHE_PRUNE_OPTS_VERSION */
  int64_t older_than;   /* seconds: remove the images last used longer ago; < 0: no limit */
  int64_t max_size;     /* bytes: then remove the least recently used images until the
                           cache's total is at most this; < 0: no limit */
  int all;              /* remove every image */
};
#define FPULL_CACHE_PRUNE_OPTS_INIT                                                                \
  {                                                                                                \
    .version = FPULL_CACHE_PRUNE_OPTS_VERSION, .older_than = -1, .max_size = -1, .all = 0          \
  }
struct fpull_cache_prune_result {
  char **removed;         /* references of the images removed, NULL-terminated */
  char **in_use;          /* images that would have gone but a running pull uses them */
  uint64_t blobs_removed; /* blobs and unfinished downloads */
  uint64_t bytes_freed;
  uint64_t size; /* the cache's total afterwards */
};
/* Prunes the cache at dir: always the blobs no image needs and the unfinished downloads
 * nobody is writing; then the images o asks for (older_than, then max_size, least recently
 * used first; all: every one). An image a pull or prefetch is using now, and every blob a
 * running pull uses or writes, is kept (and named in in_use); so is a blob another image
 * needs. The caller must own the cache (FPULL_EFAIL otherwise: a shared cache is its
 * owner's); no cache at dir is nothing to do. Bad opts: FPULL_EUSAGE. Caller frees *out. */
FPULL_API int fpull_cache_prune(struct fpull_cache_prune_result **out, const char *dir,
                                const struct fpull_cache_prune_opts *o, fpull_err *err);
/* Removes one image: every image whose reference is image's normalised form (a reference
 * with a digest also matches the images of that repository with that digest), with the
 * blobs no other image needs. FPULL_ENOTFOUND when none is in the cache, FPULL_EFAIL when
 * a pull of it is running (nothing removed), FPULL_EUSAGE for a bad reference. */
FPULL_API int fpull_cache_rm(struct fpull_cache_prune_result **out, const char *dir,
                             const char *image, fpull_err *err);
FPULL_API void fpull_cache_prune_result_free(struct fpull_cache_prune_result *r);

/* "10G", "500M", "1.5T", "0" (K, M, G, T, P: powers of 1024, with or without "B" or "iB",
 * any case) into bytes; "7d", "12h", "30m", "45s", "2w" into seconds. Anything else is
 * FPULL_EUSAGE with what was expected and, where it is clear, what was meant. */
FPULL_API int fpull_cache_parse_size(int64_t *out, const char *text, fpull_err *err);
FPULL_API int fpull_cache_parse_duration(int64_t *out, const char *text, fpull_err *err);

#endif
