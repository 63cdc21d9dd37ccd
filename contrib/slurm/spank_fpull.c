/* fpull's Slurm SPANK plugin, in the spirit of pyxis:
 *
 *   sbatch|srun --fpull-image=IMAGE [--fpull-features=LIST] [--fpull-format=dir|bundle] ...
 *
 * job prolog (root, each node)  prefetches IMAGE's entry for this node (or for LIST) into
 *                               the node's or the shared cache, creates the job-private
 *                               directory, and never fails: an image problem must fail the
 *                               job, not drain the node, so it is recorded for the user part;
 * user init (the job's user)    pulls --offline from that cache into the job-private
 *                               directory and exports FPULL_ROOTFS; with bundle, pulls an
 *                               OCI runtime bundle there (rootfs + config.json) and exports
 *                               FPULL_BUNDLE too;
 * task init (each task)         a recorded or own failure ends the task before the job's
 *                               program runs, with one "fpull: " line and fpull's exit code;
 * job epilog (root)             removes the job-private directory.
 *
 * plugstack.conf: required /usr/lib/.../fpull_spank.so [cache_dir=DIR] [run_dir=DIR]
 *                 [config=FILE] [data_dir=DIR] [jobs=N]
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include <fpull/features.h>
#include <fpull/log.h>
#include <fpull/ref.h>

#include "image.h"
#include "job_dir.h"
#include "util.h"

SPANK_PLUGIN(fpull, 1);

enum { OPT_IMAGE = 1, OPT_FEATURES, OPT_FORMAT };

static int check_option(int val, const char *optarg, int remote);

/* Registered from slurm_spank_init: sbatch and salloc (the allocator context) only know
 * options registered that way, not an exported spank_options table. */
static struct spank_option fpull_options[] = {
    {"fpull-image", "IMAGE",
     "run the job with IMAGE's rootfs (chosen for each node by fpull) in $FPULL_ROOTFS", 1,
     OPT_IMAGE, check_option},
    {"fpull-features", "LIST",
     "choose IMAGE's entry for these features instead of each node's own (as fpull --features)", 1,
     OPT_FEATURES, check_option},
    {"fpull-format", "dir|bundle",
     "dir: the rootfs in $FPULL_ROOTFS (default); bundle: an OCI runtime bundle in $FPULL_BUNDLE "
     "(config.json from the image config, rootfs in $FPULL_ROOTFS)",
     1, OPT_FORMAT, check_option},
    SPANK_OPTIONS_TABLE_END};

/* --fpull-format's values; the first is the default. squashfs (fpull pull's third format)
 * is not offered: a job would need privileges to mount it. */
static const char *const formats[] = {"dir", "bundle", NULL};

/* A failure of the user part, reported by each task (see slurm_spank_task_init). */
static fpull_err failure;

static int format_known(const char *name)
{
  for (size_t i = 0; name && formats[i]; i++)
    if (strcmp(name, formats[i]) == 0)
      return 1;
  return 0;
}

static int check_option(int val, const char *optarg, int remote)
{
  fpull_err err = {0};
  if (val == OPT_IMAGE) {
    struct fpull_ref *ref = NULL;
    /* A typo in IMAGE is a submit-time error, never a job that runs with something else. */
    if (fpull_ref_parse(&ref, optarg ? optarg : "", &err) != 0) {
      slurm_error("fpull: --fpull-image: %s", err.msg);
      return -1;
    }
    fpull_ref_free(ref);
  } else if (val == OPT_FORMAT && !format_known(optarg)) {
    /* A typo is refused at submit: a job silently given the other format would find no
     * config.json, or a bundle where it expected a plain rootfs. */
    const char *near = fpull_suggest(optarg ? optarg : "", formats);
    slurm_error("fpull: --fpull-format=%s: unknown format%s%s%s (dir or bundle)",
                optarg ? optarg : "", near ? " (did you mean '" : "", near ? near : "",
                near ? "'?)" : "");
    return -1;
  } else if (val == OPT_FEATURES && (!optarg || !*optarg)) {
    slurm_error("fpull: --fpull-features: empty list");
    return -1;
  }
  return 0;
}

/* The option's value in any context (the prolog and epilog have no callbacks). */
static const char *option(spank_t sp, int val)
{
  char *arg = NULL;
  for (size_t i = 0; fpull_options[i].name; i++)
    if (fpull_options[i].val == val &&
        spank_option_getopt(sp, &fpull_options[i], &arg) == ESPANK_SUCCESS)
      return arg;
  return NULL;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
  /* The prolog and epilog read the options with spank_option_getopt; registering is for
   * the contexts that parse a command line, and may be refused elsewhere. */
  spank_context_t ctx = spank_context();
  if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
    return 0;
  for (size_t i = 0; fpull_options[i].name; i++)
    if (spank_option_register(sp, &fpull_options[i]) != ESPANK_SUCCESS) {
      slurm_error("fpull: cannot register --%s", fpull_options[i].name);
      return -1;
    }
  return 0;
}

