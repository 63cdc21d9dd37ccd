/* The SquashFS sink: layers straight into one image file with libsquashfs, no tree on disk.
 *
 * Design: each layer is read once, as it arrives. A file's data goes into blocks
 * (sqfs_blocks.c, compressed on worker threads) the moment its entry is read, and its inode (block
 * sizes, fragment) stays in the in-memory tree (sqfs_tree.c), which applies the same
 * rules as the directory output: whiteouts, opaque directories, hardlinks, symlinks
 * resolved inside the root. Only when all layers are in are the inode, directory, fragment,
 * id and xattr tables written, from that tree. Data of a file that a later layer deletes or
 * replaces is cut out before that (sqfs_data.c: the blocks the final tree references are
 * moved down over it, counted in sqfs_dead_bytes), so the image holds what the final tree
 * references, as mksquashfs of the directory output would. Reading every layer twice
 * (names first, data second) would avoid compressing that data, at the price of a second
 * decompression of every layer and no overlap of unpacking with downloading; applying the
 * layers top-down would need the lower layers' symlinks before they are read. Moving the
 * live blocks costs one copy of the data after the first removed file, in the page cache. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqfs/block.h>
#include <sqfs/block_writer.h>
#include <sqfs/compressor.h>
#include <sqfs/dir_writer.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_writer.h>
#include <sqfs/super.h>
#include <sqfs/xattr_writer.h>

#include "unpack/entry_write.h"
#include "fpull/unpack.h"
#include "unpack/inroot.h"
#include "unpack/sink.h"
#include "sqfs_blocks.h"
#include "sqfs_config.h"
#include "sqfs_platform.h"
#include "sqfs_data.h"
#include "sqfs_file.h"
#include "sqfs_tree.h"
#include "unpack/unpack_internal.h"
#include "base/util.h"

/* ---- the sink ---- */

struct sqfs_sink {
  struct fp_sink base;
  struct fp_mtree tree;
  struct fp_fd_file *file;
  sqfs_compressor_t *cmp;
  sqfs_compressor_t *uncmp; /* reading a fragment block back, to share equal tails */
  sqfs_block_writer_t *bw;
  sqfs_frag_table_t *frags;
  struct fp_sqfs_blocks *bp;
  sqfs_id_table_t *ids;
  sqfs_xattr_writer_t *xw;
  sqfs_meta_writer_t *im, *dm;
  sqfs_dir_writer_t *dw;
  sqfs_super_t super;
  int privileged;
  uint32_t euid, egid;
  uint64_t max_file;
  unsigned since_check; /* entries since RSS was last read */
  size_t block;
  uint64_t data_start; /* where the first data block goes */
  uint32_t count;      /* inodes numbered */
  struct fpull_unpack_stats *stats;
  const struct fp_sqfs_image *image; /* the configuration to store too, or NULL */
};

/* A libsquashfs error as a message; a failed write says why. */
static int sq_fail(struct sqfs_sink *q, int ret, fpull_err *err, const char *what)
{
  if (ret == SQFS_ERROR_IO && q->file && q->file->error)
    return fpull_err_set(err, FPULL_EFAIL, "%s: %s", what, strerror(q->file->error));
  if (ret == SQFS_ERROR_ALLOC)
    return fpull_err_set(err, FPULL_EFAIL, "%s: out of memory", what);
  return fpull_err_set(err, FPULL_EFAIL, "%s: libsquashfs error %d", what, ret);
}

static void set_owner(const struct sqfs_sink *q, struct fp_minode *ino, struct archive_entry *e)
{
  /* As non-root the directory output's files belong to the caller: so do the image's. */
  ino->uid = q->privileged ? (uint32_t)archive_entry_uid(e) : q->euid;
  ino->gid = q->privileged ? (uint32_t)archive_entry_gid(e) : q->egid;
}

static void set_mtime(const struct sqfs_sink *q, struct fp_minode *ino, struct archive_entry *e)
{
  int64_t t = archive_entry_mtime_is_set(e) ? (int64_t)archive_entry_mtime(e) : q->tree.now;
  /* SquashFS keeps unsigned 32-bit seconds. */
  ino->mtime = t < 0 ? 0 : t > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

static void set_xattrs(struct sqfs_sink *q, struct fp_minode *ino, struct archive_entry *e)
{
  const char *name;
  const void *value;
  size_t size;
  if (archive_entry_xattr_reset(e) == 0)
    return;
  while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
    if (fp_xattr_allowed(name, size, q->privileged, q->stats))
      fp_mtree_xattr(&q->tree, ino, name, value, size);
    else
      q->stats->xattrs_skipped++;
  }
}

