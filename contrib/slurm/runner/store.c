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
#include "lru.h"
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

/* The bytes a tree takes (its blocks, on its own file system only). */
static uint64_t bytes_of(const char *path)
{
  tree_bytes = 0;
  nftw(path, add_bytes, 16, FTW_PHYS | FTW_MOUNT);
  return tree_bytes;
}

enum { KEPT_TREE, KEPT_NAME };

struct evicting {
  int dfd;               /* store/UID */
  const char *names;     /* store/UID/names: container_scope=global names */
  int nfd;               /* names, or -1 */
  const char *keep;      /* this step's tree's hex, or NULL */
  const char *keep_name; /* this step's name, or NULL */
};

/* A kept tree's size, from HEX.size beside it (0 when missing). */
static int tree_size(void *ctx, int dfd, const char *key, uint64_t *bytes)
{
  (void)ctx;
  char sz[96], buf[32] = "";
  snprintf(sz, sizeof sz, "%s.size", key);
  *bytes = 0;
  int fd = openat(dfd, sz, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r = read(fd, buf, sizeof buf - 1);
    buf[r > 0 ? r : 0] = '\0';
    *bytes = strtoull(buf, NULL, 10);
    close(fd);
  }
  return 0;
}

/* A global name's tree, measured: names count towards store_max as kept trees do (issue
 * 39), last used when their lock was. */
static int name_size(void *ctx, int dfd, const char *key, uint64_t *bytes)
{
  (void)dfd;
  const struct evicting *e = ctx;
  cleanup_free char *tree = fp_xasprintf("%s/%s", e->names, key);
  *bytes = bytes_of(tree);
  return 0;
}

/* Removes dfd/KEY (and KEY.size, KEY.lock) when no step holds it (its lock). */
static int remove_unheld(int dfd, const char *key, int with_size)
{
  char name[96];
  snprintf(name, sizeof name, "%s.lock", key);
  cleanup_close int fd = dfd < 0 ? -1 : openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
    return 0;
  fp_rm_rf_at(dfd, key);
  if (with_size) {
    snprintf(name, sizeof name, "%s.size", key);
    unlinkat(dfd, name, 0);
  }
  snprintf(name, sizeof name, "%s.lock", key);
  unlinkat(dfd, name, 0);
  return 1;
}

static int drop_kept(void *ctx, const struct fp_lru_item *it)
{
  const struct evicting *e = ctx;
  if (it->kind == KEPT_NAME) {
    if (e->keep_name && strcmp(it->key, e->keep_name) == 0)
      return 0;
    return remove_unheld(e->nfd, it->key, 0);
  }
  if (e->keep && strcmp(it->key, e->keep) == 0)
    return 0;
  return remove_unheld(e->dfd, it->key, 1);
}

/* Removes the least recently used trees and names until the user's store is within
 * store_max, never keep (this step's tree) nor keep_name (its name) nor one another step
 * holds (its lock). */
static void evict(const char *store, const char *keep, const char *keep_name, uint64_t max)
{
  cleanup_close int dfd = open(store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return;
  cleanup_free char *names = fp_xasprintf("%s/names", store);
  cleanup_close int nfd = open(names, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct evicting e = {dfd, names, nfd, keep, keep_name};
  struct fp_lru l = {0};
  fp_lru_scan(&l, dfd, KEPT_TREE, tree_size, &e);
  fp_lru_scan(&l, nfd, KEPT_NAME, name_size, &e);
  fp_lru_trim(&l, max, drop_kept, &e);
  fp_lru_free(&l);
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
