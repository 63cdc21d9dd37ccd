/* The in-memory merged tree of a SquashFS image (see sqfs_tree.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqfs/inode.h>
#include <sqfs/predef.h>

#include "unpack/inroot.h"
#include "sqfs_tree.h"
#include "base/util.h"

static uint64_t key(const struct fp_minode *dir, const char *name)
{
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)dir;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  h ^= h >> 29;
  return h * 0xbf58476d1ce4e5b9ull;
}

static void *push_ptr(void ***v, size_t *n, size_t *cap, void *p)
{
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 256;
    *v = fp_xrealloc(*v, *cap * sizeof **v);
  }
  (*v)[(*n)++] = p;
  return p;
}

/* Zeroed bytes in the arena; on the heap when there is none or it cannot grow (the error is
 * kept for the sink to report: the pull fails, but the tree stays consistent until then). */
static void *tree_alloc(struct fp_mtree *t, size_t size)
{
  if (t->arena.base && !t->spill_errno) {
    void *p = fp_arena_alloc(&t->arena, size);
    if (p)
      return p;
    if (t->arena.used == 0) {
      /* A file system that cannot map the file at all: the tree stays in memory, as in
       * mksquashfs. Once it could, failing to grow (a full disk) fails the pull. */
      fp_debug("squashfs: the tree stays in memory (its temporary file: %s)", strerror(errno));
      fp_arena_close(&t->arena);
    } else {
      t->spill_errno = errno ? errno : ENOMEM;
    }
  }
  return push_ptr(&t->heap, &t->nheap, &t->capheap, fp_xcalloc(1, size));
}

uint64_t fp_mtree_over(const struct fp_mtree *t)
{
  if (!t->arena.base)
    return 0;
  uint64_t rss = fp_resident_bytes();
  uint64_t slack = t->max_resident / 8 < (16u << 20) ? t->max_resident / 8 : (16u << 20);
  return rss > t->max_resident && rss >= t->rss_after_release + slack ? rss : 0;
}

void fp_mtree_release(struct fp_mtree *t)
{
  fp_arena_release(&t->arena);
  t->moved_out = 1;
  t->rss_after_release = fp_resident_bytes();
}

void fp_mtree_tick(struct fp_mtree *t)
{
  if (t->moved_out && ++t->ticks % 256 == 0 && fp_mtree_over(t))
    fp_mtree_release(t);
}

char *fp_mtree_strdup(struct fp_mtree *t, const char *s)
{
  size_t n = strlen(s) + 1;
  return memcpy(tree_alloc(t, n), s, n);
}

void fp_mtree_init(struct fp_mtree *t, uint32_t uid, uint32_t gid, uint32_t now, int dirfd,
                   const char *dirname)
{
  memset(t, 0, sizeof *t);
  t->arena.fd = -1;
  fpull_err err;
  /* Without its file (no address space to reserve on a 32-bit system, a directory that
   * takes no more files) the tree stays in memory, as in mksquashfs. */
  if (dirfd >= 0 && fp_arena_open(&t->arena, dirfd, dirname, &err) != 0)
    fp_debug("squashfs: the tree stays in memory: %s", err.msg);
  t->implicit_uid = uid;
  t->implicit_gid = gid;
  t->now = now;
  t->nbuckets = 1024;
  t->buckets = tree_alloc(t, t->nbuckets * sizeof *t->buckets);
  t->root = fp_mtree_inode(t, S_IFDIR | 0755);
  t->root->parent = t->root;
}

struct fp_minode *fp_mtree_inode(struct fp_mtree *t, uint32_t mode)
{
  struct fp_minode *i = tree_alloc(t, sizeof *i);
  i->mode = mode;
  i->uid = t->implicit_uid;
  i->gid = t->implicit_gid;
  i->mtime = t->now;
  return i;
}

void fp_mtree_file(struct fp_mtree *t, struct fp_minode *ino)
{
  push_ptr((void ***)&t->files, &t->nfiles, &t->capfiles, ino);
}