static int write_file(struct sqfs_sink *q, struct archive *a, struct archive_entry *e,
                      struct fp_minode *dir, const char *base, fpull_err *err)
{
  static const char zeros[65536];
  int64_t size = archive_entry_size(e);
  if (size < 0 || (uint64_t)size > q->max_file)
    return fpull_err_set(err, FPULL_EUNSAFE, "file size %lld over the layer's limit",
                         (long long)size);
  struct fp_minode *ino =
      fp_mtree_inode(&q->tree, S_IFREG | fp_entry_perm(e, q->privileged, q->stats));
  set_owner(q, ino, e);
  set_mtime(q, ino, e);
  set_xattrs(q, ino, e);
  int ret = fp_sqfs_blocks_begin(q->bp, &ino->sq);
  if (ret)
    return sq_fail(q, ret, err, "writing the image");
  fp_mtree_file(&q->tree, ino);
  const void *buf;
  size_t len;
  la_int64_t off;
  int64_t pos = 0;
  int r;
  while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
    /* Never past the size in the header: max-unpacked counted that (unpack.c). */
    if (off < pos || off > size || len > (uint64_t)(size - off))
      return fpull_err_set(err, FPULL_EUNSAFE, "bad sparse map");
    /* A hole: zeros, which sqfs_blocks.c stores as a sparse block. */
    while (pos < off) {
      size_t n = (size_t)(off - pos) < sizeof zeros ? (size_t)(off - pos) : sizeof zeros;
      if ((ret = fp_sqfs_blocks_append(q->bp, zeros, n)))
        return sq_fail(q, ret, err, "writing the image");
      pos += (int64_t)n;
    }
    if (len && (ret = fp_sqfs_blocks_append(q->bp, buf, len)))
      return sq_fail(q, ret, err, "writing the image");
    pos += (int64_t)len;
  }
  if (r != ARCHIVE_EOF)
    return fpull_err_set(err, FPULL_EUNSAFE, "corrupt layer: %s",
                         archive_error_string(a) ? archive_error_string(a) : "read error");
  while (pos < size) {
    size_t n = (size_t)(size - pos) < sizeof zeros ? (size_t)(size - pos) : sizeof zeros;
    if ((ret = fp_sqfs_blocks_append(q->bp, zeros, n)))
      return sq_fail(q, ret, err, "writing the image");
    pos += (int64_t)n;
  }
  if ((ret = fp_sqfs_blocks_end(q->bp)))
    return sq_fail(q, ret, err, "writing the image");
  ino->size = (uint64_t)pos;
  fp_mtree_link(&q->tree, dir, base, ino);
  return 0;
}

static int write_dir(struct sqfs_sink *q, struct archive_entry *e, struct fp_minode *dir,
                     const char *base)
{
  struct fp_mdirent *d = fp_mtree_lookup(&q->tree, dir, base);
  struct fp_minode *ino = d && S_ISDIR(d->ino->mode) ? d->ino : NULL;
  if (!ino) {
    ino = fp_mtree_inode(&q->tree, S_IFDIR);
    fp_mtree_link(&q->tree, dir, base, ino);
  }
  /* A directory onto a directory keeps it and its content; its metadata is the last
   * entry's, as the directory output applies it at the end. */
  ino->mode = S_IFDIR | (archive_entry_perm(e) & 07777);
  if (q->privileged) {
    ino->uid = (uint32_t)archive_entry_uid(e);
    ino->gid = (uint32_t)archive_entry_gid(e);
  }
  set_mtime(q, ino, e);
  set_xattrs(q, ino, e);
  return 0;
}

static int write_symlink(struct sqfs_sink *q, struct archive_entry *e, struct fp_minode *dir,
                         const char *base, fpull_err *err)
{
  const char *target = archive_entry_symlink(e);
  if (!target || !*target)
    return fpull_err_set(err, FPULL_EUNSAFE, "symlink with an empty target");
  if (strlen(target) > FP_PATH_MAX)
    return fpull_err_set(err, FPULL_EUNSAFE, "symlink target too long");
  struct fp_minode *ino = fp_mtree_inode(&q->tree, S_IFLNK | 0777);
  ino->target = fp_mtree_strdup(&q->tree, target);
  set_owner(q, ino, e);
  set_mtime(q, ino, e);
  if (archive_entry_xattr_count(e))
    q->stats->xattrs_skipped += (uint64_t)archive_entry_xattr_count(e);
  fp_mtree_link(&q->tree, dir, base, ino);
  return 0;
}

/* Every 256 entries or inodes: past the tree's resident bound (fp_mtree_over), the file
 * inodes whose blocks are all written go into the arena and the arena's pages are given
 * back; the data stays in its file. */
static int check_memory(struct sqfs_sink *q, fpull_err *err)
{
  if (q->tree.spill_errno)
    return fpull_err_set(err, FPULL_EFAIL, "cannot grow the image's temporary tree file: %s",
                         strerror(q->tree.spill_errno));
  if (++q->since_check < 256)
    return 0;
  q->since_check = 0;
  uint64_t rss = fp_mtree_over(&q->tree);
  if (!rss)
    return 0;
  if (fp_sqfs_blocks_sync(q->bp) == 0)
    fp_mtree_compact(&q->tree, q->block);
  fp_mtree_release(&q->tree);
  fp_debug("squashfs: %llu MiB resident, %llu MiB after moving the tree out to its file",
           (unsigned long long)(rss >> 20), (unsigned long long)(q->tree.rss_after_release >> 20));
  return 0;
}

