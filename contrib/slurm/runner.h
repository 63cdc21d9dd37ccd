/* fpull-slurm-runner's parts (runner.c and runner_*.c): the state of one step's work and
 * what each file offers the others. */
#ifndef FPULL_SLURM_RUNNER_H
#define FPULL_SLURM_RUNNER_H

#include <cjson/cJSON.h>
#include <limits.h>

#include "container.h"
#include "base/util.h"

/* The runner's records for the tasks, each "K<value>\0": D digest, W workdir, E one Env
 * entry, N one Entrypoint element (--fpull-entrypoint), P the holder's pid and Q its
 * child's (last), X an exit code when it failed. */
/* PATH where the image names none: the runtimes' default. */
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define SPEC_MAX (4u << 20)

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

/* runner.c: helpers every part uses. */
/* Appends the record "KIND VALUE\0" for the tasks. */
void fp_runner_send_rec(struct fp_buf *recs, char kind, const char *value);
/* Runs argv as the user (run.h), its stdout into out when not NULL. */
int fp_runner_run(char *const argv[], char *const envp[], struct fp_buf *out, int quiet);
/* p is an absolute path of a directory the user may write. */
int fp_runner_dir_writable(const char *p);
/* The options every fpull the step runs shares (the site's config and policy, the cache),
 * appended to argv at n; the new count. */
size_t fp_runner_common_args(const struct runner *rn, const char **argv, size_t n);
/* IMAGE pinned to DIGEST, or NULL when IMAGE does not parse. */
char *fp_runner_pinned_ref(const char *image, const char *digest);

/* runner_pull.c: fpull under the step's pull policy. */
/* Pulls (or with rn->inspect, resolves) rn->pull_image; fpull's --json result. 0, or
 * fpull's exit code after it said why on the step's stderr. */
int fp_runner_pull(struct runner *rn, cJSON **result);
/* The one line that says what this node chose, and why. */
void fp_runner_say_chosen(const struct runner *rn, const cJSON *res);
/* The image config of the entry DIGEST (from the cache, else fetched); NULL with *rc. */
cJSON *fp_runner_image_config(const struct runner *rn, const char *digest, const char *what,
                              int *rc);
/* --fpull-entrypoint: the image's Entrypoint as N records. */
int fp_runner_send_entrypoint(const struct runner *rn, const char *digest, struct fp_buf *info);
/* --fpull-save: the entry as a SquashFS file; says why when it cannot, never fails. */
void fp_runner_save(struct runner *rn, const char *digest);

/* runner_image.c: the container's tree, when not a plain pull. */
int fp_runner_from_squashfs(struct runner *rn, struct fp_buf *info);
int fp_runner_pull_squashfs(struct runner *rn, cJSON **res);
int fp_runner_from_name(struct runner *rn, cJSON **res, int *lock, int *reused);
int fp_runner_from_store(struct runner *rn, cJSON **res, int *lock);

/* runner_spec.c: the container's config.json. */
/* Writes b to path (mode 0644, never through a symlink); -1 when it cannot. */
int fp_runner_write_small(const char *path, const struct fp_buf *b);
/* The bundle's config.json; the image's WorkingDir and Env to *workdir and *env. */
int fp_runner_write_spec(struct runner *rn, char **workdir, char ***env);

/* runner_runtime.c: the OCI runtime. */
/* Where the program rt is (fp_slurm_find_program), else rt as given. */
const char *fp_runner_runtime_path(const char *rt, char *buf, size_t len);
/* The runtime's VERB for the step's container, with EXTRA arguments. */
int fp_runner_runtime(struct runner *rn, const char *verb, const char *const *extra, int quiet);
/* Creates and starts the container, whose process is the holder; its and its child's pids. */
int fp_runner_start_holder(struct runner *rn, long *holder, long *nested);
/* The runtime's delete --force of the step's container (errors unsaid). */
int fp_runner_delete(struct runner *rn);

#endif
