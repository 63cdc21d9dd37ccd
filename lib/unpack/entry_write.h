/* Writing one tar entry into the rootfs, through the in-root resolver: the only code that
 * creates, replaces or changes metadata of files in a rootfs being built. */
#ifndef FP_ENTRY_WRITE_H
#define FP_ENTRY_WRITE_H

#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "fpull/unpack.h"
#include "inroot.h"
#include "whiteout.h"

#define FP_PARENT_CACHE 4

/* A directory's metadata from its entry, applied at the end. Keyed by what the directory
 * is (dev, ino), not by a spelling of its path: many spellings of one directory cost one
 * record. */
struct fp_dirmeta {
  dev_t dev;
  ino_t ino;
  /* Where the directory was, so that a record outliving its directory (removed by a later
   * entry or whiteout, its inode number reused by a directory made for a path's missing
   * parents) is not applied to the newcomer. */
  dev_t parent_dev;
  ino_t parent_ino;
  uint64_t name_hash;
  mode_t mode;
  int64_t uid, gid;
  struct timespec times[2];
};

struct fp_writer {
  struct fp_root root;
  int privileged;    /* FP_PRIV_* (fp_priv_policy) */
  uint64_t max_file; /* largest (apparent) file size accepted */
  struct fpull_unpack_stats *stats;
  struct fp_layerset layer; /* what the current layer wrote, for its whiteouts */
  struct stat root_st;      /* the root directory, where marking what was written stops */

  /* Parent directories of recent entries: most entries share their parent with the one
   * before, or with the directory entry just before (tar order). All but the one in use
   * are dropped whenever anything is removed, so a replaced directory or symlink is never
   * written through. */
  struct fp_parent_slot {
    char *path;
    int fd;
    int own_gid; /* the directory's group is ours: what we create in it is ours alone */
    struct stat st;
    uint64_t used;
  } cache[FP_PARENT_CACHE];
  uint64_t clock;

  /* What a new file gets without fchown / fchmod, to skip those calls when they would
   * change nothing: its owner is ours (egid, or its directory's group when that is setgid
   * or the mount says grpid: equal when the directory's group is ours too); its mode is
   * open()'s minus the umask (read once), unless the root has a default ACL. */
  uid_t euid;
  gid_t egid;
  mode_t umask;
  int umask_known;

  /* Directory modes, owners and times, applied once all layers are in, deepest first:
   * writing into a directory changes its times, and its mode may forbid writing. */
  struct fp_dirmeta *dirs;
  size_t n_dirs, cap_dirs;
  size_t *dir_index; /* open addressing over dirs, by (dev, ino): a later entry wins */
  size_t dir_index_cap;
};

void fp_writer_init(struct fp_writer *w, int rootfd, int force_fallback, int privileged,
                    struct fpull_unpack_stats *stats);
void fp_writer_free(struct fp_writer *w);
/* A new layer starts: its own paths are forgotten. */
void fp_writer_layer_begin(struct fp_writer *w);

/* Checks every sink makes before writing e at cleaned path: numeric owners in range, the
 * root stays a directory, supported types only. 0, FP_ENTRY_ROOT (the root's own entry:
 * nothing to write, the root keeps its private mode), or FPULL_EUNSAFE. */
#define FP_ENTRY_ROOT (-1)
int fp_entry_check(struct archive_entry *e, const char *path, fpull_err *err);
/* What a sink keeps of an entry's privileges: the one policy of both sinks (contract,
 * "Rootfs"). The "privileged" argument below is a set of these; 0 is a non-root caller's. */
#define FP_PRIV_OWNERS 1  /* the entries' owners (else the caller's) */
#define FP_PRIV_SPECIAL 2 /* setuid/setgid bits, file capabilities, device nodes */
/* The set for a caller: nothing as non-root (or o->unprivileged). As root the owners, and
 * the special bits too in a rootfs directory, which stays 0700 (nobody else reaches it);
 * an image file is mounted by others, so there only with o->keep_privileged. */
int fp_priv_policy(const struct fpull_unpack_opts *o, int image);
/* The error when the parent directory of path could not be resolved (errno as the resolver
 * left it): a path through a file or a device (ENOTDIR) and a symlink loop (ELOOP) are
 * content fpull refuses (FPULL_EUNSAFE, naming the rule); anything else is FPULL_EFAIL. */
int fp_entry_parent_error(const char *path, fpull_err *err);
/* The permission bits of e for a file or node: setuid and setgid dropped, and counted,
 * without FP_PRIV_SPECIAL (contract v3: a shared rootfs must not hand out the caller's
 * uid; v4: nor a SquashFS image root's). */
mode_t fp_entry_perm(struct archive_entry *e, int privileged, struct fpull_unpack_stats *stats);
/* A device or FIFO entry: 0 with *make set when the node is to be made (device numbers
 * checked: Linux has 12-bit majors and 20-bit minors, beyond is FPULL_EUNSAFE), *make 0
 * when it is skipped (devices need FP_PRIV_SPECIAL; counted). */
int fp_entry_node(struct archive_entry *e, int privileged, struct fpull_unpack_stats *stats,
                  int *make, unsigned long *maj, unsigned long *min, fpull_err *err);
/* The xattr allowlist: user.* always, security.capability with FP_PRIV_SPECIAL (a dropped
 * one is counted in stats->caps_dropped); bounded names and values. trusted.*, system.*
 * (ACLs) and the rest are dropped and counted by the sinks. */
int fp_xattr_allowed(const char *name, size_t size, int privileged,
                     struct fpull_unpack_stats *stats);

/* Writes the entry e (its data read from a) at cleaned path. Errors: FPULL_EUNSAFE for
 * entries that cannot be written safely or are invalid (message names the reason, the
 * caller adds the entry), FPULL_EFAIL for I/O failures. */
int fp_entry_write(struct fp_writer *w, struct archive *a, struct archive_entry *e,
                   const char *path, fpull_err *err);

/* Applies the deferred directory metadata. */
int fp_writer_finish(struct fp_writer *w, fpull_err *err);

/* Drops the cached parent fd (call after removing anything behind the writer's back). */
void fp_writer_forget(struct fp_writer *w);

#endif