/* Is dir the directory d or below it? */
static int is_below(const struct fp_mtree *t, const struct fp_minode *dir,
                    const struct fp_minode *d)
{
  for (;; dir = dir->parent) {
    if (dir == d)
      return 1;
    if (dir == t->root)
      return 0;
  }
}

static int write_hardlink(struct sqfs_sink *q, struct archive_entry *e, const char *path,
                          struct fp_minode *dir, const char *base, fpull_err *err)
{
  char target[FP_PATH_MAX + 1];
  const char *why, *tbase;
  if (fp_path_clean(archive_entry_hardlink(e), target, &why) < 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink target: %s", why);
  if (!*target)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink to the root directory");
  if (strcmp(target, path) == 0)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink to itself");
  /* The target's directories are followed inside the root, its last component is not: a
   * hardlink to a symlink links the symlink. */
  struct fp_minode *tdir = fp_mtree_parent(&q->tree, target, 0, &tbase);
  struct fp_mdirent *td = tdir ? fp_mtree_lookup(&q->tree, tdir, tbase) : NULL;
  if (!td)
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink target does not exist: %s",
                         strerror(tdir ? ENOENT : errno));
  if (S_ISDIR(td->ino->mode))
    return fpull_err_set(err, FPULL_EUNSAFE, "hardlink to a directory");
  struct fp_mdirent *old = fp_mtree_lookup(&q->tree, dir, base);
  if (old && old->ino == td->ino)
    return 0;
  /* Replacing a directory that holds the target takes the target away first, as on disk. */
  if (old && S_ISDIR(old->ino->mode) && is_below(&q->tree, tdir, old->ino))
    return fpull_err_set(err, FPULL_EFAIL, "cannot link: %s", strerror(ENOENT));
  fp_mtree_link(&q->tree, dir, base, td->ino);
  return 0;
}

static int write_node(struct sqfs_sink *q, struct archive_entry *e, struct fp_minode *dir,
                      const char *base, fpull_err *err)
{
  mode_t type = archive_entry_filetype(e);
  int make;
  unsigned long maj, min;
  int rc = fp_entry_node(e, q->privileged, q->stats, &make, &maj, &min, err);
  if (rc || !make)
    return rc;
  /* The kernel's new_encode_dev, which SquashFS stores (0 for a FIFO). */
  uint32_t rdev = (uint32_t)((min & 0xff) | (maj << 8) | ((min & ~0xfful) << 12));
  mode_t ft = type == AE_IFIFO ? S_IFIFO : type == AE_IFCHR ? S_IFCHR : S_IFBLK;
  struct fp_minode *ino = fp_mtree_inode(&q->tree, ft | fp_entry_perm(e, q->privileged, q->stats));
  ino->rdev = rdev;
  set_owner(q, ino, e);
  set_mtime(q, ino, e);
  fp_mtree_link(&q->tree, dir, base, ino);
  return 0;
}

static int sq_entry(struct fp_sink *s, struct archive *a, struct archive_entry *e, const char *path,
                    fpull_err *err)
{
  struct sqfs_sink *q = (struct sqfs_sink *)s;
  int rc = fp_entry_check(e, path, err);
  if (rc)
    return rc == FP_ENTRY_ROOT ? 0 : rc;
  const char *base;
  struct fp_minode *dir = fp_mtree_parent(&q->tree, path, 1, &base);
  if (!dir)
    return fp_entry_parent_error(path, err);
  fp_mtree_touch(&q->tree, dir);
  mode_t type = archive_entry_filetype(e);
  if (archive_entry_hardlink(e))
    rc = write_hardlink(q, e, path, dir, base, err);
  else if (type == AE_IFREG)
    rc = write_file(q, a, e, dir, base, err);
  else if (type == AE_IFDIR)
    rc = write_dir(q, e, dir, base);
  else if (type == AE_IFLNK)
    rc = write_symlink(q, e, dir, base, err);
  else
    rc = write_node(q, e, dir, base, err);
  struct fp_mdirent *d;
  if (rc == 0 && (d = fp_mtree_lookup(&q->tree, dir, base)) != NULL)
    d->layer = q->tree.layer;
  if (rc == 0)
    rc = check_memory(q, err);
  return rc;
}

static void sq_layer_begin(struct fp_sink *s)
{
  ((struct sqfs_sink *)s)->tree.layer++;
}

static int sq_whiteout(struct fp_sink *s, const char *dir, const char *name)
{
  return fp_mtree_whiteout(&((struct sqfs_sink *)s)->tree, dir, name);
}

