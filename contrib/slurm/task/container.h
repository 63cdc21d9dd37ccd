/* fpull Slurm plugin: the step's container, and the tasks' side of it (task/container.c,
 * join.c).
 *
 * In slurmstepd (slurm_spank_user_init, root/container_start.c) a child creates the job's
 * directory as root, drops every id to the job's user for good and execs the runner
 * (runner/runner.c, a program of its own), which runs `fpull pull --format bundle` into the
 * step's private directory, writes the container's config.json beside the image's, and has
 * the runtime (rootless runc or crun) create and start the container, whose process is the
 * holder (holder/hold.c): it and its child hold the user and mount namespaces the tasks
 * join. Each task, as the job's user in slurm_spank_task_init, waits for the runner (the
 * step is running then: scancel ends the pull at once), reads what it chose from the step's
 * directory and joins the holder's namespaces through pidfds (join.c): root opens nothing
 * the user can name. A task stays slurmstepd's child (signals, accounting and cgroups as for
 * any task); once every local task has joined, the runner kills the holder and the runtime
 * deletes the container: the namespaces live on in the tasks.
 */
#ifndef FPULL_SLURM_CONTAINER_H
#define FPULL_SLURM_CONTAINER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <fpull/error.h>

#include "common/settings.h"

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

/* Closes c's descriptors and frees what it holds (slurmstepd at exit, a task that failed). */
void fp_slurm_container_free(struct fp_slurm_container *c);

#endif
