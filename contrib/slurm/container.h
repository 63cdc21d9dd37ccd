/* fpull Slurm plugin: the step's container.
 *
 * In slurmstepd (slurm_spank_user_init) a child process that has dropped every id to the
 * job's user (the runner) runs `fpull pull --format bundle` into the step's private
 * directory, writes the container's config.json beside the image's, and has the runtime
 * (rootless runc or crun) create the container: its init process, waiting to be started,
 * holds the user and mount namespaces the runtime built. The plugin opens them by
 * /proc/PID/ns/{user,mnt}. Each task waits for the runner in slurm_spank_task_init_privileged
 * (the step is running then: scancel ends the pull at once), joins them with setns() as the
 * user in slurm_spank_task_init (join.c) and stays
 * slurmstepd's child (signals, accounting and cgroups as for any task); once every local
 * task has joined, the runtime deletes the container: the namespaces live on in the
 * tasks.
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
  const char *cache; /* FPULL_CACHE for the pull: the job's, else shared_cache=/UID, or NULL */
  const char *gpus;  /* the allocation's GPUs (CUDA_VISIBLE_DEVICES), or NULL */
  const char *save;  /* --fpull-save: a SquashFS file of the image, written by node 0 */
  int entrypoint;    /* --fpull-entrypoint: the tasks need the image's Entrypoint */
  int squashfs;      /* --fpull-format=squashfs: pulled as one SquashFS file and mounted */
  uint32_t ntasks;   /* the step's tasks on this node: each joins, then the holder goes */
  int info_fd;       /* (the runner's own) */
};

/* What the tasks join. */
struct fp_slurm_container {
  int info_fd, ack_fd;     /* to the runner; -1 when none */
  int userns_fd, mntns_fd; /* -1 when none */
  char digest[80];         /* the chosen entry's manifest digest */
  char *workdir;           /* the image's WorkingDir, or NULL */
  char **env;              /* the image's Env (NULL-terminated) */
  char **entrypoint;       /* with --fpull-entrypoint, the image's Entrypoint, or NULL */
};

/* In slurmstepd: starts the runner, which pulls and creates the step's container (see
 * above), and returns at once: the tasks wait for it (fp_slurm_container_wait), so that
 * the step is running and scancel reaches the pull. */
int fp_slurm_container_start(struct fp_slurm_container *c, const struct fp_slurm_request *r,
                             fpull_err *err);

/* In a task, still root (slurm_spank_task_init_privileged): waits for the runner, then
 * reads what it chose and opens the container's namespaces, which must be UID's. Errors are
 * the contract's codes; fpull's own error line is already on the step's stderr then
 * (err->msg is empty). */
int fp_slurm_container_wait(struct fp_slurm_container *c, const struct fp_slurm_settings *s,
                            uint32_t job_id, uint32_t step_id, uid_t uid, fpull_err *err);

/* Opens the namespaces of the container whose init is PID (decimal), as root, accepting
 * only a user namespace UID owns and a mount namespace that user namespace owns. */
int fp_slurm_ns_open(struct fp_slurm_container *c, const char *pid, uid_t uid, fpull_err *err);

/* In a task that joined: tells the runner (the last one lets it delete the container). */
void fp_slurm_container_joined(struct fp_slurm_container *c);

/* In a task: joins c's namespaces; without remap_root, the task keeps its own uid and gid
 * inside (a user namespace nested in the container's maps them to its root). */
int fp_slurm_container_join(const struct fp_slurm_container *c, uid_t uid, gid_t gid,
                            int remap_root, fpull_err *err);

void fp_slurm_container_free(struct fp_slurm_container *c);

/* Kills the runner of this process, if one is running (scancel during the pull). */
void fp_slurm_container_cancel(void);

#endif