static int sq_opaque(struct fp_sink *s, const char *dir)
{
  return fp_mtree_opaque(&((struct sqfs_sink *)s)->tree, dir);
}

/* ---- the image's configuration, once every layer is in (sqfs_config.h) ---- */

/* data as the regular file path, replacing what the layers left there unless it is a
 * directory (enroot's import could not write it either: warned). *added: 1 when written. */
static int add_file(struct sqfs_sink *q, const char *path, const struct fp_buf *data, int *added,
                    fpull_err *err)
{
  *added = 0;
  const char *base;
  struct fp_minode *dir = fp_mtree_parent(&q->tree, path, 1, &base);
  struct fp_mdirent *old = dir ? fp_mtree_lookup(&q->tree, dir, base) : NULL;
  if (!dir || (old && S_ISDIR(old->ino->mode))) {
    fp_warn("the image's /%s is not written: %s", path,
            dir ? "a directory is there" : strerror(errno));
    return 0;
  }
  struct fp_minode *ino = fp_mtree_inode(&q->tree, S_IFREG | 0644);
  ino->uid = q->euid;
  ino->gid = q->egid;
  ino->mtime = q->tree.now;
  int ret = fp_sqfs_blocks_begin(q->bp, &ino->sq);
  if (ret)
    return sq_fail(q, ret, err, "writing the image");
  fp_mtree_file(&q->tree, ino);
  if ((data->len && (ret = fp_sqfs_blocks_append(q->bp, data->data, data->len))) ||
      (ret = fp_sqfs_blocks_end(q->bp)))
    return sq_fail(q, ret, err, "writing the image");
  ino->size = data->len;
  fp_mtree_link(&q->tree, dir, base, ino)->layer = q->tree.layer;
  *added = 1;
  return 0;
}

/* WorkingDir made where the image lacks it, as enroot's import does (enroot start's
 * `mkdir -p` fails on the read-only image). 1 when made, else 0. */
static int add_workdir(struct sqfs_sink *q, const char *path)
{
  struct fp_minode *ino = fp_mtree_open(&q->tree, path);
  if (ino && S_ISDIR(ino->mode))
    return 0;
  const char *base;
  struct fp_minode *dir = ino ? NULL : fp_mtree_parent(&q->tree, path, 1, &base);
  if (!dir || fp_mtree_lookup(&q->tree, dir, base)) {
    fp_warn("the image's WorkingDir /%s cannot be made: %s", path,
            ino || dir ? "something else is there" : strerror(errno));
    return 0;
  }
  ino = fp_mtree_inode(&q->tree, S_IFDIR | 0755);
  ino->uid = q->tree.implicit_uid;
  ino->gid = q->tree.implicit_gid;
  ino->mtime = q->tree.now;
  fp_mtree_link(&q->tree, dir, base, ino)->layer = q->tree.layer;
  return 1;
}

static int add_config(struct sqfs_sink *q, fpull_err *err)
{
  struct fp_sqfs_config c;
  int rc = fp_sqfs_config_make(&c, q->image->config, q->image->config_len, q->image->source, err);
  for (size_t i = 0; rc == 0 && i < FP_SQFS_CONFIG_FILES; i++) {
    int added;
    rc = add_file(q, c.files[i].path, &c.files[i].data, &added, err);
    q->stats->entries += (uint64_t)added;
  }
  if (rc == 0 && c.workdir)
    q->stats->entries += (uint64_t)add_workdir(q, c.workdir);
  /* What the file was made from, for a node to check that it covers it (sqfs_platform.h). */
  if (rc == 0 && q->image->manifest_digest) {
    cleanup_free char *json = fp_sqfs_platform_json(q->image->reference, q->image->index_digest,
                                                    q->image->manifest_digest, q->image->platform);
    struct fp_buf b = {0};
    fp_buf_append(&b, json, strlen(json));
    int added;
    rc = add_file(q, FP_SQFS_PLATFORM_PATH, &b, &added, err);
    q->stats->entries += (uint64_t)added;
    fp_buf_free(&b);
  }
  if (rc == 0 && c.dropped)
    fp_warn("%llu Env entr%s or Volume%s of the image not stored in its /etc/environment or "
            "/etc/fstab: a newline or character enroot's format cannot hold",
            (unsigned long long)c.dropped, c.dropped == 1 ? "y" : "ies", c.dropped == 1 ? "" : "s");
  fp_sqfs_config_free(&c);
  return rc;
}

/* ---- the tables, once every layer is in ---- */

static int cmp_dirent(const void *a, const void *b, void *tree)
{
  fp_mtree_tick(tree);
  return strcmp((*(struct fp_mdirent *const *)a)->name, (*(struct fp_mdirent *const *)b)->name);
}

