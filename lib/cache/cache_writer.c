/* Writing one blob into the cache: lock, resume, verify while streaming, rename. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "cache_lock.h"
#include "cache_trust.h"
#include "cache_verified.h"
#include "base/digest.h"
#include "fpull/cache.h"
#include "fpull/ref.h"
#include "fpull/registry.h"
#include "base/util.h"

struct fpull_cache_writer {
  fpull_cache *c;
  char digest[FP_DIGEST_MAX];
  char partial[224]; /* HEX.partial in tmp/uUID/, or a spare's name there */
  char lock[160];    /* HEX.lock in locks/ */
  uint64_t size;
  uint64_t offset; /* bytes in the partial file, all hashed into sha */
  int fd;
  int lock_fd;
  int spare; /* no lock had: a partial of this writer's own, never resumed, removed unless
                committed */
  struct fp_sha256 sha;
  struct fpull_blob_sink sink;
};

static void writer_free(struct fpull_cache_writer *w)
{
  if (!w)
    return;
  if (w->fd >= 0)
    close(w->fd);
  if (w->spare && w->c->priv_fd >= 0)
    unlinkat(w->c->priv_fd, w->partial, 0);
  fp_lock_drop(w->c->locks_fd, w->lock, w->lock_fd);
  fp_sha256_free(&w->sha);
  free(w);
}

static void writer_freep(struct fpull_cache_writer **w)
{
  writer_free(*w);
}

static int io_error(struct fpull_cache_writer *w, const char *what, fpull_err *err)
{
  return fpull_err_set(err, FPULL_EFAIL, "cache %s: blob %s: %s: %s", w->c->dir, w->digest, what,
                       strerror(errno));
}

static int sink_write(void *ud, const void *data, size_t len, fpull_err *err)
{
  struct fpull_cache_writer *w = ud;
  /* Stop a lying or endless server at the declared size instead of filling the disk. */
  if (len > w->size - w->offset)
    return fpull_err_set(err, FPULL_EINTEGRITY, "blob %s: more data than its declared size %llu",
                         w->digest, (unsigned long long)w->size);
  const char *p = data;
  size_t left = len;
  uint64_t at = w->offset;
  while (left) {
    ssize_t n = pwrite(w->fd, p, left, (off_t)at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      /* A full disk keeps no partial download: it would hold the file system at 100% until
       * a later pull resumed it, and the space is what the user needs first. */
      if (errno == ENOSPC || errno == EDQUOT)
        w->spare = 1;
      return io_error(w, "write", err);
    }
    p += n;
    left -= (size_t)n;
    at += (uint64_t)n;
  }
  if (fp_sha256_update(&w->sha, data, len) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "blob %s: sha256 failed", w->digest);
  w->offset += len;
  fp_lock_touch(w->lock_fd);
  return 0;
}

/* Keeps the first offset bytes and the hash state over exactly them. A file already that
 * long is not truncated: on ext4, truncating an empty file marks it to have all its data
 * flushed when it is closed (auto_da_alloc), which cost every pull 10-25 ms per big layer
 * in close(2). */
static int truncate_to(struct fpull_cache_writer *w, uint64_t offset, fpull_err *err)
{
  struct stat st;
  if (fstat(w->fd, &st) < 0)
    return io_error(w, "stat", err);
  if ((uint64_t)st.st_size != offset && ftruncate(w->fd, (off_t)offset) < 0)
    return io_error(w, "truncate", err);
  if (fp_sha256_fd(&w->sha, w->fd, offset) < 0)
    return io_error(w, "re-hash", err);
  w->offset = offset;
  return 0;
}

static int sink_restart(void *ud, uint64_t offset, fpull_err *err)
{
  struct fpull_cache_writer *w = ud;
  if (offset == w->offset)
    return 0;
  if (offset > w->offset)
    return fpull_err_set(err, FPULL_EFAIL, "blob %s: cannot resume at byte %llu, only %llu stored",
                         w->digest, (unsigned long long)offset, (unsigned long long)w->offset);
  return truncate_to(w, offset, err);
}

/* Size and sha256 checked, then renamed into blobs/. 0, or an error with the partial left
 * for the caller to remove. */
