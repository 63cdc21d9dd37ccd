/* The blob cache: CACHE/blobs/sha256/HEX, written as CACHE/tmp/HEX.partial under the lock
 * CACHE/locks/HEX.lock and renamed into place only once size and sha256 match, so nothing
 * torn or unverified is ever under blobs/. Every access below the cache root is relative to
 * directory fds opened with O_NOFOLLOW. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache_internal.h"
#include "cache_lock.h"
#include "cache_trust.h"
#include "cache_use.h"
#include "cache_verified.h"
#include "base/digest.h"
#include "fpull/cache.h"
#include "fpull/config.h"
#include "fpull/manifest.h"
#include "fpull/ref.h"
#include "base/util.h"

/* A partial download untouched for this long belongs to nobody any more. */
#define FP_STALE_SECONDS (24 * 3600)

/* $XDG_CACHE_HOME/fpull, else ~/.cache/fpull; NULL without a home directory. */
static char *default_dir(void)
{
  /* The XDG base directory spec says relative values are to be ignored. */
  const char *xdg = getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/')
    return fp_xasprintf("%s/fpull", xdg);
  const char *home = getenv("HOME");
  if (!home || !*home) {
    struct passwd *pw = getpwuid(getuid());
    home = pw ? pw->pw_dir : NULL;
  }
  if (!home || !*home)
    return NULL;
  return fp_xasprintf("%s/.cache/fpull", home);
}

char *fpull_cache_resolve_dir(const char *cli_dir, const struct fpull_config *config)
{
  if (cli_dir && *cli_dir)
    return fp_xstrdup(cli_dir);
  const char *env = getenv("FPULL_CACHE");
  if (env && *env)
    return fp_xstrdup(env);
  const char *home = getenv("HOME");
  if (config && config->cache_dir && *config->cache_dir) {
    if (strncmp(config->cache_dir, "~/", 2) == 0 && home && *home)
      return fp_xasprintf("%s/%s", home, config->cache_dir + 2);
    return fp_xstrdup(config->cache_dir);
  }
  return default_dir();
}

/* The default cache is the user's own: created private. A cache someone named is meant
 * for whoever they made it for (a prolog's, an admin's): created as the umask says. */
static int is_default_dir(const char *dir)
{
  cleanup_free char *d = default_dir();
  return d && strcmp(d, dir) == 0;
}

/* Whether a directory of the cache's layout may be written into: the caller's or root's;
 * in a cache root others may write (a group's, or a sticky one for everyone), also another
 * user's sticky one (the layout whoever pulled first made: the entries of others there are
 * theirs alone, and every blob is hashed before use). Anyone else's could be read,
 * emptied or closed by its owner: a cache root made by another user first (a squatted
 * shared_cache=DIR/UID) would see every private image its victim pulls. */
static int layout_dir_ok(const struct stat *st, const struct stat *root)
{
  if (st->st_uid == geteuid() || st->st_uid == 0)
    return 1;
  return root && (root->st_mode & (S_IWGRP | S_IWOTH)) && (st->st_mode & S_ISVTX);
}

static int refuse_owner(const char *dir, const char *name, const struct stat *st, fpull_err *err)
{
  return fpull_err_set(err, FPULL_EFAIL,
                       "cache %s: %s is owned by uid %u, neither yours nor root's: refusing to "
                       "write there (its owner could read what you pull, or take it away)",
                       dir, name, (unsigned)st->st_uid);
}

static int make_sticky(int fd, struct stat *st);

/* mode: the cache root's permissions (sticky bit included), so that the layout is as
 * shared as the root; the umask still applies and the kernel passes a setgid bit on. A
 * directory others may write is made sticky (a member's entries are theirs alone), and one
 * another user owns is refused as the root would be (layout_dir_ok). */
