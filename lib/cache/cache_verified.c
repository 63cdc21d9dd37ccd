/* Verified records (see cache_verified.h): CACHE/tmp/uUID/verified/HEX, one line
 * "DIGEST DEV INO SIZE CTIME_SEC CTIME_NSEC DIFFID" (DIFFID "-" while unknown). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache_internal.h"
#include "cache_trust.h"
#include "cache_verified.h"
#include "fpull/ref.h"
#include "base/util.h"

#define VERIFIED_DIR "verified"
#define VERIFIED_SHARED_DIR "verified-shared"
/* A record of a shared cache's blob older than this is removed when the own cache is next
 * opened (which shared caches a later run searches is not known then): the blob is hashed
 * once more and recorded again. */
#define SHARED_RECORD_DAYS 7
#define RECORD_MAX 512
/* A temporary record older than this belongs to a killed run. */
#define TMP_STALE_SECONDS 3600

struct record {
  char digest[FP_DIGEST_MAX];
  char diff_id[FP_DIGEST_MAX]; /* "" while unknown */
  unsigned long long dev, ino;
  long long size, csec, cnsec;
};

/* fd, when it is a directory of the caller's that no one else may use; else closed, -1. */
static int private_or_close(int fd)
{
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077))) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The caller's verified/ under its private directory, when that is the caller's alone
 * (create: made when missing); for a shared cache, verified-shared/ in the private
 * directory of the own cache that searches it. -1 when there is none. */