/* Done with by sqfs_blocks.c: its data blocks are written (nothing is in flight) and
 * a tail fragment has its place. A tail that was all zeros never gets one (it is a sparse
 * block): such an inode stays where it is. */
static int file_done(const struct fp_minode *ino, size_t block)
{
  sqfs_u32 index, offset;
  if (ino->size % block == 0)
    return 1;
  return sqfs_inode_get_frag_location(ino->sq, &index, &offset) == 0 && index != 0xFFFFFFFF;
}

void fp_mtree_compact(struct fp_mtree *t, size_t block)
{
  if (!t->arena.base || t->spill_errno)
    return;
  size_t keep = 0;
  for (size_t k = 0; k < t->nfiles; k++) {
    struct fp_minode *ino = t->files[k];
    if (!ino->sq || !file_done(ino, block) || t->spill_errno) {
      t->files[keep++] = ino;
      continue;
    }
    size_t size = sizeof *ino->sq + ino->sq->payload_bytes_used;
    sqfs_inode_generic_t *copy = fp_arena_alloc(&t->arena, size);
    if (!copy) {
      t->spill_errno = errno ? errno : ENOMEM;
      t->files[keep++] = ino;
      continue;
    }
    memcpy(copy, ino->sq, size);
    copy->payload_bytes_available = copy->payload_bytes_used;
    sqfs_free(ino->sq);
    ino->sq = copy;
  }
  t->nfiles = keep;
}

void fp_mtree_free(struct fp_mtree *t)
{
  /* Only what is on the heap: walking the arena would bring every page of it back. */
  for (size_t k = 0; k < t->nfiles; k++)
    sqfs_free(t->files[k]->sq);
  free(t->files);
  for (size_t k = 0; k < t->nheap; k++)
    free(t->heap[k]);
  free(t->heap);
  fp_arena_close(&t->arena);
  memset(t, 0, sizeof *t);
  t->arena.fd = -1;
}

struct fp_mdirent *fp_mtree_lookup(struct fp_mtree *t, const struct fp_minode *dir,
                                   const char *name)
{
  for (struct fp_mdirent *d = t->buckets[key(dir, name) & (t->nbuckets - 1)]; d; d = d->hnext) {
    fp_mtree_tick(t);
    if (d->dir == dir && strcmp(d->name, name) == 0)
      return d;
  }
  return NULL;
}

/* Rehashing touches every name: the pages are given back as it goes (fp_mtree_tick). */
static void grow(struct fp_mtree *t)
{
  size_t ncap = t->nbuckets * 2;
  struct fp_mdirent **nb = tree_alloc(t, ncap * sizeof *nb);
  for (size_t b = 0; b < t->nbuckets; b++)
    for (struct fp_mdirent *d = t->buckets[b], *n; d; d = n) {
      n = d->hnext;
      size_t j = key(d->dir, d->name) & (ncap - 1);
      d->hnext = nb[j];
      nb[j] = d;
      fp_mtree_tick(t);
    }
  /* The old table stays where it is (arena space is not reused). */
  t->buckets = nb;
  t->nbuckets = ncap;
}

/* Takes one name away; the inode stays allocated (sqfs_blocks.c may still point into
 * a file's inode until it is finished). */
static void unlink_one(struct fp_mtree *t, struct fp_mdirent *d)
{
  struct fp_mdirent **pp = &t->buckets[key(d->dir, d->name) & (t->nbuckets - 1)];
  while (*pp != d)
    pp = &(*pp)->hnext;
  *pp = d->hnext;
  if (d->prev)
    d->prev->next = d->next;
  else
    d->dir->first = d->next;
  if (d->next)
    d->next->prev = d->prev;
  else
    d->dir->last = d->prev;
  d->dir->nchildren--;
  t->nentries--;
  if (d->ino->nlink && --d->ino->nlink == 0 && S_ISREG(d->ino->mode))
    t->dead_bytes += d->ino->size;
  /* Its space is not reused: the arena never reuses, heap blocks are freed at the end. */
}

