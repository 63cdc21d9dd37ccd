/* fpull Slurm plugin: the step's container.
 *
 * In slurmstepd (slurm_spank_user_init) a child process that has dropped every id to the
 * job's user (the runner) runs `fpull pull --format bundle` into the step's private
 * directory, writes the container's config.json beside the image's, and has the runtime
 * (rootless runc or crun) create the container: its init process, waiting to be started,
 * holds the user and mount namespaces the runtime built. The plugin opens them by
 * /proc/PID/ns/{user,mnt}, and then the runtime deletes the container: the namespaces live
 * on as long as slurmstepd and the tasks hold them. Each task joins them with setns() in
 * slurm_spank_task_init and stays slurmstepd's child (signals, accounting and cgroups as
 * for any task).
 */
#ifndef FPULL_SLURM_CONTAINER_H
#define FPULL_SLURM_CONTAINER_H

#include <stdint.h>
#include <sys/types.h>

#include <fpull/error.h>

#include "settings.h"

/* What the step asks for. */
struct fp_slurm_request {
  const struct fp_slurm_settings *s;
  uint32_t job_id, step_id;
  uid_t uid;
  gid_t gid;
  const char *image;
  const char *features; /* NULL: the node's own */
  const char *mounts;   /* --fpull-mounts, or NULL */
  int mount_home;
  enum fp_slurm_pull pull;
  /* From the job's environment: where the user's credentials and cache are. */
  const char *home, *docker_config, *xdg_config_home, *xdg_cache_home;
  const char *gpus; /* the allocation's GPUs (CUDA_VISIBLE_DEVICES), or NULL */
};

/* What the tasks join. */
struct fp_slurm_container {
  int userns_fd, mntns_fd; /* -1 when none */
  char digest[80];         /* the chosen entry's manifest digest */
  char *workdir;           /* the image's WorkingDir, or NULL */
  char **env;              /* the image's Env (NULL-terminated) */
};

/* Pulls and creates the step's container (see above). Errors are the contract's codes;
 * fpull's own error line is already on the step's stderr when the code is fpull's. */
int fp_slurm_container_start(struct fp_slurm_container *c, const struct fp_slurm_request *r,
                             fpull_err *err);

/* In a task: joins c's namespaces; without remap_root, the task keeps its own uid and gid
 * inside (a user namespace nested in the container's maps them to its root). */
int fp_slurm_container_join(const struct fp_slurm_container *c, uid_t uid, gid_t gid,
                            int remap_root, fpull_err *err);

void fp_slurm_container_free(struct fp_slurm_container *c);

/* Kills the runner of this process, if one is running (scancel during the pull). */
void fp_slurm_container_cancel(void);

#endif
