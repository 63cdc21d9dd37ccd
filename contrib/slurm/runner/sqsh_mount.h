/* fpull Slurm plugin: a SquashFS image (--fpull-image=/PATH.sqsh) mounted, not copied, as
 * enroot starts one: squashfuse mounts the file read-only as DIR/lower (every file shown
 * as the job's user's, whom the container maps to its root, as unsquashfs run by the user
 * would have made them) and fuse-overlayfs puts DIR/upper over it as DIR/rootfs, where the
 * runtime makes its mount points and the tasks write. Both run as the job's user, in the
 * runner, until the step ends; fusermount3 unmounts them (common/fuse_unmount.h). Needs both
 * programs and a /dev/fuse the user may open (Debian's default, 0666); otherwise the caller
 * unpacks.
 */
#ifndef FPULL_SLURM_SQSH_MOUNT_H
#define FPULL_SLURM_SQSH_MOUNT_H

#include <sys/types.h>

/* Whether this node can mount SquashFS files for the user (the tools and /dev/fuse). */
int fp_slurm_sqsh_mountable(void);

/* Mounts image at dir/rootfs (dir/lower, dir/upper and dir/work beside it); the daemons are
 * children of this process (the runner), alive until it dies. 0, or -1 after one line on
 * the step's stderr and nothing left mounted. */
int fp_slurm_sqsh_mount(const char *image, const char *dir, char *const envp[]);

/* Whether this node can put a writable fuse-overlayfs layer over a tree for the user. */
int fp_slurm_overlay_mountable(void);

/* Mounts lower (read-only to the step: never written) under dir/upper as dir/rootfs
 * (dir/work beside it), with fuse-overlayfs as the job's user, a child of this process
 * (the runner) until it dies; what names the image for messages. Its pid, or -1 after one
 * line on the step's stderr. */
pid_t fp_slurm_overlay_mount(const char *lower, const char *dir, char *const envp[],
                             const char *what);

#endif
