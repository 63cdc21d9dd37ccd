/* fpull Slurm plugin: the step's container.
 *
 * In slurmstepd (slurm_spank_user_init) a child creates the job's directory as root, drops
 * every id to the job's user for good and execs the runner (runner.c, a program of its
 * own), which runs `fpull pull --format bundle` into the step's private directory, writes
 * the container's config.json beside the image's, and has the runtime (rootless runc or
 * crun) create and start the container, whose process is the holder (hold.c): it and its
 * child hold the user and mount namespaces the tasks join. Each task, as the job's user in
 * slurm_spank_task_init, waits for the runner (the step is running then: scancel ends the
 * pull at once), reads what it chose from the step's directory and joins the holder's
 * namespaces through pidfds (join.c): root opens nothing the user can name. A task stays
 * slurmstepd's child (signals, accounting and cgroups as for any task); once every local
 * task has joined, the runner kills the holder and the runtime deletes the container: the
 * namespaces live on in the tasks.
 */
#ifndef FPULL_SLURM_CONTAINER_H
#define FPULL_SLURM_CONTAINER_H

#include <stddef.h>
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
  const char *cache;    /* FPULL_CACHE for the pull: the job's, else shared_cache=/UID, or NULL */
  const char *gpus;     /* the allocation's GPUs (CUDA_VISIBLE_DEVICES), or NULL */
  const char *save;     /* --fpull-save: a SquashFS file of the image, written by node 0 */
  int entrypoint;       /* --fpull-entrypoint: the tasks need the image's Entrypoint */
  int squashfs;         /* --fpull-format=squashfs: pulled as one SquashFS file and mounted */
  uint32_t ntasks;      /* the step's tasks on this node: each joins, then the holder goes */
  int quiet;            /* --fpull-quiet: no line but errors */
  int readonly;         /* --fpull-readonly: the image is the container's read-only root */
  const char *name;     /* --fpull-name: a container kept for later steps, or NULL */
  const char *term;     /* the job's TERM */
  const char *pmix_dir; /* Slurm's PMIx server directory of the step, or NULL */
  const char *script;   /* the batch step's script (slurmd's spool), mounted read-only, or NULL */
  const char *holder;   /* the holder program's path (hold.c) */
  int info_fd;          /* (the runner's own) */
};

/* What the tasks join. */
struct fp_slurm_container {
  int info_fd, ack_fd;      /* to the runner; -1 when none */
  int holder_fd, nested_fd; /* pidfds of the holder and its child; -1 when none */
  char digest[80];          /* the chosen entry's manifest digest */
  char *workdir;            /* the image's WorkingDir, or NULL */
  char *home;               /* the user's home, when it is mounted inside, or NULL */
  char **env;               /* the image's Env (NULL-terminated) */
  char **entrypoint;        /* with --fpull-entrypoint, the image's Entrypoint, or NULL */
};

/* In slurmstepd: starts the runner, which pulls and creates the step's container (see
 * above), and returns at once: the tasks wait for it (fp_slurm_container_wait), so that
 * the step is running and scancel reaches the pull. */
int fp_slurm_container_start(struct fp_slurm_container *c, const struct fp_slurm_request *r,
                             fpull_err *err);

/* In a task, as the job's user (slurm_spank_task_init): waits for the runner, then reads
 * what it chose and opens the holder's pidfds. Errors are the contract's codes; fpull's own
 * error line is already on the step's stderr then (err->msg is empty). */
int fp_slurm_container_wait(struct fp_slurm_container *c, const struct fp_slurm_settings *s,
                            uint32_t job_id, uint32_t step_id, fpull_err *err);

/* In a task that joined: tells the runner (the last one lets it delete the container). */
void fp_slurm_container_joined(struct fp_slurm_container *c);

/* In a task, as the job's user: joins c's namespaces; without remap_root, the task keeps
 * its own uid and gid inside (the holder's child's user namespace). */
int fp_slurm_container_join(const struct fp_slurm_container *c, int remap_root, fpull_err *err);

/* pidfd_open(2). */
int fp_pidfd_open(pid_t pid);

/* The path of a program of the plugin's (the runner, the holder) into buf: beside the
 * plugin, else in the libexec directory it was installed for. */
const char *fp_slurm_program(const char *name, char *buf, size_t len);

void fp_slurm_container_free(struct fp_slurm_container *c);

/* Kills the runner of this process, if one is running (scancel during the pull). */
void fp_slurm_container_cancel(void);

#endif