/* The names of dir in SquashFS order (sorted by bytes); free the array. */
static struct fp_mdirent **sorted(struct fp_mtree *t, const struct fp_minode *dir)
{
  struct fp_mdirent **v = fp_xmalloc((dir->nchildren ? dir->nchildren : 1) * sizeof *v);
  size_t i = 0;
  for (struct fp_mdirent *d = dir->first; d; d = d->next) {
    fp_mtree_tick(t);
    v[i++] = d;
  }
  qsort_r(v, i, sizeof *v, cmp_dirent, t);
  return v;
}

/* Children before their directory, so a directory's listing can name their inodes; the
 * root last. Depth is bounded by FP_PATH_MAX / 2. */
static void number(struct sqfs_sink *q, struct fp_minode *dir)
{
  for (struct fp_mdirent *d = dir->first; d; d = d->next) {
    if (S_ISDIR(d->ino->mode))
      number(q, d->ino);
    else if (!d->ino->ino_num)
      d->ino->ino_num = ++q->count;
    (void)check_memory(q, NULL);
  }
  dir->ino_num = ++q->count;
}

static int finish_inode(struct sqfs_sink *q, struct fp_minode *ino, sqfs_inode_generic_t *sq,
                        fpull_err *err)
{
  int ret;
  sq->base.mode = (sqfs_u16)ino->mode;
  sq->base.mod_time = ino->mtime;
  sq->base.inode_number = ino->ino_num;
  if ((ret = sqfs_id_table_id_to_index(q->ids, ino->uid, &sq->base.uid_idx)) ||
      (ret = sqfs_id_table_id_to_index(q->ids, ino->gid, &sq->base.gid_idx)))
    return sq_fail(q, ret, err, "id table");
  sqfs_u64 block;
  sqfs_u32 offset;
  sqfs_meta_writer_get_position(q->im, &block, &offset);
  ino->ref = ((sqfs_u64)block << 16) | offset;
  if ((ret = sqfs_meta_writer_write_inode(q->im, sq)))
    return sq_fail(q, ret, err, "writing the inode table");
  ino->written = 1;
  return 0;
}

static int xattr_index(struct sqfs_sink *q, const struct fp_minode *ino, sqfs_u32 *idx,
                       fpull_err *err)
{
  int ret;
  *idx = 0xFFFFFFFF;
  if (!ino->xattrs)
    return 0;
  if ((ret = sqfs_xattr_writer_begin(q->xw, 0)))
    return sq_fail(q, ret, err, "xattrs");
  for (const struct fp_mxattr *x = ino->xattrs; x; x = x->next)
    if ((ret = sqfs_xattr_writer_add(q->xw, x->name, x->value, x->size)))
      return sq_fail(q, ret, err, "xattrs");
  if ((ret = sqfs_xattr_writer_end(q->xw, idx)))
    return sq_fail(q, ret, err, "xattrs");
  return 0;
}

static int write_leaf(struct sqfs_sink *q, struct fp_minode *ino, fpull_err *err)
{
  sqfs_u32 xi;
  (void)check_memory(q, NULL);
  int rc = xattr_index(q, ino, &xi, err);
  if (rc)
    return rc;
  size_t tlen = ino->target ? strlen(ino->target) : 0;
  cleanup_free sqfs_inode_generic_t *own = NULL;
  sqfs_inode_generic_t *sq = ino->sq;
  if (S_ISREG(ino->mode)) {
    if (!sq)
      return fpull_err_set(err, FPULL_EFAIL, "file without an inode");
  } else {
    sq = own = fp_xcalloc(1, sizeof *sq + tlen + 1);
    if (S_ISLNK(ino->mode)) {
      sq->base.type = SQFS_INODE_SLINK;
      sq->data.slink.nlink = ino->nlink;
      sq->data.slink.target_size = (sqfs_u32)tlen;
      sq->payload_bytes_available = sq->payload_bytes_used = (sqfs_u32)tlen;
      memcpy(sq->extra, ino->target, tlen);
    } else if (S_ISFIFO(ino->mode)) {
      sq->base.type = SQFS_INODE_FIFO;
      sq->data.ipc.nlink = ino->nlink;
    } else {
      sq->base.type = S_ISCHR(ino->mode) ? SQFS_INODE_CDEV : SQFS_INODE_BDEV;
      sq->data.dev.nlink = ino->nlink;
      sq->data.dev.devno = ino->rdev;
    }
  }
  if (xi != 0xFFFFFFFF && sqfs_inode_set_xattr_index(sq, xi))
    return fpull_err_set(err, FPULL_EFAIL, "xattrs: bad inode type");
  if (S_ISREG(ino->mode) && ino->nlink > 1) {
    /* Only the extended file inode has a link count. */
    sqfs_inode_make_extended(sq);
    sq->data.file_ext.nlink = ino->nlink;
  }
  return finish_inode(q, ino, sq, err);
}

