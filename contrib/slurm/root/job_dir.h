/* fpull Slurm plugin: the per-job directory under the run directory.
 *
 * RUN_DIR (root-owned, 0755) holds, per job on this node:
 *   RUN_DIR/JOBID/          the job-private directory (the job's user, 0700)
 *   RUN_DIR/JOBID/STEPID/   each step's: bundle/ (rootfs/, config.json: the container's,
 *                           image.json: the image's), runtime/ (the runtime's state)
 *   RUN_DIR/JOBID/cache/    the job's blob cache, when the user has no home to keep one
 */
#ifndef FPULL_SLURM_JOB_DIR_H
#define FPULL_SLURM_JOB_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <fpull/error.h>

/* Opens RUN_DIR as a directory without following a symlink; with create, makes it
 * (root, 0755) when missing. A RUN_DIR that is not a root-owned directory that only root
 * can write is refused: users must not be able to plant entries there. */
int fp_slurm_run_dir_open(int *out, const char *run_dir, int create, fpull_err *err);

/* RUN_DIR's parents: root's, none writable by others (but a sticky one above the parent,
 * such as /tmp). slurmd says so in its log at start; every step is refused meanwhile. */
int fp_slurm_run_dir_check(const char *run_dir, fpull_err *err);

/* As root: creates RUN_DIR/JOBID owned by uid:gid, mode 0700, or keeps it when it is
 * that already (an earlier step's); anything else an earlier job of the same id left
 * (slurmctld state can be reset) is removed first (under timeout, as
 * fp_slurm_job_dir_remove). Whatever the user mounted ON RUN_DIR/JOBID is detached first and
 * never asked anything. Steps of one job take turns under RUN_DIR/JOBID.lock (root's 0600),
 * waiting at most about twice timeout. */
int fp_slurm_job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, int timeout,
                            fpull_err *err);

/* As root, for the job of uid:gid (Slurm's word): removes RUN_DIR/JOBID and everything in
 * it. What the user mounted ON RUN_DIR/JOBID is detached first, by its descriptor, never
 * asked anything; with run_dir (RUN_DIR's path), what the user mounted under it too (see
 * job_dir.c). The removal runs in a child that dropped to the directory's owner as root
 * made it (run_dir's own file system says: so a tree the user could change under us can
 * never make root delete anything the user could not), never enters a mount point, kills
 * only the job's own container processes its step records name, and stops after timeout
 * seconds, leaving what is left and saying so in err. RUN_DIR/JOBID.lock goes too. A
 * missing directory is fine. */
int fp_slurm_job_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, uid_t uid, gid_t gid,
                            int timeout, fpull_err *err);

/* Removes RUN_DIR/JOBID/STEPID as uid:gid (a child that drops every id to them, under
 * the same deadline and never entering a mount point), at the end of the step: a long job's steps
 * do not pile up their trees. A SquashFS image the step mounted (sqsh_mount.h) is unmounted first,
 * by the user with fusermount3. */
int fp_slurm_step_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, uint32_t step_id,
                             uid_t uid, gid_t gid, int timeout, fpull_err *err);

/* As root: RUN_DIR/store (root's, 0755) and RUN_DIR/store/UID (the user's, 0700), where
 * a user's unpacked images are kept between jobs (store_max=). */
int fp_slurm_store_dir_create(int run_fd, uid_t uid, gid_t gid, fpull_err *err);

/* As root, for shared_cache=DIR and sqsh_store=DIR (key: the argument's name, for the
 * messages): DIR/UID, the job's user's directory there. DIR must be root's and writable by
 * root only; DIR/UID is made (uid:gid, 0700) when missing, reached on DIR's own mount only
 * (a mount on it is detached), and refused when it is not the user's (another user who
 * made it first would read what the victim pulls). 0, or err says why it is not to be
 * used. */
int fp_slurm_site_user_dir(const char *key, const char *dir, uid_t uid, gid_t gid, fpull_err *err);

/* The contract's meaning of an exit code ("not found", ...). */
const char *fp_slurm_code_meaning(int code);

#endif
