/* The image's data beyond what libsquashfs does (see sqfs_data.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqfs/block.h>
#include <sqfs/error.h>
#include <sqfs/inode.h>
#include <sqfs/super.h>

#include "sqfs_data.h"
#include "base/util.h"

/* ---- no compression ---- */

struct none_cmp {
  sqfs_compressor_t base;
  sqfs_compressor_config_t cfg;
};

static void none_destroy(sqfs_object_t *o)
{
  free(o);
}

static sqfs_object_t *none_copy(const sqfs_object_t *o)
{
  struct none_cmp *c = malloc(sizeof *c);
  if (c)
    memcpy(c, o, sizeof *c);
  return c ? &c->base.base : NULL;
}

static void none_get_configuration(const sqfs_compressor_t *cmp, sqfs_compressor_config_t *cfg)
{
  *cfg = ((const struct none_cmp *)cmp)->cfg;
}

static int none_options(sqfs_compressor_t *cmp, sqfs_file_t *file)
{
  (void)cmp;
  (void)file;
  return 0;
}

/* 0: "not smaller than the input", so the block is stored as it is. */
static sqfs_s32 none_do_block(sqfs_compressor_t *cmp, const sqfs_u8 *in, sqfs_u32 size,
                              sqfs_u8 *out, sqfs_u32 outsize)
{
  (void)cmp;
  (void)in;
  (void)size;
  (void)out;
  (void)outsize;
  return 0;
}

sqfs_compressor_t *fp_sqfs_none_create(const sqfs_compressor_config_t *cfg)
{
  struct none_cmp *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->cfg = *cfg;
  c->base.base.destroy = none_destroy;
  c->base.base.copy = none_copy;
  c->base.get_configuration = none_get_configuration;
  c->base.write_options = none_options;
  c->base.read_options = none_options;
  c->base.do_block = none_do_block;
  return &c->base;
}

/* ---- cutting out the data of removed files ---- */

/* A run of data in the image: the blocks of one file (ino) or one fragment block. */
struct piece {
  uint64_t start, len;
  struct fp_minode *ino; /* NULL: fragment block number frag */
  uint32_t frag;
};

struct pieces {
  struct piece *v;
  size_t n, cap;
  unsigned char *frag_used; /* per fragment block: a file of the final tree has its tail there */
  size_t nfrag;
};

static void add(struct pieces *p, uint64_t start, uint64_t len, struct fp_minode *ino,
                uint32_t frag)
{
  if (!len)
    return;
  if (p->n == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 1024;
    p->v = fp_xrealloc(p->v, p->cap * sizeof *p->v);
  }
  p->v[p->n++] = (struct piece){start, len, ino, frag};
}

/* The blocks of every file the final tree names, once per inode (hardlinks). Depth is
 * bounded by FP_PATH_MAX / 2, as in the table writer. */
static void collect(struct fp_mtree *t, const struct fp_minode *dir, struct pieces *p)
{
  for (struct fp_mdirent *d = dir->first; d; d = d->next) {
    fp_mtree_tick(t);
    struct fp_minode *ino = d->ino;
    if (S_ISDIR(ino->mode)) {
      collect(t, ino, p);
      continue;
    }
    if (!S_ISREG(ino->mode) || !ino->sq || ino->relocated)
      continue;
    ino->relocated = 1;
    sqfs_u32 fi, fo;
    if (sqfs_inode_get_frag_location(ino->sq, &fi, &fo) == 0 && fi < p->nfrag)
      p->frag_used[fi] = 1;
    sqfs_u64 start;
    if (sqfs_inode_get_file_block_start(ino->sq, &start))
      continue;
    uint64_t len = 0;
    size_t nb = sqfs_inode_get_file_block_count(ino->sq);
    for (size_t k = 0; k < nb; k++)
      len += SQFS_ON_DISK_BLOCK_SIZE(ino->sq->extra[k]);
    add(p, start, len, ino, 0);
  }
}

