/* fpull Slurm plugin: the node store (see store.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/settings.h"
#include "store.h"
#include "unpack/inroot.h"
#include "base/util.h"

static uint64_t tree_bytes;
static int add_bytes(const char *p, const struct stat *st, int flag, struct FTW *f)
{
  (void)p;
  (void)flag;
  (void)f;
  tree_bytes += (uint64_t)st->st_blocks * 512;
  return 0;
}

struct kept {
  char hex[72]; /* a kept tree's digest hex, or a name (in names/) */
  int name;     /* a container_scope=global name (names/NAME, names/NAME.lock) */
  time_t used;
  uint64_t bytes;
};

/* The bytes a tree takes (its blocks, on its own file system only). */
static uint64_t bytes_of(const char *path)
{
  tree_bytes = 0;
  nftw(path, add_bytes, 16, FTW_PHYS | FTW_MOUNT);
  return tree_bytes;
}

/* The user's container_scope=global names (store/UID/names/NAME) as entries of k: they
 * count towards store_max as kept trees do (issue 39), last used when their lock was. */
static struct kept *add_names(const char *store, struct kept *k, size_t *n, uint64_t *total)
{
  cleanup_free char *names = fp_xasprintf("%s/names", store);
  cleanup_close int dfd = open(names, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dup(dfd));
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    struct stat st;
    if (len < 6 || len > 70 || strcmp(de->d_name + len - 5, ".lock") != 0 ||
        fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    k = fp_xrealloc(k, (*n + 1) * sizeof *k);
    snprintf(k[*n].hex, sizeof k[*n].hex, "%.*s", (int)(len - 5), de->d_name);
    k[*n].name = 1;
    k[*n].used = st.st_mtime;
    cleanup_free char *tree = fp_xasprintf("%s/%s", names, k[*n].hex);
    k[*n].bytes = bytes_of(tree);
    *total += k[*n].bytes;
    (*n)++;
  }
  if (d)
    closedir(d);
  return k;
}

/* Removes names/NAME when no step holds it (its lock). 1 when it went. */
static int evict_name(const char *store, const char *name)
{
  cleanup_free char *names = fp_xasprintf("%s/names", store);
  cleanup_close int dfd = open(names, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  char lock[96];
  snprintf(lock, sizeof lock, "%s.lock", name);
  cleanup_close int fd = dfd < 0 ? -1 : openat(dfd, lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
    return 0;
  fp_rm_rf_at(dfd, name);
  unlinkat(dfd, lock, 0);
  return 1;
}

static int kept_older(const void *a, const void *b)
{
  const struct kept *x = a, *y = b;
  return x->used < y->used ? -1 : x->used > y->used;
}

/* Removes the least recently used trees until the user's store is within store_max, never
 * keep (this step's) nor one another step holds (its lock). */
static void evict(const char *store, const char *keep, const char *keep_name, uint64_t max)
{
  cleanup_close int dfd = open(store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = dfd < 0 ? NULL : fdopendir(dup(dfd));
  if (!d)
    return;
  struct kept *k = NULL;
  size_t n = 0;
  uint64_t total = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len < 6 || len > 70 || strcmp(de->d_name + len - 5, ".lock") != 0)
      continue;
    struct stat st;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    k = fp_xrealloc(k, (n + 1) * sizeof *k);
    snprintf(k[n].hex, sizeof k[n].hex, "%.*s", (int)(len - 5), de->d_name);
    k[n].name = 0;
    k[n].used = st.st_mtime;
    k[n].bytes = 0;
    char sz[96], buf[32] = "";
    snprintf(sz, sizeof sz, "%s.size", k[n].hex);
    int fd = openat(dfd, sz, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t r = read(fd, buf, sizeof buf - 1);
      buf[r > 0 ? r : 0] = '\0';
      k[n].bytes = strtoull(buf, NULL, 10);
      close(fd);
    }
    total += k[n].bytes;
    n++;
  }
  closedir(d);
  k = add_names(store, k, &n, &total);
  qsort(k, n, sizeof *k, kept_older);
  for (size_t i = 0; i < n && total > max; i++) {
    if (k[i].name) {
      if ((!keep_name || strcmp(k[i].hex, keep_name) != 0) && evict_name(store, k[i].hex))
        total -= k[i].bytes;
      continue;
    }
    if (keep && strcmp(k[i].hex, keep) == 0)
      continue;
    char name[96];
    snprintf(name, sizeof name, "%s.lock", k[i].hex);
    int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      fp_rm_rf_at(dfd, k[i].hex);
      snprintf(name, sizeof name, "%s.size", k[i].hex);
      unlinkat(dfd, name, 0);
      snprintf(name, sizeof name, "%s.lock", k[i].hex);
      unlinkat(dfd, name, 0);
      total -= k[i].bytes;
    }
    close(fd);
  }
  free(k);
}

int fp_slurm_store_claim(struct fp_slurm_store *s, const char *run_dir, uid_t uid,
                         const char *digest, fpull_err *err)
{
  s->lock = -1;
  if (strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71 ||
      strspn(digest + 7, "0123456789abcdef") != 64) {
    fpull_err_set(err, FPULL_ENOMATCH, "%s: not a sha256 digest", digest);
    return -1;
  }
  snprintf(s->dir, sizeof s->dir, "%s/store/%u", run_dir, (unsigned)uid);
  snprintf(s->hex, sizeof s->hex, "%s", digest + 7);
  snprintf(s->tree, sizeof s->tree, "%s/%s", s->dir, s->hex);
  cleanup_free char *lockp = fp_xasprintf("%s.lock", s->tree);
  cleanup_free char *config = fp_xasprintf("%s/config.json", s->tree);
  int fd = open(lockp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || flock(fd, LOCK_EX) < 0) {
    fpull_err_set(err, FPULL_EFAIL, "%s: %s", lockp, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  s->lock = fd;
  struct stat st;
  return stat(config, &st) == 0;
}

void fp_slurm_store_filled(struct fp_slurm_store *s)
{
  bytes_of(s->tree);
  cleanup_free char *szp = fp_xasprintf("%s.size", s->tree);
  FILE *f = fopen(szp, "we");
  if (f) {
    fprintf(f, "%llu\n", (unsigned long long)tree_bytes);
    fclose(f);
  }
}

int fp_slurm_store_hold(struct fp_slurm_store *s, uint64_t max)
{
  futimens(s->lock, NULL);
  flock(s->lock, LOCK_SH);
  evict(s->dir, s->hex, NULL, max);
  int fd = s->lock;
  s->lock = -1;
  return fd;
}

uint64_t fp_slurm_store_limit(unsigned long long store_max, const char *run_dir)
{
  if (store_max != FP_SLURM_STORE_AUTO)
    return store_max;
  /* Bounded by the disk it is on, whatever its size: a quarter of it per user, the rest
   * for the steps' own layers and trees and for other users. */
  struct statvfs v;
  if (statvfs(run_dir, &v) != 0)
    return 0;
  return (uint64_t)v.f_blocks * v.f_frsize / 4;
}

void fp_slurm_store_release(struct fp_slurm_store *s)
{
  if (s->lock >= 0)
    close(s->lock);
  s->lock = -1;
}

void fp_slurm_store_trim(const char *run_dir, uid_t uid, const char *name, uint64_t max)
{
  cleanup_free char *store = fp_xasprintf("%s/store/%u", run_dir, (unsigned)uid);
  evict(store, NULL, name, max);
}