static int open_subdir(int *out, int parent, const char *name, mode_t mode, const char *dir,
                       const struct stat *root, fpull_err *err)
{
  if (mode & (S_IWGRP | S_IWOTH))
    mode |= S_ISVTX;
  if (mkdirat(parent, name, mode) < 0 && errno != EEXIST)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: cannot create %s: %s", dir, name,
                         strerror(errno));
  *out = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*out < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: %s: %s", dir, name,
                         errno == ELOOP || errno == ENOTDIR ? "not a directory (symlink?)"
                                                            : strerror(errno));
  struct stat st;
  if (fstat(*out, &st) < 0 || !layout_dir_ok(&st, root)) {
    int r = refuse_owner(dir, name, &st, err);
    close(*out);
    *out = -1;
    return r;
  }
  make_sticky(*out, &st);
  return 0;
}

/* A directory of ours that others may write, without the sticky bit, lets them rename its
 * entries away and back: a tag record of ours (or tags/ itself) could be put back after we
 * replaced it (issue 20.5). The sticky bit leaves them adding entries of their own, which
 * is all a group cache needs. 0, or -1 when it is not ours to change (left as it is). */
static int make_sticky(int fd, struct stat *st)
{
  if (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX) || st->st_uid != geteuid())
    return 0;
  if (fchmod(fd, (st->st_mode & 07777) | S_ISVTX) < 0)
    return -1;
  st->st_mode |= S_ISVTX;
  fp_debug("cache: a directory others may write got the sticky bit (mode %04o)",
           (unsigned)(st->st_mode & 07777));
  return 0;
}

/* The length of the hex part of HEX + a suffix of suffix_len (64: sha256, 128: sha512), 0
 * when name is not such a name. */
static size_t valid_hex_name(const char *name, size_t suffix_len)
{
  size_t n = strlen(name);
  if (n != 64 + suffix_len && n != 128 + suffix_len)
    return 0;
  for (size_t i = 0; i < n - suffix_len; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
      return 0;
  return n - suffix_len;
}

int fp_cache_blobs_fd(const struct fpull_cache *c, const char *digest)
{
  return strncmp(digest, "sha512:", 7) == 0 ? c->blobs512_fd : c->blobs_fd;
}

static int is_stale(int dirfd, const char *name, time_t now)
{
  struct stat st;
  return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         st.st_mtime < now - FP_STALE_SECONDS;
}

/* Removes what killed runs left: partial downloads nobody resumed for a day (a younger one
 * is kept: the next run resumes from it), temporary tag records and orphaned lock files.
 * Failures are harmless and ignored (another user's files in a shared cache). */
static void clean_stale(fpull_cache *c)
{
  time_t now = time(NULL);
  int fd = c->priv_fd >= 0 ? dup(c->priv_fd) : -1;
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0)
    close(fd);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    const char *name = e->d_name;
    if (name[0] == '.' || strcmp(name, "verified") == 0 || strcmp(name, "verified-shared") == 0 ||
        !is_stale(c->priv_fd, name, now))
      continue;
    size_t hex = valid_hex_name(name, strlen(".partial"));
    if (!hex || strcmp(name + hex, ".partial") != 0) {
      unlinkat(c->priv_fd, name, 0);
      continue;
    }
    char lock[160];
    snprintf(lock, sizeof lock, "%.*s.lock", (int)hex, name);
    int lfd;
    if (fp_lock_take(c->locks_fd, lock, 0600, 0, &lfd) != 0)
      continue; /* someone is resuming it right now */
    if (is_stale(c->priv_fd, name, now)) {
      fp_debug("cache: removing stale partial download %s", name);
      unlinkat(c->priv_fd, name, 0);
    }
    fp_lock_drop(c->locks_fd, lock, lfd);
  }
  if (d)
    closedir(d);

  fd = dup(c->locks_fd);
  d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0)
    close(fd);
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.' || !is_stale(c->locks_fd, e->d_name, now))
      continue;
    int lfd;
    if (fp_lock_take(c->locks_fd, e->d_name, 0600, 0, &lfd) == 0)
      fp_lock_drop(c->locks_fd, e->d_name, lfd);
  }
  if (d)
    closedir(d);
  fp_verified_clean(c);
}

