/* fpull Slurm plugin: the site's SquashFS store (plugstack sqsh_store=DIR).
 *
 * DIR is on a file system every node shares; root makes DIR/UID for each user (0700, as for
 * shared_cache=). The entry a node chooses is kept there as DIR/UID/HEX.sqsh (HEX: the
 * manifest digest's), converted once by the first node that needs it and mounted by every
 * node of that kind, in this job and later ones, where a node reads only the pages it
 * touches. Beside it HEX.lock: exclusive while the file is converted (into
 * HEX.sqsh.tmp.NODE.PID, renamed in), shared while a step has it mounted, so that a site's
 * cleanup that takes it exclusive (flock -n) never removes a file in use. The lock is
 * flock(2), which NFS (v4, or v3 with lockd) and Lustre mounted with -o flock carry across
 * nodes. All of it runs in the runner, as the job's user.
 */
#ifndef FPULL_SLURM_SQSH_STORE_H
#define FPULL_SLURM_SQSH_STORE_H

#include <limits.h>
#include <stdint.h>

#include <fpull/error.h>

struct fp_slurm_sqsh_store {
  char path[PATH_MAX];     /* DIR/UID/HEX.sqsh */
  char tmp[PATH_MAX + 96]; /* where a conversion writes, renamed to path when complete */
  int lock;                /* HEX.lock, or -1 */
};

/* Locks the file of digest (sha256: and 64 hex digits) in dir (DIR/UID): shared when it is
 * there (returns 1), else exclusive, waiting for a node that converts it, and looks again;
 * 0: this node converts it into s->tmp (an earlier conversion's leftovers removed), -1 with
 * err set. node names the writer in s->tmp. */
int fp_slurm_sqsh_store_claim(struct fp_slurm_sqsh_store *s, const char *dir, const char *digest,
                              const char *node, fpull_err *err);

/* The conversion is complete: s->tmp becomes s->path, and the lock shared. 0, or -1 with err
 * set (the lock given up). */
int fp_slurm_sqsh_store_filled(struct fp_slurm_sqsh_store *s, fpull_err *err);

/* The step holds the file while it runs: the lock's descriptor, which the caller keeps open
 * (touched: its mtime is the file's last use). */
int fp_slurm_sqsh_store_hold(struct fp_slurm_sqsh_store *s);

/* sqsh_store_max=: removes the least recently used files of dir (their lock's mtime) until
 * the user's files take at most max bytes, never keep's (the digest's hex this step holds)
 * nor one a step on any node holds (its lock, taken exclusive without waiting). The lock
 * files stay (a few bytes each): a node waiting on one must not lock a name another node
 * has made anew. */
void fp_slurm_sqsh_store_trim(const char *dir, const char *keep, uint64_t max);

/* Gives the claim up: a conversion's partial file removed, the lock released. */
void fp_slurm_sqsh_store_release(struct fp_slurm_sqsh_store *s);

#endif
