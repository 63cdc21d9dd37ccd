/* Housekeeping's view of a cache (see cache_scan.h). Everything below the root goes
 * through directory descriptors opened with O_NOFOLLOW; nothing is followed, nothing that
 * is not a regular file is read, and removals take the locks pulls take: the blob's pin
 * (cache_use.c) and its download lock (cache_lock.c), both without waiting. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_internal.h"
#include "cache_lock.h"
#include "cache_scan.h"
#include "cache_trust.h"
#include "cache_use.h"
#include "cache_verified.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"
#include "base/util.h"

#define FP_STAMP_MAX 2048

static int subdir(int parent, const char *name)
{
  return parent < 0 ? -1 : openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int fp_cache_admin_open(fpull_cache **out, const char *dir, int write, fpull_err *err)
{
  *out = NULL;
  if (!dir || !*dir)
    return fpull_err_set(err, FPULL_EFAIL,
                         "no cache directory: none given, and no $FPULL_CACHE, "
                         "$XDG_CACHE_HOME or home directory to put one in");
  int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0 && errno == ENOENT)
    return fpull_err_set(err, FPULL_ENOTFOUND, "cache %s: no such directory", dir);
  if (root < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: %s", dir, strerror(errno));
  fpull_cache *c = fp_xcalloc(1, sizeof *c);
  c->root_fd = root;
  c->blobs_fd = c->blobs512_fd = c->tags_fd = c->tmp_fd = c->priv_fd = c->locks_fd = -1;
  c->dir = fp_xstrdup(dir);
  c->readonly = !write;
  struct stat st;
  if (fstat(root, &st) < 0) {
    fpull_cache_free(c);
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: %s", dir, strerror(errno));
  }
  /* A shared cache is its owner's to keep: other users only read it (contract). */
  if (write && st.st_uid != geteuid()) {
    fpull_cache_free(c);
    return fpull_err_set(err, FPULL_EFAIL,
                         "cache %s belongs to uid %u, not to you (uid %u): only its owner "
                         "removes anything from it (a shared cache is read-only to its users)",
                         dir, (unsigned)st.st_uid, (unsigned)geteuid());
  }
  if (write && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    fpull_cache_free(c);
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: writable by every user; refusing to use it",
                         dir);
  }
  int blobs = subdir(root, "blobs");
  c->blobs_fd = subdir(blobs, "sha256");
  c->blobs512_fd = subdir(blobs, "sha512");
  if (blobs >= 0)
    close(blobs);
  c->tags_fd = subdir(root, "tags");
  c->tmp_fd = subdir(root, "tmp");
  c->locks_fd = subdir(root, "locks");
  fp_cache_pins_open(c);
  *out = c;
  return 0;
}

/* A directory stream over dirfd from its start (a dup shares the offset of dirfd, which an
 * earlier scan left at the end). NULL when dirfd is -1 or on failure. */
static DIR *dir_stream(int dirfd)
{
  int fd = dirfd >= 0 ? fcntl(dirfd, F_DUPFD_CLOEXEC, 0) : -1;
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0)
    close(fd);
  if (d)
    rewinddir(d);
  return d;
}

static int valid_hex(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

/* Reads a small regular file dirfd/name (no symlink, no FIFO); NUL-terminated. */
static char *read_small(int dirfd, const char *name, size_t max, struct stat *st)
{
  cleanup_close int fd = fp_trust_open_file(dirfd, name, O_RDONLY, 0, st);
  if (fd < 0 || (uint64_t)st->st_size > max)
    return NULL;
  char *buf = fp_xmalloc((size_t)st->st_size + 1);
  ssize_t n = pread(fd, buf, (size_t)st->st_size, 0);
  if (n != (ssize_t)st->st_size) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}

/* 1 when name is the file name fpull gives reference (SHA256(REFERENCE), hex). */
static int name_matches(const char *name, const char *reference)
{
  cleanup_free char *d = fpull_digest_of(reference, strlen(reference));
  return d && strncmp(d + 7, name, 64) == 0;
}

static void add_root(struct fp_cache_root **v, size_t *n, char *reference, char *digest,
                     int64_t when)
{
  *v = fp_xrealloc(*v, (*n + 1) * sizeof **v);
  (*v)[(*n)++] = (struct fp_cache_root){reference, digest, when};
}

/* A tag record's name: HEX.json (before records were per writer) or HEX.uUID.json. */
static int record_name_ok(const char *name)
{
  size_t n = strlen(name);
  if (n < 69 || !valid_hex(name, 64) || strcmp(name + n - 5, ".json") != 0)
    return 0;
  if (n == 69)
    return 1;
  if (name[64] != '.' || name[65] != 'u' || n == 71)
    return 0;
  for (size_t i = 66; i < n - 5; i++)
    if (name[i] < '0' || name[i] > '9')
      return 0;
  return 1;
}

/* The record's reference and digest, when name is a record of a reference it matches. */
static int read_record(fpull_cache *c, const char *name, char **ref, char **digest, struct stat *st)
{
  cleanup_free char *text = read_small(c->tags_fd, name, FP_TAG_RECORD_MAX, st);
  if (!text || fp_tag_record_parse(text, strlen(text), ref, digest, NULL) != 0)
    return -1;
  if (name_matches(name, *ref))
    return 0;
  free(*ref);
  free(*digest);
  *ref = *digest = NULL;
  return -1;
}

/* Every writer's record is a root (each keeps its image's blobs); the records of one
 * reference that name one digest are one image, last used when the newest was written. */
static void scan_tags(fpull_cache *c, struct fp_cache_root **v, size_t *n)
{
  DIR *d = dir_stream(c->tags_fd);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char *ref, *digest;
    struct stat st;
    if (!record_name_ok(e->d_name) || read_record(c, e->d_name, &ref, &digest, &st) != 0)
      continue;
    size_t i = 0;
    while (i < *n && (strcmp((*v)[i].reference, ref) != 0 || strcmp((*v)[i].digest, digest) != 0))
      i++;
    if (i == *n) {
      add_root(v, n, ref, digest, st.st_mtime);
      continue;
    }
    if ((*v)[i].last_use < st.st_mtime)
      (*v)[i].last_use = st.st_mtime;
    free(ref);
    free(digest);
  }
  if (d)
    closedir(d);
}

