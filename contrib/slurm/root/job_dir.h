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
 * (slurmctld state can be reset) is removed first. */
int fp_slurm_job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, fpull_err *err);

/* As root: removes RUN_DIR/JOBID and everything in it as the directory's owner (in a child
 * that has dropped to that uid, so a tree the user could change under us can never make
 * root delete anything the user could not). With run_dir (RUN_DIR's path), what the user
 * mounted under RUN_DIR/JOBID is first detached (safely: see job_dir.c); the removal never
 * enters a mount point and stops after timeout seconds, leaving what is left and saying
 * so in err. A missing directory is fine. */
int fp_slurm_job_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, int timeout,
                            fpull_err *err);

/* Removes RUN_DIR/JOBID/STEPID as uid:gid (a child that drops every id to them, under
 * the same deadline and never entering a mount point), at the end of the step: a long job's steps
 * do not pile up their trees. A SquashFS image the step mounted (sqsh_mount.h) is unmounted first,
 * by the user with fusermount3. */
int fp_slurm_step_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, uint32_t step_id,
                             uid_t uid, gid_t gid, int timeout, fpull_err *err);

/* As root: RUN_DIR/store (root's, 0755) and RUN_DIR/store/UID (the user's, 0700), where
 * a user's unpacked images are kept between jobs (store_max=). */
int fp_slurm_store_dir_create(int run_fd, uid_t uid, gid_t gid, fpull_err *err);

/* The contract's meaning of an exit code ("not found", ...). */
const char *fp_slurm_code_meaning(int code);

#endif
