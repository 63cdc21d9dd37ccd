/* The SquashFS image as a file (see sqfs_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqfs/error.h>

#include "sqfs_file.h"
#include "base/util.h"

static void fd_file_destroy(sqfs_object_t *o)
{
  free(o);
}

static int fd_file_read_at(sqfs_file_t *f, sqfs_u64 off, void *buf, size_t n)
{
  struct fp_fd_file *ff = (struct fp_fd_file *)f;
  char *p = buf;
  while (n) {
    ssize_t r = pread(ff->fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r == 0 ? SQFS_ERROR_OUT_OF_BOUNDS : SQFS_ERROR_IO;
    p += r;
    off += (sqfs_u64)r;
    n -= (size_t)r;
  }
  return 0;
}

static int fd_file_write_at(sqfs_file_t *f, sqfs_u64 off, const void *buf, size_t n)
{
  struct fp_fd_file *ff = (struct fp_fd_file *)f;
  const char *p = buf;
  uint64_t end = off + n;
  while (n) {
    ssize_t r = pwrite(ff->fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      if (!ff->error)
        ff->error = errno;
      return SQFS_ERROR_IO;
    }
    p += r;
    off += (sqfs_u64)r;
    n -= (size_t)r;
  }
  if (end > ff->size)
    ff->size = end;
  return 0;
}

static sqfs_u64 fd_file_get_size(const sqfs_file_t *f)
{
  return ((const struct fp_fd_file *)f)->size;
}

static int fd_file_truncate(sqfs_file_t *f, sqfs_u64 size)
{
  struct fp_fd_file *ff = (struct fp_fd_file *)f;
  if (ftruncate(ff->fd, (off_t)size) < 0) {
    if (!ff->error)
      ff->error = errno;
    return SQFS_ERROR_IO;
  }
  ff->size = size;
  return 0;
}

struct fp_fd_file *fp_fd_file_new(int fd)
{
  struct fp_fd_file *f = fp_xcalloc(1, sizeof *f);
  f->base.base.destroy = fd_file_destroy;
  f->base.read_at = fd_file_read_at;
  f->base.write_at = fd_file_write_at;
  f->base.get_size = fd_file_get_size;
  f->base.truncate = fd_file_truncate;
  f->fd = fd;
  return f;
}

/* ---- the image file beside DEST, renamed in when complete ---- */

#define TMP_TAG ".fpull-tmp-"

static void tmp_prefix(char *out, size_t cap, const char *base)
{
  snprintf(out, cap, ".%.*s" TMP_TAG, 200, base);
}

/* Temporary images of earlier runs that were killed: a live run holds a lock on its own. */
static void remove_leftovers(int pfd, const char *base)
{
  char prefix[NAME_MAX + 1];
  tmp_prefix(prefix, sizeof prefix, base);
  cleanup_strv char **names = fp_dest_names_with_prefix(pfd, prefix);
  for (size_t i = 0; names && names[i]; i++) {
    struct stat st;
    /* Only our own regular files are opened: never a FIFO or a device someone put here. */
    if (fstatat(pfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid())
      continue;
    cleanup_close int fd = openat(pfd, names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        flock(fd, LOCK_EX | LOCK_NB) < 0)
      continue;
    fp_debug("removing %s left by an earlier run", names[i]);
    (void)unlinkat(pfd, names[i], 0);
  }
}

static int make_tmp(int pfd, const char *base, char *name, size_t cap, fpull_err *err)
{
  char prefix[NAME_MAX + 1];
  tmp_prefix(prefix, sizeof prefix, base);
  int fd = fp_dest_create_random(pfd, prefix, 0644, name, cap);
  if (fd < 0 && errno == EEXIST)
    return fpull_err_set(err, FPULL_EFAIL, "cannot create an image file beside %s", base), -1;
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot create an image file beside %s: %s", base,
                         strerror(errno)),
           -1;
  if (flock(fd, LOCK_EX) < 0) {
    int saved = errno;
    close(fd);
    unlinkat(pfd, name, 0);
    return fpull_err_set(err, FPULL_EFAIL, "cannot lock %s: %s", name, strerror(saved)), -1;
  }
  return fd;
}

static int publish(int pfd, const char *tmp, const char *base, const char *dest, int exists,
                   fpull_err *err)
{
  if (!exists)
    return fp_dest_publish_new(pfd, tmp, base, dest, err);
  /* rename(2) replaces a file atomically: DEST is the old image, then the new one. */
  if (renameat(pfd, tmp, pfd, base) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot rename into %s: %s", dest, strerror(errno));
  return 0;
}

int fp_image_open(struct fp_image_dest *d, const char *dest, int force, int parents, fpull_err *err)
{
  memset(d, 0, sizeof *d);
  d->pfd = d->fd = -1;
  d->dest = dest;
  if (!dest || !*dest)
    return fpull_err_set(err, FPULL_EFAIL, "no destination file");
  int rc = fp_dest_split(&d->where, dest, 0, parents, err);
  if (rc)
    return rc;
  const char *parent = d->where.parent;
  d->pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (d->pfd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "cannot open %s: %s", parent, strerror(errno));
  remove_leftovers(d->pfd, d->where.base);
  rc = fp_dest_check(d->pfd, d->where.base, dest, S_IFREG, force, &d->exists, err);
  if (rc)
    return rc;
  d->fd = make_tmp(d->pfd, d->where.base, d->tmp, sizeof d->tmp, err);
  return d->fd < 0 ? (err ? err->code : FPULL_EFAIL) : 0;
}

int fp_image_publish(struct fp_image_dest *d, fpull_err *err)
{
  /* Not flushed to disk first, like the directory output, the cache's blobs and mksquashfs:
   * waiting for the whole image to reach the disk cost a pull on a loop-mounted ext4 half a
   * second to two seconds more. Errors are caught before this point, so a complete image is
   * all DEST can name; only a power failure within the kernel's writeback delay could lose
   * it, which sync(1) prevents for those who need it. */
  /* DEST may have changed while we worked: check again right before the rename. */
  int rc =
      d->exists ? fp_dest_check(d->pfd, d->where.base, d->dest, S_IFREG, 1, &d->exists, err) : 0;
  if (!rc)
    rc = publish(d->pfd, d->tmp, d->where.base, d->dest, d->exists, err);
  if (!rc)
    d->tmp[0] = '\0';
  return rc;
}

void fp_image_close(struct fp_image_dest *d)
{
  if (d->tmp[0] && d->pfd >= 0)
    (void)unlinkat(d->pfd, d->tmp, 0);
  if (d->fd >= 0)
    close(d->fd);
  if (d->pfd >= 0)
    close(d->pfd);
  fp_dest_free(&d->where);
  memset(d, 0, sizeof *d);
  d->pfd = d->fd = -1;
}