static int finish(struct fpull_cache_writer *w, fpull_err *err)
{
  if (w->offset != w->size)
    return fpull_err_set(err, FPULL_EINTEGRITY, "blob %s: size mismatch: expected %llu, got %llu",
                         w->digest, (unsigned long long)w->size, (unsigned long long)w->offset);
  char got[FP_DIGEST_MAX];
  int r = fp_hash_final(&w->sha, got);
  /* The context is spent either way; keep it usable for a restart. */
  fp_sha256_reset(&w->sha);
  if (r < 0)
    return fpull_err_set(err, FPULL_EFAIL, "blob %s: sha256 failed", w->digest);
  if (strcmp(got, w->digest) != 0) {
    w->offset = 0;
    return fpull_err_set(err, FPULL_EINTEGRITY, "blob %s: digest mismatch: expected %s, got %s",
                         w->digest, w->digest, got);
  }
  /* Readers may be other users of a shared cache; the cache root guards privacy. */
  if (fchmod(w->fd, 0644) < 0)
    return io_error(w, "chmod", err);
  if (renameat(w->c->priv_fd, w->partial, fp_cache_blobs_fd(w->c, w->digest),
               fp_digest_hex(w->digest)) < 0) {
    /* Another user's copy got there while we downloaded ours (after a bounded wait) and a
     * sticky blobs/ keeps it: ours, verified, serves this pull and goes. */
    if ((errno == EPERM || errno == EACCES) &&
        fpull_cache_has_blob(w->c, w->digest, (int64_t)w->size)) {
      unlinkat(w->c->priv_fd, w->partial, 0);
      return 0;
    }
    return io_error(w, "rename into blobs/", err);
  }
  /* Hashed on the way in, in our private directory: recorded as it is now in blobs/ (the
   * rename changed its ctime), so that the next pull need not hash it again. */
  struct stat st;
  if (fstat(w->fd, &st) == 0)
    fp_verified_note_blob(w->c, w->digest, &st);
  return 0;
}

/* Opens our HEX.partial (in our private directory: see cache_trust.h), or a new one when
 * what is there is not a file of ours with one link: it is never written through a symlink,
 * a FIFO or a hardlink to something else. */
static int open_partial(struct fpull_cache_writer *w, fpull_err *err)
{
  int dir = w->c->priv_fd;
  if (dir < 0)
    return fpull_err_set(err, FPULL_EFAIL,
                         "cache %s: no private working directory in tmp/ (read-only cache, or "
                         "tmp/u%u is not ours alone)",
                         w->c->dir, (unsigned)geteuid());
  struct stat st;
  if (w->spare) {
    char prefix[sizeof w->partial];
    snprintf(prefix, sizeof prefix, "%s", w->partial);
    w->fd = fp_trust_create_random(dir, prefix, 0600, w->partial, sizeof w->partial, &st);
    return w->fd < 0 ? io_error(w, "create partial download", err) : 0;
  }
  w->fd = fp_trust_open_file(dir, w->partial, O_RDWR, 0, &st);
  if (w->fd >= 0 && fp_trust_file_is_safe(&st))
    return 0;
  if (w->fd >= 0) {
    char why[64];
    fp_warn("cache %s: partial download %s is %s; starting it over", w->c->dir, w->partial,
            fp_trust_file_why(&st, why, sizeof why));
    close(w->fd);
    w->fd = -1;
  } else if (errno != ENOENT && errno != ELOOP && errno != EINVAL) {
    return io_error(w, "open partial download", err);
  }
  if (fp_cache_remove_if_same(dir, w->partial, NULL) < 0 && errno != ENOENT)
    return io_error(w, "remove a bad partial download", err);
  w->fd = fp_trust_open_file(dir, w->partial, O_RDWR | O_CREAT | O_EXCL, 0600, &st);
  if (w->fd < 0)
    return io_error(w, "create partial download", err);
  return 0;
}

/* $FPULL_LOCK_WAIT, else 60 s (man fpull, ENVIRONMENT). */
static double lock_wait(void)
{
  const char *e = getenv("FPULL_LOCK_WAIT");
  char *end = NULL;
  double v = e && *e ? strtod(e, &end) : -1;
  return end && !*end && v >= 0 && v <= 86400 ? v : 60;
}

