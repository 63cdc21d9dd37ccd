/* fpull Slurm plugin: the site's SquashFS store (see sqsh_store.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lru.h"
#include "sqsh_store.h"
#include "base/util.h"

/* Removes HEX.sqsh.tmp.* in dir: what a node that died while converting left (the caller
 * holds the lock exclusive, so no conversion is running). */
static void remove_leftovers(const char *dir, const char *hex)
{
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dup(dfd));
  char prefix[96];
  int n = snprintf(prefix, sizeof prefix, "%s.sqsh.tmp.", hex);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL)
    if (strncmp(de->d_name, prefix, (size_t)n) == 0)
      unlinkat(dfd, de->d_name, 0);
  if (d)
    closedir(d);
}

int fp_slurm_sqsh_store_claim(struct fp_slurm_sqsh_store *s, const char *dir, const char *digest,
                              const char *node, fpull_err *err)
{
  s->lock = -1;
  s->tmp[0] = '\0';
  if (strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71 ||
      strspn(digest + 7, "0123456789abcdef") != 64) {
    fpull_err_set(err, FPULL_EFAIL, "%s: not a sha256 digest", digest);
    return -1;
  }
  const char *hex = digest + 7;
  if ((size_t)snprintf(s->path, sizeof s->path, "%s/%s.sqsh", dir, hex) >= sizeof s->path) {
    fpull_err_set(err, FPULL_EFAIL, "sqsh_store %s: path too long", dir);
    return -1;
  }
  cleanup_free char *lockp = fp_xasprintf("%s/%s.lock", dir, hex);
  int fd = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  struct stat st;
  if (fd < 0 || flock(fd, LOCK_SH) < 0) {
    fpull_err_set(err, FPULL_EFAIL, "%s: %s", lockp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  s->lock = fd;
  if (lstat(s->path, &st) == 0 && S_ISREG(st.st_mode))
    return 1;
  /* Exclusive to convert; another node may have converted it meanwhile. */
  if (flock(fd, LOCK_EX) < 0) {
    fpull_err_set(err, FPULL_EFAIL, "%s: %s", lockp, strerror(errno));
    fp_slurm_sqsh_store_release(s);
    return -1;
  }
  if (lstat(s->path, &st) == 0 && S_ISREG(st.st_mode)) {
    flock(fd, LOCK_SH);
    return 1;
  }
  remove_leftovers(dir, hex);
  snprintf(s->tmp, sizeof s->tmp, "%s.tmp.%.64s.%ld", s->path, node && *node ? node : "node",
           (long)getpid());
  return 0;
}

int fp_slurm_sqsh_store_filled(struct fp_slurm_sqsh_store *s, fpull_err *err)
{
  /* On the disk before it has its name: a node that mounts it after a crash of this one
   * finds the whole file or none. */
  cleanup_close int fd = open(s->tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fsync(fd) < 0 || rename(s->tmp, s->path) < 0) {
    fpull_err_set(err, FPULL_EFAIL, "%s: %s", s->path, strerror(errno));
    fp_slurm_sqsh_store_release(s);
    return -1;
  }
  s->tmp[0] = '\0';
  flock(s->lock, LOCK_SH);
  return 0;
}

/* A kept file's size: HEX.sqsh beside HEX.lock, a regular file (none yet: not kept). */
static int sqsh_size(void *ctx, int dfd, const char *key, uint64_t *bytes)
{
  (void)ctx;
  char name[96];
  struct stat sq;
  if (strlen(key) != 64 || strspn(key, "0123456789abcdef") != 64)
    return -1;
  snprintf(name, sizeof name, "%s.sqsh", key);
  if (fstatat(dfd, name, &sq, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sq.st_mode))
    return -1;
  *bytes = (uint64_t)sq.st_blocks * 512;
  return 0;
}

struct trimming {
  int dfd;
  const char *keep;
};

/* Removes HEX.sqsh unless it is keep or a step on any node holds it (its lock). */
static int drop_sqsh(void *ctx, const struct fp_lru_item *it)
{
  const struct trimming *t = ctx;
  if (t->keep && strcmp(it->key, t->keep) == 0)
    return 0;
  char name[96];
  snprintf(name, sizeof name, "%s.lock", it->key);
  cleanup_close int fd = openat(t->dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
    return 0;
  snprintf(name, sizeof name, "%s.sqsh", it->key);
  return unlinkat(t->dfd, name, 0) == 0;
}

void fp_slurm_sqsh_store_trim(const char *dir, const char *keep, uint64_t max)
{
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return;
  struct trimming t = {dfd, keep};
  struct fp_lru l = {0};
  fp_lru_scan(&l, dfd, 0, sqsh_size, &t);
  fp_lru_trim(&l, max, drop_sqsh, &t);
  fp_lru_free(&l);
}

int fp_slurm_sqsh_store_hold(struct fp_slurm_sqsh_store *s)
{
  futimens(s->lock, NULL);
  int fd = s->lock;
  s->lock = -1;
  return fd;
}

void fp_slurm_sqsh_store_release(struct fp_slurm_sqsh_store *s)
{
  if (s->tmp[0])
    unlink(s->tmp);
  s->tmp[0] = '\0';
  if (s->lock >= 0)
    close(s->lock);
  s->lock = -1;
}
