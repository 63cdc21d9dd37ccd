/* fpull Slurm plugin: unmounting the FUSE mounts of a step's SquashFS image
 * (runner/sqsh_mount.h), used by both sides: the runner when a mount fails, and the step's
 * end (root/job_dir.c) in a child that runs as the job's user. Here, not in the runner's
 * sqsh_mount.c, so that the root side links no code of the runner's: what it runs is
 * fusermount3 with a fixed environment, never entering the mounts. */
#ifndef FPULL_SLURM_FUSE_UNMOUNT_H
#define FPULL_SLURM_FUSE_UNMOUNT_H

/* As the job's user: lazily unmounts dir/rootfs and dir/lower when mounted (their daemons
 * may be gone: the mounts are never entered). */
void fp_slurm_sqsh_unmount(const char *dir);

#endif
