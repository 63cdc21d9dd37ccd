/* fpull Slurm plugin: a step's FUSE mounts unmounted with fusermount3 as the job's user
 * (see fuse_unmount.h). */
#include <limits.h>
#include <stdio.h>

#include "fuse_unmount.h"
#include "run.h"

static void unmount_one(const char *path)
{
  char fm[PATH_MAX];
  if (!fp_slurm_find_program("fusermount3", fm, sizeof fm))
    return;
  const char *argv[] = {fm, "-u", "-z", "-q", path, NULL};
  char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
  fp_slurm_run_to((char *const *)argv, envp, NULL, 1, NULL, NULL);
}

void fp_slurm_sqsh_unmount(const char *dir)
{
  static const char *const points[] = {"rootfs", "lower"};
  char path[PATH_MAX];
  for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, points[i]);
    unmount_one(path);
  }
}
