/* fpull Slurm plugin: the per-job directory and error record under the run directory.
 *
 * RUN_DIR (root-owned, 0755) holds, per job on this node:
 *   RUN_DIR/JOBID/       the job-private directory (the job's user, 0700); the rootfs is
 *                        RUN_DIR/JOBID/rootfs, or with --fpull-format=bundle the bundle
 *                        RUN_DIR/JOBID/bundle (config.json, rootfs/)
 *   RUN_DIR/JOBID.error  what the prolog could not do ("CODE MESSAGE"),
 *   RUN_DIR/JOBID.manifest  the digest of the entry the prolog fetched,
 * both root-owned 0644: the user part reads them and the user cannot forge them.
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

/* As root: removes what an earlier job of the same id left (slurmctld state can be reset)
 * and creates RUN_DIR/JOBID owned by uid:gid, mode 0700. */
int fp_slurm_job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, fpull_err *err);

/* As root: removes RUN_DIR/JOBID and everything in it as the directory's owner (in a child
 * that has dropped to that uid, so a tree the user could change under us can never make
 * root delete anything the user could not), then the error record. Missing ones are
 * fine. */
int fp_slurm_job_dir_remove(int run_fd, uint32_t job_id, fpull_err *err);

/* As root: records code and message for the user part (written beside, renamed in). */
int fp_slurm_error_record(int run_fd, uint32_t job_id, int code, const char *msg, fpull_err *err);

/* As root: records the manifest digest the prolog chose, so that the user part unpacks
 * exactly that entry whatever it would detect itself (a step may see fewer GPUs). */
int fp_slurm_chosen_record(int run_fd, uint32_t job_id, const char *digest, fpull_err *err);

/* 1 and the digest in digest[len] when the prolog recorded one; 0 when not. */
int fp_slurm_chosen_lookup(int run_fd, uint32_t job_id, char *digest, size_t len);

/* 1 and *out filled when the prolog recorded an error for job_id; 0 when not. */
int fp_slurm_error_lookup(int run_fd, uint32_t job_id, fpull_err *out);

/* The contract's meaning of an exit code ("not found", ...). */
const char *fp_slurm_code_meaning(int code);

#endif