static int write_dir_inode(struct sqfs_sink *q, struct fp_minode *dir, fpull_err *err)
{
  cleanup_free struct fp_mdirent **v = sorted(&q->tree, dir);
  size_t subdirs = 0;
  int rc, ret;
  for (size_t i = 0; i < dir->nchildren; i++) {
    struct fp_minode *c = v[i]->ino;
    if (S_ISDIR(c->mode)) {
      subdirs++;
      if ((rc = write_dir_inode(q, c, err)))
        return rc;
    } else if (!c->written && (rc = write_leaf(q, c, err))) {
      return rc;
    }
  }
  if ((ret = sqfs_dir_writer_begin(q->dw, 0)))
    return sq_fail(q, ret, err, "directory table");
  for (size_t i = 0; i < dir->nchildren; i++)
    if ((fp_mtree_tick(&q->tree),
         ret = sqfs_dir_writer_add_entry(q->dw, v[i]->name, v[i]->ino->ino_num, v[i]->ino->ref,
                                         (sqfs_u16)v[i]->ino->mode)))
      return sq_fail(q, ret, err, "directory table");
  if ((ret = sqfs_dir_writer_end(q->dw)))
    return sq_fail(q, ret, err, "directory table");
  sqfs_u32 xi;
  if ((rc = xattr_index(q, dir, &xi, err)))
    return rc;
  sqfs_u32 parent = dir == q->tree.root ? q->count + 1 : dir->parent->ino_num;
  sqfs_inode_generic_t *sq = sqfs_dir_writer_create_inode(q->dw, 2 + subdirs, xi, parent);
  if (!sq)
    return fpull_err_set(err, FPULL_EFAIL, "directory table: out of memory");
  rc = finish_inode(q, dir, sq, err);
  sqfs_free(sq);
  return rc;
}

static int pad_to_devblk(struct sqfs_sink *q, fpull_err *err)
{
  static const char zeros[SQFS_DEVBLK_SIZE];
  uint64_t size = q->file->base.get_size(&q->file->base);
  size_t pad = (size_t)((SQFS_DEVBLK_SIZE - size % SQFS_DEVBLK_SIZE) % SQFS_DEVBLK_SIZE);
  int ret = pad ? q->file->base.write_at(&q->file->base, size, zeros, pad) : 0;
  return ret ? sq_fail(q, ret, err, "writing the image") : 0;
}

static int sq_finish(struct fp_sink *s, fpull_err *err)
{
  struct sqfs_sink *q = (struct sqfs_sink *)s;
  sqfs_file_t *f = &q->file->base;
  int ret, rc;
  if (q->image && (rc = add_config(q, err)))
    return rc;
  if ((ret = fp_sqfs_blocks_finish(q->bp)))
    return sq_fail(q, ret, err, "writing the image");
  q->stats->sqfs_dead_bytes = q->tree.dead_bytes;
  if (q->tree.dead_bytes) {
    uint64_t cut;
    if ((rc = fp_sqfs_compact(&q->tree, q->frags, q->file, q->data_start, &cut, err)))
      return rc;
    fp_debug("squashfs: %llu bytes of the image cut out (the data of removed files)",
             (unsigned long long)cut);
  }
  q->im = sqfs_meta_writer_create(f, q->cmp, 0);
  q->dm = sqfs_meta_writer_create(f, q->cmp, SQFS_META_WRITER_KEEP_IN_MEMORY);
  q->dw = q->dm ? sqfs_dir_writer_create(q->dm, 0) : NULL;
  if (!q->im || !q->dw)
    return fpull_err_set(err, FPULL_EFAIL, "writing the image: out of memory");
  number(q, q->tree.root);
  q->super.inode_table_start = f->get_size(f);
  if ((rc = write_dir_inode(q, q->tree.root, err)))
    return rc;
  q->super.root_inode_ref = q->tree.root->ref;
  q->super.inode_count = q->count;
  if ((ret = sqfs_meta_writer_flush(q->im)) || (ret = sqfs_meta_writer_flush(q->dm)))
    return sq_fail(q, ret, err, "writing the tables");
  q->super.directory_table_start = f->get_size(f);
  if ((ret = sqfs_meta_write_write_to_file(q->dm)) ||
      (ret = sqfs_frag_table_write(q->frags, f, &q->super, q->cmp)) ||
      (ret = sqfs_id_table_write(q->ids, f, &q->super, q->cmp)) ||
      (ret = sqfs_xattr_writer_flush(q->xw, f, &q->super, q->cmp)))
    return sq_fail(q, ret, err, "writing the tables");
  q->super.bytes_used = f->get_size(f);
  if ((rc = pad_to_devblk(q, err)))
    return rc;
  if ((ret = sqfs_super_write(&q->super, f)))
    return sq_fail(q, ret, err, "writing the superblock");
  q->stats->sqfs_image_bytes = f->get_size(f);
  return 0;
}

static const struct fp_sink_ops sqfs_sink_ops = {
    .layer_begin = sq_layer_begin,
    .entry = sq_entry,
    .whiteout = sq_whiteout,
    .opaque = sq_opaque,
    .finish = sq_finish,
};