/* Stamps: the last use of a tag record's reference, or an image pulled by digest. */
static void scan_stamps(fpull_cache *c, struct fp_cache_root **v, size_t *n)
{
  DIR *d = dir_stream(fp_cache_used_fd(c));
  size_t tags = *n;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strlen(e->d_name) != 64 || !valid_hex(e->d_name, 64))
      continue;
    struct stat st;
    cleanup_free char *ref = read_small(fp_cache_used_fd(c), e->d_name, FP_STAMP_MAX, &st);
    if (!ref || !*ref || !name_matches(e->d_name, ref))
      continue;
    const char *at = strrchr(ref, '@');
    if (at && fpull_digest_valid(at + 1)) {
      add_root(v, n, fp_xstrdup(ref), fp_xstrdup(at + 1), st.st_mtime);
      continue;
    }
    for (size_t i = 0; i < tags; i++)
      if (strcmp((*v)[i].reference, ref) == 0 && (*v)[i].last_use < st.st_mtime)
        (*v)[i].last_use = st.st_mtime;
  }
  if (d)
    closedir(d);
}

void fp_cache_scan_roots(fpull_cache *c, struct fp_cache_root **out, size_t *n)
{
  *out = NULL;
  *n = 0;
  scan_tags(c, out, n);
  scan_stamps(c, out, n);
}

void fp_cache_roots_free(struct fp_cache_root *r, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    free(r[i].reference);
    free(r[i].digest);
  }
  free(r);
}

static int blob_cmp(const void *a, const void *b)
{
  return strcmp(((const struct fp_cache_blob *)a)->digest,
                ((const struct fp_cache_blob *)b)->digest);
}

/* Appends the verified blobs of one algorithm's directory (hex: the length of its names). */
static void scan_blob_dir(int dirfd, const char *algo, size_t hex, struct fp_cache_blob **out,
                          size_t *n, size_t *cap)
{
  DIR *d = dir_stream(dirfd);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    struct stat st;
    if (strlen(e->d_name) != hex || !valid_hex(e->d_name, hex) ||
        fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
      continue;
    if (*n == *cap) {
      *cap = *cap ? *cap * 2 : 64;
      *out = fp_xrealloc(*out, *cap * sizeof **out);
    }
    snprintf((*out)[*n].digest, sizeof(*out)[*n].digest, "%s:%.*s", algo, (int)hex, e->d_name);
    (*out)[(*n)++].size = (uint64_t)st.st_size;
  }
  if (d)
    closedir(d);
}

void fp_cache_scan_blobs(fpull_cache *c, struct fp_cache_blob **out, size_t *n)
{
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  scan_blob_dir(c->blobs_fd, "sha256", 64, out, n, &cap);
  scan_blob_dir(c->blobs512_fd, "sha512", 128, out, n, &cap);
  if (*n)
    qsort(*out, *n, sizeof **out, blob_cmp);
}

/* Calls fn for each regular file of dirfd (not following anything). */
static void each_file(int dirfd,
                      void (*fn)(int dirfd, const char *name, const struct stat *st, void *ud),
                      void *ud)
{
  DIR *d = dir_stream(dirfd);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    struct stat st;
    if (e->d_name[0] == '.' || fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode))
      continue;
    fn(dirfd, e->d_name, &st, ud);
  }
  if (d)
    closedir(d);
}

struct tally {
  uint64_t bytes, count;
  fpull_cache *c; /* for removals */
};

static void count_file(int dirfd, const char *name, const struct stat *st, void *ud)
{
  (void)dirfd;
  (void)name;
  struct tally *t = ud;
  t->bytes += (uint64_t)st->st_size;
  t->count++;
}