static int by_start(const void *a, const void *b)
{
  const struct piece *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Copies len bytes at from down to to (to < from; the ranges may overlap). */
static int move_down(sqfs_file_t *f, uint64_t from, uint64_t to, uint64_t len, char *buf,
                     size_t cap)
{
  while (len) {
    size_t n = len < cap ? (size_t)len : cap;
    if (f->read_at(f, from, buf, n) || f->write_at(f, to, buf, n))
      return -1;
    from += n;
    to += n;
    len -= n;
  }
  return 0;
}

int fp_sqfs_compact(struct fp_mtree *t, sqfs_frag_table_t *frags, struct fp_fd_file *f,
                    uint64_t data_start, uint64_t *cut, fpull_err *err)
{
  struct pieces p = {0};
  *cut = 0;
  p.nfrag = sqfs_frag_table_get_size(frags);
  p.frag_used = fp_xcalloc(p.nfrag ? p.nfrag : 1, 1);
  collect(t, t->root, &p);
  /* A fragment block that only removed files have tails in goes too; its table entry (the
   * indexes of the others must not change) then names a block that stays, which no inode
   * refers to. Without one such, every fragment block stays. */
  sqfs_fragment_t alias = {0};
  size_t kept = 0;
  for (size_t k = 0; k < p.nfrag; k++)
    if (p.frag_used[k])
      kept++;
  for (size_t k = 0; k < p.nfrag; k++) {
    sqfs_fragment_t fr;
    if (sqfs_frag_table_lookup(frags, (sqfs_u32)k, &fr) == 0 && (p.frag_used[k] || !kept))
      add(&p, fr.start_offset, SQFS_ON_DISK_BLOCK_SIZE(fr.size), NULL, (sqfs_u32)k);
  }
  qsort(p.v, p.n, sizeof *p.v, by_start);
  enum { BUF = 1 << 20 };
  char *buf = NULL;
  uint64_t run_start = 0, run_end = 0, run_new = data_start, cursor = data_start;
  int rc = 0;
  for (size_t k = 0; k <= p.n && !rc; k++) {
    struct piece *pc = k < p.n ? &p.v[k] : NULL;
    if (!pc || pc->start > run_end) {
      /* The run before ends here: its bytes go down to run_new. */
      if (run_end > run_start && run_new != run_start) {
        if (!buf)
          buf = fp_xmalloc(BUF);
        if (move_down(&f->base, run_start, run_new, run_end - run_start, buf, BUF) < 0)
          rc = fpull_err_set(err, FPULL_EFAIL, "cutting removed files out of the image: %s",
                             strerror(f->error ? f->error : EIO));
      }
      cursor = run_new + (run_end - run_start);
      if (!pc)
        break;
      run_start = pc->start;
      run_end = pc->start;
      run_new = cursor;
    }
    if (pc->start + pc->len > run_end)
      run_end = pc->start + pc->len;
    uint64_t to = pc->start - run_start + run_new;
    if (to == pc->start)
      continue;
    if (pc->ino) {
      fp_mtree_tick(t);
      if (sqfs_inode_set_file_block_start(pc->ino->sq, to))
        rc = fpull_err_set(err, FPULL_EFAIL, "cutting removed files out: bad inode");
    } else {
      sqfs_fragment_t fr;
      if (sqfs_frag_table_lookup(frags, pc->frag, &fr) ||
          sqfs_frag_table_set(frags, pc->frag, to, fr.size))
        rc = fpull_err_set(err, FPULL_EFAIL, "cutting removed files out: bad fragment");
    }
  }
  /* The fragment blocks that went: their entries name the first that stayed. */
  for (size_t k = 0; k < p.nfrag && kept < p.nfrag && !rc; k++) {
    sqfs_fragment_t fr;
    if (!p.frag_used[k] || sqfs_frag_table_lookup(frags, (sqfs_u32)k, &fr))
      continue;
    alias = fr;
    for (size_t j = 0; j < p.nfrag && !rc; j++)
      if (!p.frag_used[j] &&
          sqfs_frag_table_set(frags, (sqfs_u32)j, alias.start_offset, alias.size))
        rc = fpull_err_set(err, FPULL_EFAIL, "cutting removed files out: bad fragment");
    break;
  }
  free(buf);
  free(p.v);
  free(p.frag_used);
  if (rc)
    return rc;
  uint64_t size = f->base.get_size(&f->base);
  if (cursor < size) {
    *cut = size - cursor;
    if (f->base.truncate(&f->base, cursor))
      return fpull_err_set(err, FPULL_EFAIL, "cutting removed files out of the image: %s",
                           strerror(f->error ? f->error : EIO));
  }
  return 0;
}