/* ---- setting up and tearing down ---- */

unsigned fpull_sqfs_threads(unsigned asked)
{
  cpu_set_t set;
  unsigned n = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    n = (unsigned)CPU_COUNT(&set);
  return asked && asked < n ? asked : n;
}

static void sink_free(struct sqfs_sink *q)
{
  /* The blocks first: they point into the tree's file inodes. */
  fp_sqfs_blocks_free(q->bp);
  sqfs_destroy(q->dw);
  sqfs_destroy(q->dm);
  sqfs_destroy(q->im);
  sqfs_destroy(q->bw);
  sqfs_destroy(q->frags);
  sqfs_destroy(q->ids);
  sqfs_destroy(q->xw);
  sqfs_destroy(q->cmp);
  sqfs_destroy(q->uncmp);
  sqfs_destroy(q->file);
  fp_mtree_free(&q->tree);
}

/* cfg for the options; *none: store everything uncompressed (cfg then names gzip, the
 * compressor every reader has, as mksquashfs records for -noI -noD -noF -noX). */
static int compressor_config(sqfs_compressor_config_t *cfg, int *none,
                             const struct fpull_sqfs_opts *so, size_t block, fpull_err *err)
{
  const char *name = so->compressor ? so->compressor : "zstd";
  *none = strcmp(name, "none") == 0;
  int id = strcmp(name, "zstd") == 0            ? SQFS_COMP_ZSTD
           : strcmp(name, "gzip") == 0 || *none ? SQFS_COMP_GZIP
           : strcmp(name, "xz") == 0            ? SQFS_COMP_XZ
           : strcmp(name, "lz4") == 0           ? SQFS_COMP_LZ4
                                                : -1;
  if (id < 0)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "unknown squashfs compressor '%s' (zstd, gzip, xz, lz4 or none)", name);
  if (sqfs_compressor_config_init(cfg, (SQFS_COMPRESSOR)id, block, 0))
    return fpull_err_set(err, FPULL_EUSAGE, "squashfs compressor %s is not available", name);
  if (!so->level) {
    /* fpull's default is a fast one (see FPULL_SQFS_ZSTD_LEVEL); the others keep theirs. */
    if (id == SQFS_COMP_ZSTD)
      cfg->level = FPULL_SQFS_ZSTD_LEVEL;
    return 0;
  }
  int lo = 0, hi = 0;
  if (id == SQFS_COMP_ZSTD)
    lo = SQFS_ZSTD_MIN_LEVEL, hi = SQFS_ZSTD_MAX_LEVEL;
  else if (id == SQFS_COMP_GZIP && !*none)
    lo = SQFS_GZIP_MIN_LEVEL, hi = SQFS_GZIP_MAX_LEVEL;
  else if (id == SQFS_COMP_XZ)
    lo = 1, hi = SQFS_XZ_MAX_LEVEL; /* 0 is "the default" in fpull_sqfs_opts */
  if (so->level < lo || so->level > hi || hi == 0)
    return hi ? fpull_err_set(err, FPULL_EUSAGE, "squashfs compression level %d: %s takes %d to %d",
                              so->level, name, lo, hi)
              : fpull_err_set(err, FPULL_EUSAGE, "squashfs compressor %s has no levels", name);
  cfg->level = (sqfs_u32)so->level;
  return 0;
}

static int check_block(size_t block, fpull_err *err)
{
  if (block < 4096 || block > (1u << 20) || (block & (block - 1)))
    return fpull_err_set(err, FPULL_EUSAGE,
                         "squashfs block size %zu: a power of two from 4096 to 1048576", block);
  return 0;
}

int fpull_sqfs_opts_check(const struct fpull_sqfs_opts *so, fpull_err *err)
{
  size_t block = so->block_size ? so->block_size : FPULL_SQFS_BLOCK_SIZE;
  sqfs_compressor_config_t cfg;
  int none, rc = check_block(block, err);
  return rc ? rc : compressor_config(&cfg, &none, so, block, err);
}

