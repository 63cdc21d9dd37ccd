/* What cache.c and cache_writer.c share. */
#ifndef FP_CACHE_INTERNAL_H
#define FP_CACHE_INTERNAL_H

#include <sys/stat.h>

struct fpull_cache {
  char *dir;
  int root_fd;     /* CACHE */
  int blobs_fd;    /* CACHE/blobs/sha256: verified blobs only */
  int blobs512_fd; /* CACHE/blobs/sha512: the same for sha512 digests */
  int tmp_fd;      /* CACHE/tmp: holds the users' private working directories */
  int priv_fd;     /* CACHE/tmp/uUID, ours alone: HEX.partial downloads, temporary records;
                      -1 when it cannot be had (a cache we may only read) */
  int locks_fd;    /* CACHE/locks: HEX.lock */
  int tags_fd;     /* CACHE/tags: tag -> digest records */
  int readonly;    /* a shared cache: read, never written, nothing removed (-1 fds above) */
  struct fpull_cache **shared; /* read-only caches searched after this one, in order */
  size_t n_shared;
  struct fp_cache_pins *pins; /* cache_use.c: CACHE/used and its pins; NULL until opened */
  int no_records;             /* cache_verified.h: no verified record is trusted (a pull
                                 under a signature policy hashes every blob it uses) */
};

/* The directory of verified blobs for digest's algorithm (-1 when there is none); the file
 * name there is fp_digest_hex(digest). */
int fp_cache_blobs_fd(const struct fpull_cache *c, const char *digest);

/* Removes dirfd/name like fp_cache_remove_if_same, except in a read-only shared cache. */
int fp_cache_drop(const struct fpull_cache *c, int dirfd, const char *name,
                  const struct stat *seen);

/* Unlinks dirfd/name when it is still the file seen (same inode); seen NULL: whatever is
 * there. 0 or -1. */
int fp_cache_remove_if_same(int dirfd, const char *name, const struct stat *seen);

/* A tag record (CACHE/tags/, cache_tags.c): the largest accepted, and its fields. 0 with
 * *reference and *digest (the caller frees them) and *when (0 when absent), -1 when text is
 * not a record (strict JSON; a string reference; a valid digest). */
#define FP_TAG_RECORD_MAX (64 * 1024)
int fp_tag_record_parse(const char *text, size_t len, char **reference, char **digest,
                        double *when);

#endif