static void log_to_slurm(void *ud, int level, const char *msg)
{
  if (level == FPULL_LOG_WARN)
    slurm_info("fpull: warning: %s", msg);
  else
    slurm_debug("fpull: %s", msg);
}

static int settings_load(struct fp_slurm_settings *s, int ac, char **av)
{
  fpull_err err = {0};
  fpull_log_set(log_to_slurm, NULL);
  if (fp_slurm_settings_parse(s, ac, av, &err) != 0) {
    slurm_error("fpull: plugstack.conf: %s", err.msg);
    return -1;
  }
  return 0;
}

/* The job's ids. Where spank_get_item has no answer in this context (the prolog and epilog
 * of some Slurm versions), the job script environment Slurm sets for them does. */
static int job_ids(spank_t sp, uint32_t *job_id, uid_t *uid, gid_t *gid)
{
  const char *v;
  if (spank_get_item(sp, S_JOB_ID, job_id) != ESPANK_SUCCESS) {
    if (!(v = getenv("SLURM_JOB_ID")))
      return -1;
    *job_id = (uint32_t)strtoul(v, NULL, 10);
  }
  if (uid && spank_get_item(sp, S_JOB_UID, uid) != ESPANK_SUCCESS) {
    if (!(v = getenv("SLURM_JOB_UID")))
      return -1;
    *uid = (uid_t)strtoul(v, NULL, 10);
  }
  if (gid && spank_get_item(sp, S_JOB_GID, gid) != ESPANK_SUCCESS) {
    if (!(v = getenv("SLURM_JOB_GID")))
      return -1;
    *gid = (gid_t)strtoul(v, NULL, 10);
  }
  return *job_id ? 0 : -1;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
  const char *image = option(sp, OPT_IMAGE);
  if (!image)
    return 0;
  struct fp_slurm_settings s;
  uint32_t job_id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  if (settings_load(&s, ac, av) != 0)
    return 0; /* the user part reports the same plugstack error in the job */
  fpull_err err = {0};
  cleanup_close int run_fd = -1;
  int rc = 0;
  if (job_ids(sp, &job_id, &uid, &gid) != 0)
    rc = fpull_err_set(&err, FPULL_EFAIL, "prolog: no job id or user");
  if (rc == 0)
    rc = fp_slurm_run_dir_open(&run_fd, s.run_dir, 1, &err);
  if (rc == 0)
    rc = fp_slurm_job_dir_create(run_fd, job_id, uid, gid, &err);
  if (rc == 0) {
    cleanup_free char *digest = NULL;
    fpull_err rec = {0};
    rc = fp_slurm_prefetch(&digest, &s, image, option(sp, OPT_FEATURES), &err);
    if (rc == 0 ? fp_slurm_chosen_record(run_fd, job_id, digest, &rec) != 0
                : fp_slurm_error_record(run_fd, job_id, rc, err.msg, &rec) != 0)
      slurm_error("fpull: job %" PRIu32 ": %s", job_id, rec.msg);
  }
  if (rc != 0)
    slurm_error("fpull: job %" PRIu32 ": %s (exit %d: %s)", job_id, err.msg, rc,
                fp_slurm_code_meaning(rc));
  fp_slurm_settings_free(&s);
  /* Never fail the prolog over an image: Slurm would drain this node for the user's typo or
   * the registry's bad day. The job fails instead (user part). */
  return 0;
}

static int fail(const fpull_err *err)
{
  failure = *err;
  /* Only to slurmd's log: in the user part slurm_error would also reach the job's output,
   * and the user is to get the one line slurm_spank_task_init writes. */
  slurm_info("fpull: %s (exit %d: %s)", err->msg, err->code, fp_slurm_code_meaning(err->code));
  return 0;
}

/* Not the image's fault: its own code (5 for a missing directory) would send the user
 * looking at the image. */