static int sink_init(struct sqfs_sink *q, const struct fp_image_dest *d,
                     const struct fpull_unpack_opts *o, struct fpull_unpack_stats *stats,
                     fpull_err *err)
{
  const struct fpull_sqfs_opts *so = &o->sqfs;
  size_t block = so->block_size ? so->block_size : FPULL_SQFS_BLOCK_SIZE;
  memset(q, 0, sizeof *q);
  q->base.ops = &sqfs_sink_ops;
  q->stats = stats;
  q->privileged = fp_priv_policy(o, 1);
  q->euid = (uint32_t)geteuid();
  q->egid = (uint32_t)getegid();
  q->max_file = o->max_bytes ? o->max_bytes : FPULL_UNPACK_MAX_BYTES;
  q->block = block;
  uint32_t now = (uint32_t)time(NULL);
  fp_mtree_init(&q->tree, q->euid, q->egid, now, d->pfd, d->where.parent);
  q->tree.max_resident = so->max_resident ? so->max_resident : FPULL_SQFS_MAX_RESIDENT;
  sqfs_compressor_config_t cfg;
  int none, ret = 0, rc = check_block(block, err);
  if (!rc)
    rc = compressor_config(&cfg, &none, so, block, err);
  if (rc)
    return rc;
  if (none)
    q->cmp = fp_sqfs_none_create(&cfg);
  else
    ret = sqfs_compressor_create(&cfg, &q->cmp);
  if (ret || !q->cmp)
    return fpull_err_set(err, FPULL_EUSAGE, "squashfs compressor: libsquashfs error %d", ret);
  if (!none) {
    sqfs_compressor_config_t ucfg = cfg;
    ucfg.flags |= SQFS_COMP_FLAG_UNCOMPRESS;
    if ((ret = sqfs_compressor_create(&ucfg, &q->uncmp)))
      return fpull_err_set(err, FPULL_EUSAGE, "squashfs decompressor: libsquashfs error %d", ret);
  }
  q->file = fp_fd_file_new(d->fd);
  sqfs_file_t *f = &q->file->base;
  if (sqfs_super_init(&q->super, block, now, (SQFS_COMPRESSOR)cfg.id))
    return fpull_err_set(err, FPULL_EUSAGE, "squashfs block size %zu not accepted", block);
  /* The superblock is written again at the end, with the tables' places. */
  if ((ret = sqfs_super_write(&q->super, f)))
    return sq_fail(q, ret, err, "writing the image");
  ret = q->cmp->write_options(q->cmp, f);
  if (ret < 0)
    return sq_fail(q, ret, err, "writing the image");
  if (ret > 0)
    q->super.flags |= SQFS_FLAG_COMPRESSOR_OPTIONS;
  if (none)
    q->super.flags |= FP_SQFS_UNCOMPRESSED_FLAGS;
  q->data_start = f->get_size(f);
  unsigned threads = fpull_sqfs_threads(so->threads);
  /* Blocks in flight, each held compressed and not: 64 MiB at most. */
  size_t backlog = threads * 4 + 2;
  if (backlog * block > (32u << 20))
    backlog = (32u << 20) / block;
  if (backlog < threads + 1)
    backlog = threads + 1;
  q->bw = sqfs_block_writer_create(f, SQFS_DEVBLK_SIZE, 0);
  q->frags = sqfs_frag_table_create(0);
  q->ids = sqfs_id_table_create(0);
  q->xw = sqfs_xattr_writer_create(0);
  if (!q->bw || !q->frags || !q->ids || !q->xw)
    return fpull_err_set(err, FPULL_EFAIL, "libsquashfs: out of memory");
  struct fp_sqfs_blocks_desc desc = {
      .block = block,
      .workers = threads,
      .backlog = backlog,
      .cmp = q->cmp,
      .uncmp = q->uncmp,
      .bw = q->bw,
      .frags = q->frags,
      .file = f,
  };
  if ((ret = fp_sqfs_blocks_new(&q->bp, &desc)))
    return sq_fail(q, ret, err, "starting the compressor threads");
  fp_debug("squashfs: %s level %u, block size %zu, %u thread(s)",
           none ? "none" : sqfs_compressor_name_from_id(cfg.id), none ? 0 : (unsigned)cfg.level,
           block, threads);
  return 0;
}

int fpull_unpack_squashfs(const char *dest, const struct fpull_layer *layers, size_t n,
                          const struct fpull_unpack_opts *opts, struct fpull_unpack_stats *stats,
                          fpull_err *err)
{
  return fp_unpack_squashfs_image(dest, layers, n, opts, NULL, stats, err);
}

int fp_unpack_squashfs_image(const char *dest, const struct fpull_layer *layers, size_t n,
                             const struct fpull_unpack_opts *opts, const struct fp_sqfs_image *img,
                             struct fpull_unpack_stats *stats, fpull_err *err)
{
  struct fpull_unpack_opts o = {0};
  struct fpull_unpack_stats local;
  if (opts)
    o = *opts;
  if (!stats)
    stats = &local;
  memset(stats, 0, sizeof *stats);
  if (o.keep_privileged && fp_priv_policy(&o, 1) == 0)
    return fpull_err_set(err, FPULL_EUSAGE,
                         "keeping setuid bits, capabilities and devices in an image needs root");
  struct fp_image_dest d;
  int rc = fp_image_open(&d, dest, o.force, fp_dest_parents(opts), err);
  if (!rc) {
    struct sqfs_sink q;
    rc = sink_init(&q, &d, &o, stats, err);
    q.image = img;
    if (!rc)
      rc = fp_unpack_feed(&q.base, layers, n, &o, stats, err);
    sink_free(&q);
  }
  if (!rc)
    rc = fp_image_publish(&d, err);
  fp_image_close(&d);
  return rc;
}
