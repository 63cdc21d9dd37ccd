/* Disk space before a pull writes: what the cache still has to download and what DEST will
 * take, against the free space of their file systems (one sum when they share one), so that
 * a pull that cannot fit says so before it fills a disk; and the same numbers when a write
 * fails with ENOSPC anyway. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "space.h"
#include "base/util.h"
#include "fpull/cache.h"

/* Layers unpack to about this many times their compressed size (gzip's usual ratio on
 * images); a SquashFS image and an OCI layout are about their compressed size. */
#define ROOTFS_FACTOR 2

static int fs_of(const char *path, dev_t *dev, uint64_t *avail)
{
  /* DEST need not exist yet: its nearest existing ancestor holds it. */
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  struct stat st;
  struct statvfs vfs;
  while (stat(buf, &st) < 0) {
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) {
      snprintf(buf, sizeof buf, "%s", slash == buf ? "/" : ".");
      if (stat(buf, &st) < 0)
        return -1;
      break;
    }
    *slash = '\0';
  }
  if (statvfs(buf, &vfs) < 0)
    return -1;
  *dev = st.st_dev;
  *avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
  return 0;
}

/* Megabytes: what is needed rounded, what is free rounded down (never shown as more). */
static unsigned long long mb(uint64_t n)
{
  return (unsigned long long)((n + 500000) / 1000000);
}

static unsigned long long mb_free(uint64_t n)
{
  return (unsigned long long)(n / 1000000);
}

void fp_space_estimate(struct fp_space *sp, fpull_cache *cache, const struct fpull_manifest *m,
                       const char *dest, int format)
{
  memset(sp, 0, sizeof *sp);
  uint64_t total = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    total += (uint64_t)m->layers[i].size;
    if (!cache || !fpull_cache_has_blob(cache, m->layers[i].digest, m->layers[i].size))
      sp->cache_need += (uint64_t)m->layers[i].size;
  }
  sp->dest_need = dest ? (format == FPULL_FORMAT_DIR ? total * ROOTFS_FACTOR : total) : 0;
  sp->cache_dir = cache ? fpull_cache_dir(cache) : NULL;
  sp->dest = dest;
}

int fp_space_check(const struct fp_space *sp, fpull_err *err)
{
  dev_t cdev = 0, ddev = 0;
  uint64_t cfree = 0, dfree = 0;
  int have_c = sp->cache_dir && fs_of(sp->cache_dir, &cdev, &cfree) == 0;
  int have_d = sp->dest && fs_of(sp->dest, &ddev, &dfree) == 0;
  if (have_c && have_d && cdev == ddev) {
    if (sp->cache_need + sp->dest_need > cfree)
      return fpull_err_set(err, FPULL_EFAIL,
                           "not enough disk space: the pull needs about %llu MB (%llu MB of "
                           "downloads into the cache %s, %llu MB for %s) and %llu MB are free; "
                           "'fpull cache prune' frees cache space",
                           mb(sp->cache_need + sp->dest_need), mb(sp->cache_need), sp->cache_dir,
                           mb(sp->dest_need), sp->dest, mb_free(cfree));
    return 0;
  }
  if (have_c && sp->cache_need > cfree)
    return fpull_err_set(err, FPULL_EFAIL,
                         "not enough disk space for the cache %s: the pull needs about %llu MB "
                         "of downloads and %llu MB are free; 'fpull cache prune' frees space",
                         sp->cache_dir, mb(sp->cache_need), mb_free(cfree));
  if (have_d && sp->dest_need > dfree)
    return fpull_err_set(err, FPULL_EFAIL,
                         "not enough disk space for %s: it needs about %llu MB and %llu MB are "
                         "free there",
                         sp->dest, mb(sp->dest_need), mb_free(dfree));
  return 0;
}

void fp_space_explain(const struct fp_space *sp, fpull_err *err)
{
  if (!err || !err->code || !strstr(err->msg, strerror(ENOSPC)))
    return;
  dev_t dev;
  uint64_t cfree = 0, dfree = 0;
  int have_c = sp->cache_dir && fs_of(sp->cache_dir, &dev, &cfree) == 0;
  int have_d = sp->dest && fs_of(sp->dest, &dev, &dfree) == 0;
  size_t len = strlen(err->msg);
  snprintf(err->msg + len, sizeof err->msg - len,
           " (the pull needs about %llu MB for DEST and %llu MB in the cache; %llu MB free for "
           "DEST, %llu MB for the cache; 'fpull cache prune' frees cache space)",
           mb(sp->dest_need), mb(sp->cache_need), have_d ? mb_free(dfree) : 0ull,
           have_c ? mb_free(cfree) : 0ull);
}