static int verified_dir(const struct fpull_cache *c, int create)
{
  const char *name_in = c->readonly ? VERIFIED_SHARED_DIR : VERIFIED_DIR;
  if (c->readonly && c->priv_fd < 0)
    return -1;
  int base = c->priv_fd;
  int own = -1;
  if (base < 0 && c->tmp_fd >= 0) { /* housekeeping opens no private directory */
    char name[32];
    snprintf(name, sizeof name, "u%u", (unsigned)geteuid());
    own =
        private_or_close(openat(c->tmp_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    base = own;
  }
  if (base < 0)
    return -1;
  if (create && mkdirat(base, name_in, 0700) < 0 && errno != EEXIST) {
    if (own >= 0)
      close(own);
    return -1;
  }
  int fd = openat(base, name_in, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (own >= 0)
    close(own);
  return private_or_close(fd);
}

static void identity(struct record *r, const char *digest, const struct stat *st)
{
  memset(r, 0, sizeof *r);
  snprintf(r->digest, sizeof r->digest, "%s", digest);
  r->dev = (unsigned long long)st->st_dev;
  r->ino = (unsigned long long)st->st_ino;
  r->size = (long long)st->st_size;
  r->csec = (long long)st->st_ctim.tv_sec;
  r->cnsec = (long long)st->st_ctim.tv_nsec;
}

static int same_identity(const struct record *a, const struct record *b)
{
  return strcmp(a->digest, b->digest) == 0 && a->dev == b->dev && a->ino == b->ino &&
         a->size == b->size && a->csec == b->csec && a->cnsec == b->cnsec;
}

/* Reads the record of digest: 0, or -1 when there is none the caller may trust (not a
 * regular file of the caller's alone with one link, or not a well-formed record). */
static int read_record(int dir, const char *digest, struct record *r)
{
  struct stat st;
  cleanup_close int fd = fp_trust_open_file(dir, fp_digest_hex(digest), O_RDONLY, 0, &st);
  if (fd < 0 || !fp_trust_file_is_safe(&st) || st.st_uid != geteuid() || st.st_size >= RECORD_MAX)
    return -1;
  char buf[RECORD_MAX];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  char d[FP_DIGEST_MAX], diff[FP_DIGEST_MAX];
  int used = 0;
  memset(r, 0, sizeof *r);
  if (sscanf(buf, "%135s %llu %llu %lld %lld %lld %135s\n%n", d, &r->dev, &r->ino, &r->size,
             &r->csec, &r->cnsec, diff, &used) != 7 ||
      used != n || strcmp(d, digest) != 0)
    return -1;
  snprintf(r->digest, sizeof r->digest, "%s", d);
  if (strcmp(diff, "-") != 0) {
    if (!fpull_digest_valid(diff))
      return -1;
    snprintf(r->diff_id, sizeof r->diff_id, "%s", diff);
  }
  return 0;
}

static void write_record(int dir, const struct record *r)
{
  char name[64];
  struct stat st;
  int fd = fp_trust_create_random(dir, "tmp", 0600, name, sizeof name, &st);
  if (fd < 0)
    return;
  char buf[RECORD_MAX];
  int len = snprintf(buf, sizeof buf, "%s %llu %llu %lld %lld %lld %s\n", r->digest, r->dev, r->ino,
                     r->size, r->csec, r->cnsec, r->diff_id[0] ? r->diff_id : "-");
  int ok = len > 0 && len < (int)sizeof buf && write(fd, buf, (size_t)len) == len;
  close(fd);
  if (!ok || renameat(dir, name, dir, fp_digest_hex(r->digest)) < 0)
    unlinkat(dir, name, 0);
}

/* The blob is ours to vouch for: only its owner (us) or root can write it. A shared
 * cache's blob qualifies the same way (a site's cache filled by root's prefetch): its
 * record is kept in our own cache's private directory, where nobody else writes. */
static int blob_trustable(const struct fpull_cache *c, const char *digest, const struct stat *st)
{
  return (!c->readonly || c->priv_fd >= 0) && fpull_digest_valid(digest) &&
         fp_trust_file_is_safe(st);
}

void fp_verified_distrust(struct fpull_cache *c)
{
  if (!c)
    return;
  c->no_records = 1;
  for (size_t i = 0; i < c->n_shared; i++)
    c->shared[i]->no_records = 1;
}

int fp_verified_blob_ok(const struct fpull_cache *c, const char *digest, const struct stat *st)
{
  if (c->no_records || !blob_trustable(c, digest, st))
    return 0;
  cleanup_close int dir = verified_dir(c, 0);
  struct record have, now;
  if (dir < 0 || read_record(dir, digest, &have) < 0)
    return 0;
  identity(&now, digest, st);
  return same_identity(&have, &now);
}

void fp_verified_note_blob(const struct fpull_cache *c, const char *digest, const struct stat *st)
{
  if (!blob_trustable(c, digest, st))
    return;
  cleanup_close int dir = verified_dir(c, 1);
  if (dir < 0)
    return;
  struct record r;
  identity(&r, digest, st);
  write_record(dir, &r);
}

/* The record of digest when fd is the file it names, and that file is the blob in c's own
 * blobs/ (not a shared cache's, nor a private copy of one). */
static int matching_record(const struct fpull_cache *c, const char *digest, int fd, int *dir,
                           struct record *r)
{
  struct stat st, named;
  struct record now;
  *dir = -1;
  int blobs = fpull_digest_valid(digest) ? fp_cache_blobs_fd(c, digest) : -1;
  if (fd < 0 || blobs < 0 || fstat(fd, &st) < 0 || !blob_trustable(c, digest, &st) ||
      fstatat(blobs, fp_digest_hex(digest), &named, AT_SYMLINK_NOFOLLOW) < 0 ||
      named.st_dev != st.st_dev || named.st_ino != st.st_ino)
    return -1;
  *dir = verified_dir(c, 0);
  if (*dir < 0 || read_record(*dir, digest, r) < 0)
    return -1;
  identity(&now, digest, &st);
  return same_identity(r, &now) ? 0 : -1;
}

int fp_verified_diff_id(const struct fpull_cache *c, const char *digest, int fd,
                        char out[FP_DIGEST_MAX])
{
  struct record r;
  cleanup_close int dir = -1;
  if (!c || c->no_records || matching_record(c, digest, fd, &dir, &r) < 0 || !r.diff_id[0])
    return 0;
  memcpy(out, r.diff_id, FP_DIGEST_MAX);
  return 1;
}

void fp_verified_note_diff_id(const struct fpull_cache *c, const char *digest, int fd,
                              const char *diff_id)
{
  struct record r;
  cleanup_close int dir = -1;
  if (!diff_id || !fpull_digest_valid(diff_id) || strlen(diff_id) >= FP_DIGEST_MAX ||
      matching_record(c, digest, fd, &dir, &r) < 0 || strcmp(r.diff_id, diff_id) == 0)
    return;
  snprintf(r.diff_id, sizeof r.diff_id, "%s", diff_id);
  write_record(dir, &r);
}

void fp_verified_remove(const struct fpull_cache *c, const char *digest)
{
  cleanup_close int dir = verified_dir(c, 0);
  if (dir >= 0 && fpull_digest_valid(digest))
    fp_cache_remove_if_same(dir, fp_digest_hex(digest), NULL);
}

/* Removes from dir what is not a regular file or was last written before stale; with own,
 * a record named by a digest's hex stays while own still has that blob, whatever its age
 * (verified/), and goes once the blob is gone. */
static void sweep(int dir, const struct fpull_cache *own, time_t stale)
{
  int fd = dir >= 0 ? fcntl(dir, F_DUPFD_CLOEXEC, 0) : -1;
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0)
    close(fd);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    const char *name = e->d_name;
    if (name[0] == '.')
      continue;
    size_t n = strlen(name);
    struct stat st;
    if (own && (n == 64 || n == 128)) {
      int blobs = n == 64 ? own->blobs_fd : own->blobs512_fd;
      if (blobs >= 0 && fstatat(blobs, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
        unlinkat(dir, name, 0);
    } else if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               (!S_ISREG(st.st_mode) || st.st_mtime < stale)) {
      unlinkat(dir, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0);
    }
  }
  if (d)
    closedir(d);
}

void fp_verified_clean(const struct fpull_cache *c)
{
  time_t now = time(NULL);
  cleanup_close int dir = verified_dir(c, 0);
  sweep(dir, c, now - TMP_STALE_SECONDS);
  /* verified-shared/: by age alone (SHARED_RECORD_DAYS says why). */
  if (c->readonly || c->priv_fd < 0)
    return;
  cleanup_close int shared = private_or_close(
      openat(c->priv_fd, VERIFIED_SHARED_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  sweep(shared, NULL, now - (time_t)SHARED_RECORD_DAYS * 24 * 3600);
}
