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

struct kept_file {
  char hex[65];
  time_t used;
  uint64_t bytes;
};

static int kept_older(const void *a, const void *b)
{
  const struct kept_file *x = a, *y = b;
  return x->used < y->used ? -1 : x->used > y->used;
}

void fp_slurm_sqsh_store_trim(const char *dir, const char *keep, uint64_t max)
{
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dup(dfd));
  if (!d)
    return;
  struct kept_file *k = NULL;
  size_t n = 0;
  uint64_t total = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    char name[96];
    struct stat lk, sq;
    if (strlen(de->d_name) != 69 || strcmp(de->d_name + 64, ".lock") != 0 ||
        strspn(de->d_name, "0123456789abcdef") != 64)
      continue;
    snprintf(name, sizeof name, "%.64s.sqsh", de->d_name);
    if (fstatat(dfd, de->d_name, &lk, AT_SYMLINK_NOFOLLOW) < 0 ||
        fstatat(dfd, name, &sq, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sq.st_mode))
      continue;
    k = fp_xrealloc(k, (n + 1) * sizeof *k);
    snprintf(k[n].hex, sizeof k[n].hex, "%.64s", de->d_name);
    k[n].used = lk.st_mtime;
    k[n].bytes = (uint64_t)sq.st_blocks * 512;
    total += k[n].bytes;
    n++;
  }
  closedir(d);
  qsort(k, n, sizeof *k, kept_older);
  for (size_t i = 0; i < n && total > max; i++) {
    if (keep && strcmp(k[i].hex, keep) == 0)
      continue;
    char name[96];
    snprintf(name, sizeof name, "%s.lock", k[i].hex);
    cleanup_close int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
      continue;
    snprintf(name, sizeof name, "%s.sqsh", k[i].hex);
    if (unlinkat(dfd, name, 0) == 0)
      total -= k[i].bytes;
  }
  free(k);
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
