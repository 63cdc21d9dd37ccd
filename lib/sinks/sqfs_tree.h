/* The merged tree of a SquashFS image, held in memory while the layers stream by: names,
 * metadata and, for files, the inode sqfs_blocks.c fills with the data's location.
 * Lookups follow the rules of the in-root resolver (inroot.h): absolute symlinks restart at
 * the root, ".." stops there, FP_SYMLINK_MAX links at most, so that a path lands where the
 * directory output would put it. */
#ifndef FP_SQFS_TREE_H
#define FP_SQFS_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sqfs/predef.h>

#include "arena.h"

struct fp_mxattr {
  struct fp_mxattr *next;
  size_t size;
  char *name;
  void *value;
};

/* What a name points at. Directories have exactly one name (no hardlinks to them). */
struct fp_minode {
  uint32_t mode; /* S_IF* | permissions */
  uint32_t uid, gid;
  uint32_t mtime;
  uint32_t nlink;                  /* names pointing here (files, symlinks, nodes) */
  uint32_t touched;                /* directories: the layer (1-based) that last wrote into it */
  uint32_t rdev;                   /* devices, in the kernel's new_encode_dev form */
  struct fp_minode *parent;        /* directories: the one above (the root: itself) */
  struct fp_mdirent *first, *last; /* directories: their names, unsorted */
  size_t nchildren;
  char *target; /* symlinks */
  struct fp_mxattr *xattrs;
  uint64_t size;            /* files: bytes of data */
  sqfs_inode_generic_t *sq; /* files: filled by sqfs_blocks.c */
  uint32_t ino_num;         /* set when the tables are written */
  uint64_t ref;
  int written;
  int relocated; /* files: its blocks' place was updated when removed data was cut out */
};

struct fp_mdirent {
  struct fp_mdirent *hnext;       /* hash chain */
  struct fp_mdirent *prev, *next; /* the directory's list */
  struct fp_minode *dir, *ino;
  uint32_t layer; /* the layer (1-based) that wrote this name */
  char name[];
};

struct fp_mtree {
  struct fp_minode *root;
  struct fp_minode *all;
  struct fp_mdirent **buckets; /* (directory, name) -> entry */
  size_t nbuckets, nentries;
  uint32_t layer;        /* the current layer, 1-based */
  uint32_t implicit_uid; /* owner of directories made for a path's missing parents */
  uint32_t implicit_gid;
  uint32_t now;
  uint64_t dead_bytes; /* file data written to the image whose file was later removed (and
                        * cut out of it at the end: fp_sqfs_compact) */
  /* Nodes, names and finished file inodes live in the arena, a temporary file beside the
   * image, so that resident memory does not grow with the entries; without one (or when it
   * cannot grow: spill_errno) they are on the heap, listed in heap to be freed. */
  struct fp_arena arena;
  /* Past max_resident (the process's RSS) the arena's pages are given back: checked every
   * 256 nodes touched once that has happened, because a read fault maps 64 KiB of the file
   * around the page (fault-around), so that a walk over the tree would soon make all of it
   * resident again. rss_after_release: RSS right after the last time. */
  uint64_t max_resident, rss_after_release;
  unsigned ticks;
  int moved_out;
  int spill_errno;
  void **heap;
  size_t nheap, capheap;
  /* File inodes sqfs_blocks.c allocated, not yet moved into the arena. */
  struct fp_minode **files;
  size_t nfiles, capfiles;
};

/* An empty tree whose arena is a temporary file in dirfd (dirname for messages); dirfd < 0,
 * or no file to be had: everything on the heap. */
void fp_mtree_init(struct fp_mtree *t, uint32_t uid, uint32_t gid, uint32_t now, int dirfd,
                   const char *dirname);
void fp_mtree_free(struct fp_mtree *t);

/* A new inode (owned by the tree, freed with it). */
struct fp_minode *fp_mtree_inode(struct fp_mtree *t, uint32_t mode);
struct fp_mdirent *fp_mtree_lookup(struct fp_mtree *t, const struct fp_minode *dir,
                                   const char *name);
/* Links ino as name in dir, replacing what was there (a directory with all below it). */
struct fp_mdirent *fp_mtree_link(struct fp_mtree *t, struct fp_minode *dir, const char *name,
                                 struct fp_minode *ino);
void fp_mtree_remove(struct fp_mtree *t, struct fp_mdirent *d);

/* The directory holding the last component of path (cleaned, non-empty), every symlink on
 * the way followed inside the root; with create, missing directories are made. *base points
 * into path. NULL with errno: ELOOP, ENOTDIR, ENOENT (without create), ENAMETOOLONG. */
struct fp_minode *fp_mtree_parent(struct fp_mtree *t, const char *path, int create,
                                  const char **base);
/* The inode at path ("" the root), a final symlink followed. NULL with errno. */
struct fp_minode *fp_mtree_open(struct fp_mtree *t, const char *path);
/* Records that the current layer wrote into dir and so into every directory above it. */
void fp_mtree_touch(struct fp_mtree *t, struct fp_minode *dir);

/* Whiteouts, with the directory output's rules (whiteout.h). 0, or -1 with errno. */
int fp_mtree_whiteout(struct fp_mtree *t, const char *dir, const char *name);
int fp_mtree_opaque(struct fp_mtree *t, const char *dir);

/* RSS when it is past t->max_resident and has grown by an eighth of it (16 MiB at most)
 * since the last release (so that memory the tree does not own cannot make every check a
 * release), else 0. */
uint64_t fp_mtree_over(const struct fp_mtree *t);
/* Gives the arena's pages back; their data stays in its file. */
void fp_mtree_release(struct fp_mtree *t);
/* One node touched: every 256, once the tree has been moved out, fp_mtree_release. */
void fp_mtree_tick(struct fp_mtree *t);

/* A copy of s owned by the tree. */
char *fp_mtree_strdup(struct fp_mtree *t, const char *s);
/* ino's inode (ino->sq) was allocated by fp_sqfs_blocks_begin. */
void fp_mtree_file(struct fp_mtree *t, struct fp_minode *ino);
/* Once no block is in flight (fp_sqfs_blocks_sync): moves the
 * file inodes it is done with into the arena. block: the image's block size. */
void fp_mtree_compact(struct fp_mtree *t, size_t block);

/* Sets (or replaces) one extended attribute of ino. */
void fp_mtree_xattr(struct fp_mtree *t, struct fp_minode *ino, const char *name, const void *value,
                    size_t size);

#endif