int fpull_cache_writer_begin(struct fpull_cache_writer **out, int *done, fpull_cache *c,
                             const char *digest, int64_t size, fpull_err *err)
{
  *out = NULL;
  *done = 0;
  if (!fpull_digest_valid(digest))
    return fpull_err_set(err, FPULL_EINTEGRITY, "cache: invalid digest");
  if (size < 0)
    return fpull_err_set(err, FPULL_EINTEGRITY, "cache: blob %s: negative size", digest);
  if (fpull_cache_has_blob(c, digest, size)) {
    *done = 1;
    return 0;
  }
  if (fp_cache_blobs_fd(c, digest) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: no blobs/%.6s directory for %s", c->dir,
                         digest, digest);
  __attribute__((cleanup(writer_freep))) struct fpull_cache_writer *w = fp_xcalloc(1, sizeof *w);
  w->c = c;
  w->fd = w->lock_fd = -1;
  w->size = (uint64_t)size;
  snprintf(w->digest, sizeof w->digest, "%s", digest);
  snprintf(w->partial, sizeof w->partial, "%s.partial", fp_digest_hex(digest));
  snprintf(w->lock, sizeof w->lock, "%s.lock", fp_digest_hex(digest));
  if (fp_hash_init(&w->sha, digest) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache: sha256 unavailable");
  w->sink = (struct fpull_blob_sink){.ud = w, .write = sink_write, .restart = sink_restart};

  /* Waits while another process or thread downloads this blob, but not for ever: after
   * lock_wait() seconds without progress, or when the lock file is not ours to open, the
   * blob is fetched into a spare partial of our own (whoever holds a lock cannot stop us). */
  struct stat st;
  mode_t mode = fstat(c->locks_fd, &st) == 0 && (st.st_mode & S_IWGRP) ? 0660 : 0600;
  int held = fp_lock_take(c->locks_fd, w->lock, mode, lock_wait(), &w->lock_fd);
  if (held < 0) {
    w->lock_fd = -1;
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: lock for %s: %s", c->dir, digest,
                         strerror(errno));
  }
  if (held) {
    w->lock_fd = -1;
    w->spare = 1;
    if (errno != EAGAIN)
      fp_debug("cache %s: the lock file for %s cannot be ours (%s); downloading it separately",
               c->dir, digest, strerror(errno));
    else
      fp_warn("cache %s: another process's download of %s made no progress for %g s "
              "(FPULL_LOCK_WAIT) or took ten times as long; downloading it separately",
              c->dir, digest, lock_wait());
  }
  if (fpull_cache_has_blob(c, digest, size)) {
    *done = 1;
    return 0;
  }
  /* A wrong-sized or non-regular entry cannot be right: clear the name for the rename (only
   * such a one: without the lock, a good copy may have been renamed in since). */
  int bfd = fp_cache_blobs_fd(c, digest);
  if (fstatat(bfd, fp_digest_hex(digest), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      (!S_ISREG(st.st_mode) || st.st_size != size))
    fp_cache_remove_if_same(bfd, fp_digest_hex(digest), &st);

  int r = open_partial(w, err);
  if (r)
    return r;
  if (fstat(w->fd, &st) < 0)
    return io_error(w, "stat partial download", err);
  /* Resume across runs: what a killed run stored is hashed again, the rest is fetched. */
  uint64_t have = (uint64_t)st.st_size <= w->size ? (uint64_t)st.st_size : 0;
  if ((r = truncate_to(w, have, err)))
    return r;
  if (w->offset == w->size) {
    fpull_err tmp = {0};
    if (finish(w, &tmp) == 0) {
      close(w->fd);
      w->fd = -1;
      *done = 1;
      return 0;
    }
    fp_debug("cache: complete partial download of %s did not verify; starting over", digest);
    if ((r = truncate_to(w, 0, err)))
      return r;
  }
  *out = steal_pointer(&w);
  return 0;
}

uint64_t fpull_cache_writer_offset(const struct fpull_cache_writer *w)
{
  return w ? w->offset : 0;
}

const struct fpull_blob_sink *fpull_cache_writer_sink(struct fpull_cache_writer *w)
{
  return w ? &w->sink : NULL;
}

int fpull_cache_writer_commit_fd(struct fpull_cache_writer *w, int *fd, fpull_err *err)
{
  if (fd)
    *fd = -1;
  if (!w)
    return fpull_err_set(err, FPULL_EFAIL, "cache: commit without a writer");
  int r = finish(w, err);
  if (r)
    unlinkat(w->c->priv_fd, w->partial, 0);
  else if (fd) {
    *fd = fcntl(w->fd, F_DUPFD_CLOEXEC, 0);
    if (*fd < 0 || lseek(*fd, 0, SEEK_SET) < 0) {
      r = io_error(w, "reopen", err);
      if (*fd >= 0)
        close(*fd);
      *fd = -1;
    }
  }
  writer_free(w);
  return r;
}

int fpull_cache_writer_commit(struct fpull_cache_writer *w, fpull_err *err)
{
  return fpull_cache_writer_commit_fd(w, NULL, err);
}

void fpull_cache_writer_abort(struct fpull_cache_writer *w)
{
  writer_free(w);
}