/* Iterative: depth costs no stack. Directories know the one above them. */
void fp_mtree_remove(struct fp_mtree *t, struct fp_mdirent *d)
{
  struct fp_minode *top = d->ino;
  unlink_one(t, d);
  if (!S_ISDIR(top->mode))
    return;
  struct fp_minode *cur = top;
  for (;;) {
    fp_mtree_tick(t);
    struct fp_mdirent *c = cur->first;
    if (c && S_ISDIR(c->ino->mode) && c->ino->first) {
      cur = c->ino;
      continue;
    }
    if (c) {
      unlink_one(t, c);
      continue;
    }
    if (cur == top)
      break;
    cur = cur->parent;
  }
}

struct fp_mdirent *fp_mtree_link(struct fp_mtree *t, struct fp_minode *dir, const char *name,
                                 struct fp_minode *ino)
{
  struct fp_mdirent *old = fp_mtree_lookup(t, dir, name);
  if (old)
    fp_mtree_remove(t, old);
  if ((t->nentries + 1) > t->nbuckets)
    grow(t);
  size_t len = strlen(name);
  struct fp_mdirent *d = tree_alloc(t, sizeof *d + len + 1);
  memcpy(d->name, name, len + 1);
  d->dir = dir;
  d->ino = ino;
  size_t j = key(dir, name) & (t->nbuckets - 1);
  d->hnext = t->buckets[j];
  t->buckets[j] = d;
  d->prev = dir->last;
  if (dir->last)
    dir->last->next = d;
  else
    dir->first = d;
  dir->last = d;
  dir->nchildren++;
  t->nentries++;
  ino->nlink++;
  if (S_ISDIR(ino->mode))
    ino->parent = dir;
  return d;
}

/* Walks path from start. Components before the last must be directories (symlinks to them
 * are followed, missing ones made with create); the last is returned as it is unless it is
 * a symlink and follow_last. */
static struct fp_minode *walk(struct fp_mtree *t, const char *path, int create, int follow_last)
{
  char buf[2 * FP_PATH_MAX + 2];
  size_t plen = strlen(path);
  if (plen > FP_PATH_MAX)
    return errno = ENAMETOOLONG, NULL;
  memcpy(buf, path, plen + 1);
  char *p = buf;
  struct fp_minode *cur = t->root;
  int links = 0;
  if (*p == '/')
    cur = t->root;
  for (;;) {
    while (*p == '/')
      p++;
    if (!*p)
      return cur;
    if (!S_ISDIR(cur->mode))
      return errno = ENOTDIR, NULL;
    char *end = strchr(p, '/');
    char *rest = end ? end + 1 : p + strlen(p);
    if (end)
      *end = '\0';
    const char *r = rest;
    while (*r == '/')
      r++;
    int last = *r == '\0';
    if (strcmp(p, ".") == 0) {
      p = rest;
      continue;
    }
    if (strcmp(p, "..") == 0) {
      cur = cur->parent;
      p = rest;
      continue;
    }
    struct fp_mdirent *d = fp_mtree_lookup(t, cur, p);
    if (!d) {
      if (!create)
        return errno = ENOENT, NULL;
      struct fp_minode *n = fp_mtree_inode(t, S_IFDIR | 0755);
      fp_mtree_link(t, cur, p, n);
      cur = n;
      p = rest;
      continue;
    }
    if (S_ISLNK(d->ino->mode) && (!last || follow_last || create)) {
      if (++links > FP_SYMLINK_MAX)
        return errno = ELOOP, NULL;
      char tmp[2 * FP_PATH_MAX + 2];
      int n = snprintf(tmp, sizeof tmp, "%s/%s", d->ino->target, r);
      if (n < 0 || (size_t)n >= sizeof tmp)
        return errno = ENAMETOOLONG, NULL;
      if (d->ino->target[0] == '/')
        cur = t->root;
      memcpy(buf, tmp, (size_t)n + 1);
      p = buf;
      continue;
    }
    if (last)
      return d->ino;
    if (!S_ISDIR(d->ino->mode))
      return errno = ENOTDIR, NULL;
    cur = d->ino;
    p = rest;
  }
}

