/* fpull-slurm-runner: what every stage of the work shares (stage.c), below them all: the
 * state of one step's work and the helpers each stage uses. runner.c orders the work and
 * calls the stages (runner_image.h, runner_pull.h, runner_spec.h, runner_runtime.h); a
 * stage includes only the headers of files below it, never runner.c's work. */
#ifndef FPULL_SLURM_RUNNER_STAGE_H
#define FPULL_SLURM_RUNNER_STAGE_H

#include <limits.h>
#include <stddef.h>

#include "common/request.h"
#include "base/util.h"

/* The runner's records for the tasks, each "K<value>\0": D digest, W workdir, E one Env
 * entry, N one Entrypoint element (--fpull-entrypoint), P the holder's pid and Q its
 * child's (last), X an exit code when it failed. */
/* PATH where the image names none: the runtimes' default. */
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct runner {
  const struct fp_slurm_request *r;
  char step[64];         /* the step's directory, relative to the job's */
  char bundle[PATH_MAX]; /* the step's bundle (config.json), absolute */
  char tree[PATH_MAX];   /* the image's (rootfs/, fpull's config.json): the bundle's, or
                            a kept one in the node store */
  char cache[PATH_MAX];  /* --cache-dir, or "" for fpull's default (the user's own) */
  char **envp;
  const char *pull_image;   /* what is pulled: the image, or it pinned to a digest */
  int inspect;              /* resolve only (fpull inspect) */
  int offline_only;         /* an earlier resolution found the registry down */
  int went_offline;         /* the last pull() used the cache only */
  int mounted;              /* the image is a SquashFS file mounted in the bundle */
  int home_mounted;         /* the user's home is bind mounted at its own path */
  const char *rootfs;       /* the container's root when it is not the tree's rootfs/ (a
                               writable layer over a kept tree), or NULL */
  const char *format;       /* what pull() asks fpull for: "bundle" or "squashfs" */
  char dest[PATH_MAX + 16]; /* where: the tree, or the SquashFS file in the bundle */
};

/* stage.c: helpers every stage uses. */
/* Appends the record "KIND VALUE\0" for the tasks. */
void fp_runner_send_rec(struct fp_buf *recs, char kind, const char *value);
/* Runs argv as the user (common/run.h), its stdout into out when not NULL. */
int fp_runner_run(char *const argv[], char *const envp[], struct fp_buf *out, int quiet);
/* p is an absolute path of a directory the user may write. */
int fp_runner_dir_writable(const char *p);
/* The options every fpull the step runs shares (the site's config and policy, the cache),
 * appended to argv at n; the new count. */
size_t fp_runner_common_args(const struct runner *rn, const char **argv, size_t n);
/* IMAGE pinned to DIGEST, or NULL when IMAGE does not parse. */
char *fp_runner_pinned_ref(const char *image, const char *digest);

#endif
