/* Disk space before a pull writes: what the cache still has to download and what DEST will
 * take, against the free space of their file systems (one sum when they share one), so that
 * a pull that cannot fit says so before it fills a disk; and the same numbers when a write
 * fails with ENOSPC anyway. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "space.h"
#include "base/util.h"
#include "fpull/cache.h"

/* A layer whose uncompressed size is not known (not cached yet) unpacks to about this many
 * times its compressed size (gzip's usual ratio on images); a SquashFS image is about the
 * layers' compressed size, and an OCI layout or archive holds their very bytes. */
#define ROOTFS_FACTOR 2
/* What a layout or archive adds to its blobs: the manifest, index.json, oci-layout, tar
 * headers (an upper bound for one image). */
#define LAYOUT_SLACK (256u * 1024)

/* The uncompressed size of a cached layer, as the blob itself says: an uncompressed tar
 * is its size, a gzip member ends with its size (mod 2^32), a zstd frame may carry it in
 * its header. 0 when it does not say (or says less than the blob: a multi-member gzip or a
 * size past 4 GiB, several zstd frames), or the blob is not cached. */
static uint64_t cached_uncompressed(fpull_cache *cache, const struct fpull_descriptor *d)
{
  int comp = fpull_layer_compression(d->media_type);
  uint64_t size = (uint64_t)d->size;
  if (!cache || comp < 0 || !fpull_cache_has_blob(cache, d->digest, d->size))
    return 0;
  if (comp == 0)
    return size;
  cleanup_free char *path = fpull_cache_blob_path(cache, d->digest);
  cleanup_close int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  unsigned char b[18];
  uint64_t n = 0;
  if (fd < 0 || size < sizeof b)
    return 0;
  if (comp == 1) {
    if (pread(fd, b, 4, (off_t)(size - 4)) != 4)
      return 0;
    n = (uint64_t)b[0] | (uint64_t)b[1] << 8 | (uint64_t)b[2] << 16 | (uint64_t)b[3] << 24;
  } else {
    if (pread(fd, b, sizeof b, 0) != (ssize_t)sizeof b || b[0] != 0x28 || b[1] != 0xb5 ||
        b[2] != 0x2f || b[3] != 0xfd)
      return 0;
    unsigned fhd = b[4], fcs_flag = fhd >> 6, single = (fhd >> 5) & 1;
    static const unsigned dict_len[] = {0, 1, 2, 4}, fcs_len[] = {0, 2, 4, 8};
    size_t at = 5 + (single ? 0 : 1) + dict_len[fhd & 3];
    size_t len = fcs_flag == 0 ? (single ? 1 : 0) : fcs_len[fcs_flag];
    if (!len)
      return 0;
    for (size_t i = 0; i < len; i++)
      n |= (uint64_t)b[at + i] << (8 * i);
    if (len == 2)
      n += 256;
  }
  return n >= size ? n : 0;
}

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
  uint64_t total = 0, unpacked = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    uint64_t size = (uint64_t)m->layers[i].size;
    total += size;
    if (!cache || !fpull_cache_has_blob(cache, m->layers[i].digest, m->layers[i].size))
      sp->cache_need += size;
    if (format == FPULL_FORMAT_DIR) {
      uint64_t known = cached_uncompressed(cache, &m->layers[i]);
      unpacked += known ? known : size * ROOTFS_FACTOR;
    }
  }
  if (format == FP_SPACE_LAYOUT)
    sp->dest_need = total + (uint64_t)m->config.size + LAYOUT_SLACK;
  else
    sp->dest_need = format == FPULL_FORMAT_DIR ? unpacked : total;
  if (!dest)
    sp->dest_need = 0;
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
  uint64_t cfree = 0, dfree = 0;
  dev_t cdev = 0, ddev = 0;
  int have_c = sp->cache_dir && fs_of(sp->cache_dir, &cdev, &cfree) == 0;
  int have_d = sp->dest && fs_of(sp->dest, &ddev, &dfree) == 0;
  /* Pruning the cache makes room for DEST only on the cache's own file system; elsewhere
   * it helps only when the cache's file system is what filled up. */
  int prune = have_c && (!have_d || cdev == ddev || cfree < sp->cache_need + (1u << 20));
  size_t len = strlen(err->msg);
  snprintf(err->msg + len, sizeof err->msg - len,
           " (%s needs about %llu MB and %llu MB are free there; the cache needs %llu MB more "
           "and %llu MB are free for it%s)",
           sp->dest ? sp->dest : "DEST", mb(sp->dest_need), have_d ? mb_free(dfree) : 0ull,
           mb(sp->cache_need), have_c ? mb_free(cfree) : 0ull,
           prune ? "; 'fpull cache prune' frees cache space" : "");
}
