/* fpull Slurm plugin: the node store (plugstack store_max=).
 *
 * A user's unpacked images are kept in RUN_DIR/store/UID/HEX (HEX: the chosen manifest
 * digest's), one per digest, so that the user's next job with the same entry on this node
 * does not unpack it again. Beside each tree, HEX.lock (flock: exclusive while the tree is
 * written, shared while a step uses it; its mtime is the last use) and HEX.size (the bytes
 * the tree takes). Once a step holds its tree, the least recently used trees that no step
 * holds are removed until the store is within store_max. All of it runs in the runner, as
 * the job's user.
 */
#ifndef FPULL_SLURM_STORE_H
#define FPULL_SLURM_STORE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include <fpull/error.h>

struct fp_slurm_store {
  char dir[PATH_MAX];       /* RUN_DIR/store/UID */
  char hex[72];             /* the digest's hex */
  char tree[PATH_MAX + 80]; /* dir/hex: the image's rootfs/ and fpull's config.json */
  int lock;                 /* HEX.lock, or -1 */
};

/* Locks (exclusive, waiting for another step that writes it) the tree of digest (sha256:
 * and 64 hex digits) in uid's store. Returns 1 when the tree is kept already, 0 when it is
 * to be written (into s->tree), -1 with err set. */
int fp_slurm_store_claim(struct fp_slurm_store *s, const char *run_dir, uid_t uid,
                         const char *digest, fpull_err *err);

/* After the tree was written: records its size. */
void fp_slurm_store_filled(struct fp_slurm_store *s);

/* The step uses the tree: marks it the most recently used, keeps it locked (shared) for
 * the step, evicts down to max. Returns the lock's descriptor (the caller keeps it open
 * while the step runs). */
int fp_slurm_store_hold(struct fp_slurm_store *s, uint64_t max);

/* The store's bound for store_max= (FP_SLURM_STORE_AUTO: a quarter of the size of
 * run_dir's file system, where the store is). */
uint64_t fp_slurm_store_limit(unsigned long long store_max, const char *run_dir);

/* With container_scope=global, once the step holds its name: the user's kept trees and
 * names (store/UID/names/, which count towards store_max as trees do) trimmed to max, least
 * recently used first, never the step's name nor one another step holds. */
void fp_slurm_store_trim(const char *run_dir, uid_t uid, const char *name, uint64_t max);

/* Gives the lock up (the tree could not be written). */
void fp_slurm_store_release(struct fp_slurm_store *s);

#endif