/* Calls fn for each file in each user's directory under tmp/ that the caller can open. */
static void each_tmp_file(fpull_cache *c,
                          void (*fn)(int, const char *, const struct stat *, void *), void *ud)
{
  DIR *d = dir_stream(c->tmp_fd);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    cleanup_close int sub = subdir(c->tmp_fd, e->d_name);
    if (sub >= 0)
      each_file(sub, fn, ud);
  }
  if (d)
    closedir(d);
}

void fp_cache_scan_partials(fpull_cache *c, uint64_t *bytes, uint64_t *count)
{
  struct tally t = {0};
  each_tmp_file(c, count_file, &t);
  *bytes = t.bytes;
  *count = t.count;
}

void fp_cache_scan_records(fpull_cache *c, uint64_t *bytes, uint64_t *count)
{
  struct tally t = {0};
  each_file(c->tags_fd, count_file, &t);
  each_file(fp_cache_used_fd(c), count_file, &t);
  *bytes = t.bytes;
  *count = t.count;
}

int fp_cache_remove_blob(fpull_cache *c, const char *digest)
{
  int dirfd = fp_cache_blobs_fd(c, digest);
  if (c->readonly || dirfd < 0 || !fpull_digest_valid(digest)) {
    errno = EPERM;
    return -1;
  }
  /* Without a pins file (used/ missing or not a directory) no pull can pin either. */
  int r = fp_cache_pin_hold(c, digest);
  if (r == 1)
    return 1;
  /* A writer holds the download lock from before it looks until the blob is in place. */
  char lock[160];
  snprintf(lock, sizeof lock, "%s.lock", fp_digest_hex(digest));
  int lfd = -1;
  r = c->locks_fd < 0 ? 0 : fp_lock_take(c->locks_fd, lock, 0600, 0, &lfd);
  if (r == 0) {
    r = fp_cache_remove_if_same(dirfd, fp_digest_hex(digest), NULL) < 0 && errno != ENOENT ? -1 : 0;
    int e = errno;
    if (r == 0)
      fp_verified_remove(c, digest);
    fp_lock_drop(c->locks_fd, lock, lfd);
    errno = e;
  }
  fp_cache_pin_release(c, digest);
  return r;
}

void fp_cache_remove_root(fpull_cache *c, const struct fp_cache_root *r)
{
  if (c->readonly)
    return;
  cleanup_free char *d = fpull_digest_of(r->reference, strlen(r->reference));
  if (!d)
    return;
  /* Every writer's record of the reference that still names r's digest: a pull may have
   * recorded another digest for the tag since the scan, and that one stays (with the
   * stamp, which is the tag's). */
  int kept = 0;
  DIR *dir = c->tags_fd >= 0 ? dir_stream(c->tags_fd) : NULL;
  struct dirent *e;
  while (dir && (e = readdir(dir))) {
    cleanup_free char *ref = NULL, *digest = NULL;
    struct stat st;
    if (!record_name_ok(e->d_name) || strncmp(e->d_name, d + 7, 64) != 0 ||
        read_record(c, e->d_name, &ref, &digest, &st) != 0 || strcmp(ref, r->reference) != 0)
      continue;
    if (strcmp(digest, r->digest) == 0)
      fp_cache_remove_if_same(c->tags_fd, e->d_name, &st);
    else
      kept = 1;
  }
  if (dir)
    closedir(dir);
  if (kept)
    return;
  if (fp_cache_used_fd(c) >= 0)
    fp_cache_remove_if_same(fp_cache_used_fd(c), d + 7, NULL);
}

static void remove_partial(int dirfd, const char *name, const struct stat *st, void *ud)
{
  struct tally *t = ud;
  size_t n = strlen(name);
  /* HEX.partial: only while nobody holds its download lock. Other files there are a
   * pull's temporary records and copies: left to their owner's clean-up. */
  size_t hex = n - strlen(".partial"); /* 64: sha256, 128: sha512 */
  if ((n != 72 && n != 136) || strcmp(name + hex, ".partial") != 0 || !valid_hex(name, hex) ||
      t->c->locks_fd < 0)
    return;
  char lock[160];
  snprintf(lock, sizeof lock, "%.*s.lock", (int)hex, name);
  int lfd = -1;
  if (fp_lock_take(t->c->locks_fd, lock, 0600, 0, &lfd) != 0)
    return;
  if (fp_cache_remove_if_same(dirfd, name, st) == 0) {
    count_file(dirfd, name, st, t);
  }
  fp_lock_drop(t->c->locks_fd, lock, lfd);
}

void fp_cache_remove_partials(fpull_cache *c, uint64_t *bytes, uint64_t *count)
{
  struct tally t = {.c = c};
  if (!c->readonly)
    each_tmp_file(c, remove_partial, &t);
  *bytes = t.bytes;
  *count = t.count;
}