void fpull_cache_free(fpull_cache *c)
{
  if (!c)
    return;
  int *fds[] = {&c->root_fd, &c->blobs_fd, &c->blobs512_fd, &c->tmp_fd,
                &c->priv_fd, &c->locks_fd, &c->tags_fd};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (*fds[i] >= 0)
      close(*fds[i]);
  for (size_t i = 0; i < c->n_shared; i++)
    fpull_cache_free(c->shared[i]);
  free(c->shared);
  fp_cache_pins_free(c->pins);
  free(c->dir);
  free(c);
}

static void cache_freep(fpull_cache **c)
{
  fpull_cache_free(*c);
}

int fpull_cache_open(fpull_cache **out, const char *dir, fpull_err *err)
{
  *out = NULL;
  /* No directory given: the CLI's default without a config (FPULL_CACHE, XDG, HOME). */
  cleanup_free char *def = dir && *dir ? NULL : fpull_cache_resolve_dir(NULL, NULL);
  if (def)
    dir = def;
  if (!dir || !*dir)
    return fpull_err_set(err, FPULL_EFAIL,
                         "no cache directory: none given, and no $FPULL_CACHE, "
                         "$XDG_CACHE_HOME or home directory to put one in");
  struct stat st;
  /* Blobs may come from private images: the default cache is for its owner only. */
  if (stat(dir, &st) < 0 && errno == ENOENT &&
      fp_mkdir_p(dir, is_default_dir(dir) ? 0700 : 0777) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: cannot create: %s", dir, strerror(errno));
  __attribute__((cleanup(cache_freep))) fpull_cache *c = fp_xcalloc(1, sizeof *c);
  c->blobs_fd = c->blobs512_fd = c->tmp_fd = c->priv_fd = c->locks_fd = c->tags_fd = -1;
  c->dir = fp_xstrdup(dir);
  c->root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (c->root_fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: %s", dir, strerror(errno));
  if (fstat(c->root_fd, &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: %s", dir, strerror(errno));
  /* Anyone could swap our files there (security.md C3); sticky /tmp-like dirs are fine. */
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
    return fpull_err_set(err, FPULL_EFAIL, "cache %s: writable by every user; refusing to use it",
                         dir);
  /* Only a cache root of ours or root's is written into (issue 39). */
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return refuse_owner(dir, "the cache root", &st, err);
  make_sticky(c->root_fd, &st);
  struct stat root = st;
  mode_t m = st.st_mode & (S_IRWXU | S_IRWXG | S_IRWXO | S_ISVTX);
  int blobs = -1, r;
  if ((r = open_subdir(&blobs, c->root_fd, "blobs", m, dir, &root, err)))
    return r;
  r = open_subdir(&c->blobs_fd, blobs, "sha256", m, dir, &root, err);
  /* A cache made before sha512 was known, that we may not add to: sha512 blobs are then
   * not kept (the writer says so). */
  fpull_err e512 = {0};
  if (r == 0 && open_subdir(&c->blobs512_fd, blobs, "sha512", m, dir, &root, &e512) != 0)
    fp_debug("%s", e512.msg);
  close(blobs);
  if (r || (r = open_subdir(&c->tmp_fd, c->root_fd, "tmp", m, dir, &root, err)) ||
      (r = open_subdir(&c->locks_fd, c->root_fd, "locks", m, dir, &root, err)) ||
      (r = open_subdir(&c->tags_fd, c->root_fd, "tags", m, dir, &root, err)))
    return r;
  /* Our work files go where nobody else can swap, link or plant anything (tmp/ may be
   * shared): a directory of ours alone. */
  c->priv_fd = fp_trust_private_dir(c->tmp_fd);
  if (c->priv_fd < 0)
    fp_debug("cache %s: no private working directory under tmp/: %s", dir, strerror(errno));
  clean_stale(c);
  *out = steal_pointer(&c);
  return 0;
}

const char *fpull_cache_dir(const fpull_cache *c)
{
  return c ? c->dir : NULL;
}

char *fpull_cache_blob_path(const fpull_cache *c, const char *digest)
{
  if (!c || !fpull_digest_valid(digest))
    return NULL;
  return fp_xasprintf("%s/blobs/%.6s/%s", c->dir, digest, fp_digest_hex(digest));
}

static int has_blob_one(const fpull_cache *c, const char *digest, int64_t size)
{
  struct stat st;
  int dir = fp_cache_blobs_fd(c, digest);
  if (dir < 0 || fstatat(dir, fp_digest_hex(digest), &st, AT_SYMLINK_NOFOLLOW) < 0)
    return 0;
  if (!S_ISREG(st.st_mode))
    return 0;
  return size < 0 || st.st_size == size;
}

int fpull_cache_has_blob(const fpull_cache *c, const char *digest, int64_t size)
{
  if (!c || !fpull_digest_valid(digest))
    return 0;
  if (has_blob_one(c, digest, size))
    return 1;
  for (size_t i = 0; i < c->n_shared; i++)
    if (has_blob_one(c->shared[i], digest, size))
      return 1;
  return 0;
}

int fp_cache_drop(const struct fpull_cache *c, int dirfd, const char *name, const struct stat *seen)
{
  /* A shared cache is someone else's to repair: we only stop using what is wrong there. */
  if (c->readonly)
    return -1;
  return fp_cache_remove_if_same(dirfd, name, seen);
}

/* What happened to a bad entry, for messages: a shared cache's entries stay. */
static const char *dropped(const fpull_cache *c)
{
  return c->readonly ? "passed over" : "removed";
}

int fp_cache_remove_if_same(int dirfd, const char *name, const struct stat *seen)
{
  /* Only the file that was judged: a fresh copy renamed in meanwhile stays. */
  struct stat now;
  if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
    return -1;
  if (seen && (now.st_dev != seen->st_dev || now.st_ino != seen->st_ino))
    return -1;
  return unlinkat(dirfd, name, S_ISDIR(now.st_mode) ? AT_REMOVEDIR : 0);
}

/* Opens blobs/HEX for reading. A symlink or other non-regular entry is removed (it can only
 * be tampering) and reported as absent. */
static int open_blob(int *out, struct stat *st, fpull_cache *c, const char *digest, fpull_err *err)
{
  *out = -1;
  const char *hex = fp_digest_hex(digest);
  int dir = fp_cache_blobs_fd(c, digest);
  int fd = dir < 0 ? -1 : fp_trust_open_file(dir, hex, O_RDONLY, 0, st);
  if (fd < 0 && (dir < 0 || errno == ENOENT))
    return fpull_err_set(err, FPULL_ENOTFOUND, "cache: blob %s not in %s", digest, c->dir);
  if (fd >= 0) {
    *out = fd;
    return 0;
  }
  int e = errno;
  if (e != ELOOP && e != EINVAL)
    return fpull_err_set(err, FPULL_EFAIL, "cache: blob %s: %s", digest, strerror(e));
  fp_cache_drop(c, dir, hex, NULL);
  return fpull_err_set(err, FPULL_EINTEGRITY, "cache: %s/blobs/%.6s/%s is not a regular file; %s",
                       c->dir, digest, hex, dropped(c));
}

static int open_blob_one(int *out, fpull_cache *c, const char *digest, int64_t size, fpull_err *err)
{
  *out = -1;
  if (!fpull_digest_valid(digest))
    return fpull_err_set(err, FPULL_EINTEGRITY, "cache: invalid digest");
  struct stat st;
  cleanup_close int fd = -1;
  int r = open_blob(&fd, &st, c, digest, err);
  if (r == FPULL_EINTEGRITY) {
    fp_warn("%s", err ? err->msg : "cache: bad entry removed");
    return fpull_err_set(err, FPULL_ENOTFOUND, "cache: blob %s not in %s", digest, c->dir);
  }
  if (r)
    return r;
  if (size >= 0 && st.st_size != size) {
    fp_warn("cache: blob %s has %lld bytes, expected %lld; %s", digest, (long long)st.st_size,
            (long long)size, dropped(c));
    fp_cache_drop(c, fp_cache_blobs_fd(c, digest), fp_digest_hex(digest), &st);
    return fpull_err_set(err, FPULL_ENOTFOUND, "cache: blob %s not in %s", digest, c->dir);
  }
  *out = fd;
  fd = -1;
  return 0;
}

/* Opens the blob of digest and checks its size (size < 0: any): a wrong-sized copy is
 * dropped and reported, so that the caller fetches again. */
static int open_sized(int *fd, struct stat *st, fpull_cache *c, const char *digest, int64_t size,
                      fpull_err *err)
{
  if (!fpull_digest_valid(digest))
    return fpull_err_set(err, FPULL_EINTEGRITY, "cache: invalid digest");
  int r = open_blob(fd, st, c, digest, err);
  if (r)
    return r;
  if (size >= 0 && st->st_size != size) {
    fp_cache_drop(c, fp_cache_blobs_fd(c, digest), fp_digest_hex(digest), st);
    return fpull_err_set(err, FPULL_EINTEGRITY, "cache: blob %s has %lld bytes, expected %lld; %s",
                         digest, (long long)st->st_size, (long long)size, dropped(c));
  }
  return 0;
}

/* got, the hash of the blob's bytes, against its name: a corrupt copy is dropped. */
static int check_hash(fpull_cache *c, const char *digest, const char *got, const struct stat *st,
                      fpull_err *err)
{
  if (strcmp(got, digest) == 0)
    return 0;
  fp_cache_drop(c, fp_cache_blobs_fd(c, digest), fp_digest_hex(digest), st);
  return fpull_err_set(err, FPULL_EINTEGRITY, "cache: blob %s is corrupt (its sha256 is %s); %s",
                       digest, got, dropped(c));
}

/* A blob of our own cache that our record says was verified as it is now (same inode,
 * size and ctime: cache_verified.h) is not hashed again. */
static int trusted_by_record(fpull_cache *c, const char *digest, const struct stat *st)
{
  if (!fp_verified_blob_ok(c, digest, st))
    return 0;
  fp_debug("cache: blob %s trusted by its verified record, not hashed", digest);
  return 1;
}

/* After a hash that matched: records the blob as it was before the hash, unless it changed
 * meanwhile. */
static void note_verified(fpull_cache *c, const char *digest, int fd, const struct stat *before)
{
  struct stat now;
  if (fstat(fd, &now) == 0 && now.st_ino == before->st_ino && now.st_dev == before->st_dev &&
      now.st_size == before->st_size && now.st_ctim.tv_sec == before->st_ctim.tv_sec &&
      now.st_ctim.tv_nsec == before->st_ctim.tv_nsec)
    fp_verified_note_blob(c, digest, before);
}

static int verify_blob_one(fpull_cache *c, const char *digest, int64_t size, fpull_err *err)
{
  struct stat st;
  cleanup_close int fd = -1;
  int r = open_sized(&fd, &st, c, digest, size, err);
  if (r)
    return r;
  if (trusted_by_record(c, digest, &st))
    return 0;
  cleanup_sha256 struct fp_sha256 h = {.sha512 = strncmp(digest, "sha512:", 7) == 0};
  char got[FP_DIGEST_MAX];
  if (fp_sha256_fd(&h, fd, (uint64_t)st.st_size) < 0 || fp_hash_final(&h, got) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache: blob %s: cannot read: %s", digest,
                         strerror(errno));
  if ((r = check_hash(c, digest, got, &st, err)) == 0)
    note_verified(c, digest, fd, &st);
  return r;
}

static int get_bytes_one(fpull_cache *c, const char *digest, size_t max, char **data, size_t *len,
                         fpull_err *err)
{
  *data = NULL;
  *len = 0;
  /* A tampered entry is removed there and reported absent, so the caller fetches again. */
  cleanup_close int fd = -1;
  int r = open_blob_one(&fd, c, digest, -1, err);
  if (r)
    return r;
  struct stat st;
  if (fstat(fd, &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache: blob %s: %s", digest, strerror(errno));
  if ((uint64_t)st.st_size > max)
    return fpull_err_set(err, FPULL_EINTEGRITY, "cache: blob %s has %lld bytes, over %zu", digest,
                         (long long)st.st_size, max);
  cleanup_free char *buf = fp_xmalloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fpull_err_set(err, FPULL_EFAIL, "cache: blob %s: short read", digest);
    got += (size_t)n;
  }
  buf[got] = '\0';
  /* Parse only bytes that were hashed (security.md rule 1); a corrupt entry is dropped so
   * the caller fetches it again. */
  cleanup_free char *actual = fp_digest_of_like(digest, buf, got);
  if (!actual || strcmp(actual, digest) != 0) {
    fp_warn("cache: blob %s is corrupt; %s", digest, dropped(c));
    fp_cache_drop(c, fp_cache_blobs_fd(c, digest), fp_digest_hex(digest), &st);
    return fpull_err_set(err, FPULL_ENOTFOUND, "cache: blob %s was corrupt and is %s", digest,
                         dropped(c));
  }
  *len = got;
  *data = steal_pointer(&buf);
  return 0;
}

int fpull_cache_put_bytes(fpull_cache *c, const char *digest, const void *data, size_t len,
                          fpull_err *err)
{
  struct fpull_cache_writer *w = NULL;
  int done = 0;
  int r = fpull_cache_writer_begin(&w, &done, c, digest, (int64_t)len, err);
  if (r || done)
    return r;
  /* A partial left by someone else may hold other bytes: small blobs are rewritten whole. */
  const struct fpull_blob_sink *s = fpull_cache_writer_sink(w);
  if ((r = s->restart(s->ud, 0, err)) == 0)
    r = s->write(s->ud, data, len, err);
  if (r) {
    fpull_cache_writer_abort(w);
    return r;
  }
  return fpull_cache_writer_commit(w, err);
}

/* Copies len bytes of fd into a file only we can reach, hashing them on the way. */
static int private_copy(fpull_cache *c, int fd, uint64_t len, struct fp_sha256 *h, int *out,
                        const char *digest, fpull_err *err)
{
  int dir = c->priv_fd >= 0 ? c->priv_fd : -1;
  cleanup_close int copy = dir >= 0 ? fp_trust_anon_file(dir) : -1;
  if (copy < 0)
    return fpull_err_set(err, FPULL_EFAIL,
                         "cache %s: blob %s belongs to another user and there is no private "
                         "place to copy it to: %s",
                         c->dir, digest, strerror(errno));
  char buf[1 << 16];
  uint64_t done = 0;
  while (done < len) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fpull_err_set(err, FPULL_EFAIL, "cache: blob %s: short read", digest);
    if (fp_sha256_update(h, buf, (size_t)n) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "cache: sha256 failed");
    for (ssize_t w = 0; w < n;) {
      ssize_t k = write(copy, buf + w, (size_t)(n - w));
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0)
        return fpull_err_set(err, FPULL_EFAIL, "cache %s: private copy of %s: %s", c->dir, digest,
                             strerror(errno));
      w += k;
    }
    done += (uint64_t)n;
  }
  *out = copy;
  copy = -1;
  return 0;
}

static int open_verified_one(int *out, fpull_cache *c, const char *digest, int64_t size,
                             fpull_err *err)
{
  *out = -1;
  struct stat st;
  cleanup_close int fd = -1;
  int r = open_sized(&fd, &st, c, digest, size, err);
  if (r)
    return r;
  cleanup_sha256 struct fp_sha256 h = {0};
  if (fp_hash_init(&h, digest) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache: sha256 unavailable");
  /* A file of ours or root's that nobody else may write keeps the bytes we hash; anyone
   * else's could change them right after: those are copied, and the copy is used. */
  int safe = (st.st_uid == geteuid() || st.st_uid == 0) && !(st.st_mode & (S_IWGRP | S_IWOTH));
  if (safe && trusted_by_record(c, digest, &st)) {
    *out = fd;
    fd = -1;
    return 0;
  }
  int use = fd;
  cleanup_close int copy = -1;
  if (safe) {
    if (fp_sha256_fd(&h, fd, (uint64_t)st.st_size) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "cache: blob %s: cannot read: %s", digest,
                           strerror(errno));
  } else {
    fp_debug("cache: blob %s is owned by uid %u: using a private copy", digest,
             (unsigned)st.st_uid);
    if ((r = private_copy(c, fd, (uint64_t)st.st_size, &h, &copy, digest, err)))
      return r;
    use = copy;
  }
  char got[FP_DIGEST_MAX];
  if (fp_hash_final(&h, got) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache: sha256 failed");
  if ((r = check_hash(c, digest, got, &st, err)))
    return r;
  if (use == fd)
    note_verified(c, digest, fd, &st);
  if (lseek(use, 0, SEEK_SET) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cache: blob %s: %s", digest, strerror(errno));
  if (use == copy)
    copy = -1;
  else
    fd = -1;
  *out = use;
  return 0;
}

/* Each lookup tries the own cache, then the shared ones in order: the first copy that is
 * there and verifies is used. A corrupt copy in a shared cache is passed over (and left
 * alone, it is not ours); with no good copy anywhere the own cache's answer stands. */
static int try_shared(int own_rc, int shared_rc, const fpull_err *shared_err, fpull_err *err)
{
  if (shared_rc == 0) {
    fpull_err_clear(err);
    return 1;
  }
  /* Absent is normal; a bad copy is worth a line, since someone should repair it. */
  if (shared_rc != FPULL_ENOTFOUND && own_rc != 0)
    fp_warn("shared %s", shared_err->msg);
  return 0;
}

static int own_final(int rc)
{
  return rc != FPULL_ENOTFOUND && rc != FPULL_EINTEGRITY;
}

int fpull_cache_open_blob(int *out, fpull_cache *c, const char *digest, int64_t size,
                          fpull_err *err)
{
  int rc = open_blob_one(out, c, digest, size, err);
  for (size_t i = 0; !own_final(rc) && i < c->n_shared; i++) {
    fpull_err e = {0};
    if (try_shared(rc, open_blob_one(out, c->shared[i], digest, size, &e), &e, err))
      return 0;
  }
  return rc;
}

int fpull_cache_verify_blob(fpull_cache *c, const char *digest, int64_t size, fpull_err *err)
{
  int rc = verify_blob_one(c, digest, size, err);
  for (size_t i = 0; !own_final(rc) && i < c->n_shared; i++) {
    fpull_err e = {0};
    if (try_shared(rc, verify_blob_one(c->shared[i], digest, size, &e), &e, err))
      return 0;
  }
  return rc;
}

int fpull_cache_get_bytes(fpull_cache *c, const char *digest, size_t max, char **data, size_t *len,
                          fpull_err *err)
{
  int rc = get_bytes_one(c, digest, max, data, len, err);
  for (size_t i = 0; !own_final(rc) && i < c->n_shared; i++) {
    fpull_err e = {0};
    if (try_shared(rc, get_bytes_one(c->shared[i], digest, max, data, len, &e), &e, err))
      return 0;
  }
  return rc;
}

int fpull_cache_open_verified(int *out, fpull_cache *c, const char *digest, int64_t size,
                              fpull_err *err)
{
  int rc = open_verified_one(out, c, digest, size, err);
  for (size_t i = 0; !own_final(rc) && i < c->n_shared; i++) {
    fpull_err e = {0};
    if (try_shared(rc, open_verified_one(out, c->shared[i], digest, size, &e), &e, err))
      return 0;
  }
  return rc;
}