struct fp_minode *fp_mtree_parent(struct fp_mtree *t, const char *path, int create,
                                  const char **base)
{
  const char *slash = strrchr(path, '/');
  *base = slash ? slash + 1 : path;
  if (!slash)
    return t->root;
  char dir[FP_PATH_MAX + 1];
  size_t len = (size_t)(slash - path);
  if (len > FP_PATH_MAX)
    return errno = ENAMETOOLONG, NULL;
  memcpy(dir, path, len);
  dir[len] = '\0';
  struct fp_minode *d = walk(t, dir, create, 1);
  if (d && !S_ISDIR(d->mode))
    return errno = ENOTDIR, NULL;
  return d;
}

struct fp_minode *fp_mtree_open(struct fp_mtree *t, const char *path)
{
  return walk(t, path, 0, 1);
}

void fp_mtree_touch(struct fp_mtree *t, struct fp_minode *dir)
{
  while (dir->touched != t->layer) {
    dir->touched = t->layer;
    if (dir == t->root)
      break;
    dir = dir->parent;
  }
}

/* Did the current layer write d, or write into it? (whiteout.c's layer_wrote) */
static int layer_wrote(const struct fp_mtree *t, const struct fp_mdirent *d)
{
  return d->layer == t->layer || (S_ISDIR(d->ino->mode) && d->ino->touched == t->layer);
}

/* Removes from dir what the current layer did not write, descending into what it wrote
 * into. Depth is bounded by FP_PATH_MAX / 2. */
static void prune(struct fp_mtree *t, struct fp_minode *dir)
{
  for (struct fp_mdirent *d = dir->first, *n; d; d = n) {
    n = d->next;
    fp_mtree_tick(t);
    if (!layer_wrote(t, d))
      fp_mtree_remove(t, d);
    else if (S_ISDIR(d->ino->mode))
      prune(t, d->ino);
  }
}

int fp_mtree_whiteout(struct fp_mtree *t, const char *dir, const char *name)
{
  char path[FP_PATH_MAX + 1];
  int n = snprintf(path, sizeof path, "%s%s%s", dir, *dir ? "/" : "", name);
  if (n < 0 || (size_t)n >= sizeof path)
    return errno = ENAMETOOLONG, -1;
  const char *base;
  struct fp_minode *p = fp_mtree_parent(t, path, 0, &base);
  if (!p)
    return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
  struct fp_mdirent *d = fp_mtree_lookup(t, p, base);
  if (!d)
    return 0;
  if (!layer_wrote(t, d))
    fp_mtree_remove(t, d);
  else if (S_ISDIR(d->ino->mode))
    prune(t, d->ino);
  return 0;
}

int fp_mtree_opaque(struct fp_mtree *t, const char *dir)
{
  struct fp_minode *d = fp_mtree_open(t, dir);
  if (!d)
    return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
  if (S_ISDIR(d->mode))
    prune(t, d);
  return 0;
}

void fp_mtree_xattr(struct fp_mtree *t, struct fp_minode *ino, const char *name, const void *value,
                    size_t size)
{
  struct fp_mxattr *x = ino->xattrs;
  while (x && strcmp(x->name, name) != 0)
    x = x->next;
  if (!x) {
    x = tree_alloc(t, sizeof *x);
    x->name = fp_mtree_strdup(t, name);
    x->next = ino->xattrs;
    ino->xattrs = x;
  }
  /* A replaced value's space is not reused. */
  x->value = tree_alloc(t, size ? size : 1);
  memcpy(x->value, value, size);
  x->size = size;
}