static int no_prolog(fpull_err *err)
{
  fpull_err_prefix(err, "the job prolog did not prepare this node (is fpull_spank.so in the "
                        "compute nodes' plugstack.conf?)");
  err->code = FPULL_EFAIL;
  return FPULL_EFAIL;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
  const char *image = option(sp, OPT_IMAGE);
  if (!image)
    return 0;
  struct fp_slurm_settings s;
  fpull_err err = {0};
  if (settings_load(&s, ac, av) != 0) {
    fpull_err_set(&err, FPULL_EUSAGE, "the fpull plugin's plugstack.conf line is wrong");
    return fail(&err);
  }
  uint32_t job_id = 0;
  cleanup_close int run_fd = -1;
  int rc = 0;
  if (job_ids(sp, &job_id, NULL, NULL) != 0)
    rc = fpull_err_set(&err, FPULL_EFAIL, "no job id");
  if (rc == 0 && fp_slurm_run_dir_open(&run_fd, s.run_dir, 0, &err) != 0)
    rc = no_prolog(&err);
  /* What the prolog could not do is the answer, said in the prolog's words. */
  if (rc == 0 && fp_slurm_error_lookup(run_fd, job_id, &err))
    rc = err.code;
  char name[16];
  struct stat st;
  snprintf(name, sizeof name, "%" PRIu32, job_id);
  if (rc == 0) {
    int e = fstatat(run_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ? errno
            : S_ISDIR(st.st_mode)                                ? 0
                                                                 : ENOTDIR;
    if (e) {
      fpull_err_set(&err, FPULL_EFAIL, "%s/%s: %s", s.run_dir, name, strerror(e));
      rc = no_prolog(&err);
    }
  }
  /* The option was checked when it was given; a value that got here another way is still
   * no reason to give the job the other format. */
  const char *format = option(sp, OPT_FORMAT);
  int bundle = format && strcmp(format, "bundle") == 0;
  if (rc == 0 && format && !format_known(format))
    rc = fpull_err_set(&err, FPULL_EUSAGE, "--fpull-format=%s: unknown format (dir or bundle)",
                       format);
  /* dest is what the pull creates (and renames into place whole): the rootfs, or the bundle
   * around it. */
  char dest[PATH_MAX], rootfs[PATH_MAX];
  if (rc == 0 && (snprintf(dest, sizeof dest, "%s/%" PRIu32 "/%s", s.run_dir, job_id,
                           bundle ? "bundle" : "rootfs") >= (int)sizeof dest ||
                  snprintf(rootfs, sizeof rootfs, "%s%s", dest, bundle ? "/rootfs" : "") >=
                      (int)sizeof rootfs))
    rc = fpull_err_set(&err, FPULL_EFAIL, "run_dir %s: path too long", s.run_dir);
  /* Exactly the entry the prolog fetched: this process may detect another target (a step
   * that sees fewer GPUs), and --offline would then miss the cache. */
  char digest[128];
  cleanup_free char *pinned = NULL;
  if (rc == 0 && fp_slurm_chosen_lookup(run_fd, job_id, digest, sizeof digest))
    pinned = fp_slurm_pinned_ref(image, digest);
  /* Each step of the job runs this; the first one on the node unpacks. */
  if (rc == 0 && lstat(dest, &st) != 0) {
    slurm_info("fpull: job %" PRIu32 ": unpacking %s into %s", job_id, pinned ? pinned : image,
               dest);
    rc = fp_slurm_pull_offline(&s, pinned ? pinned : image, option(sp, OPT_FEATURES), dest, bundle,
                               &err);
    /* Two steps starting at once: the other one published it first. */
    if (rc != 0 && lstat(dest, &st) == 0 && S_ISDIR(st.st_mode))
      rc = 0;
  }
  if (rc == 0 && bundle && spank_setenv(sp, "FPULL_BUNDLE", dest, 1) != ESPANK_SUCCESS)
    rc = fpull_err_set(&err, FPULL_EFAIL, "cannot set FPULL_BUNDLE");
  if (rc == 0 && spank_setenv(sp, "FPULL_ROOTFS", rootfs, 1) != ESPANK_SUCCESS)
    rc = fpull_err_set(&err, FPULL_EFAIL, "cannot set FPULL_ROOTFS");
  fp_slurm_settings_free(&s);
  return rc ? fail(&err) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
  if (!failure.code)
    return 0;
  /* Here the task's stderr is the job's: the user sees one line there. Ending the task with
   * fpull's exit code fails the job with that code (ExitCode=5:0 for "not found"); an error
   * return would fail it as exit 1, with Slurm's own lines around ours. */
  fprintf(stderr, "fpull: %s (exit %d: %s)\n", failure.msg, failure.code,
          fp_slurm_code_meaning(failure.code));
  fflush(stderr);
  _exit(failure.code);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
  if (!option(sp, OPT_IMAGE))
    return 0;
  struct fp_slurm_settings s;
  if (settings_load(&s, ac, av) != 0)
    return 0;
  fpull_err err = {0};
  uint32_t job_id = 0;
  cleanup_close int run_fd = -1;
  int rc = 0;
  if (job_ids(sp, &job_id, NULL, NULL) != 0)
    rc = fpull_err_set(&err, FPULL_EFAIL, "epilog: no job id");
  if (rc == 0)
    rc = fp_slurm_run_dir_open(&run_fd, s.run_dir, 0, &err);
  if (rc == 0)
    rc = fp_slurm_job_dir_remove(run_fd, job_id, &err);
  if (rc != 0 && rc != FPULL_ENOTFOUND)
    slurm_error("fpull: job %" PRIu32 ": epilog: %s", job_id, err.msg);
  fp_slurm_settings_free(&s);
  /* What is left is only disk space in run_dir; draining the node for it would cost more. */
  return 0;
}
