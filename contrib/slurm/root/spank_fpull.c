/* fpull's Slurm SPANK plugin, in the spirit of pyxis: the tasks of a step run inside an
 * image fpull chose for the node.
 *
 *   srun [--fpull-image=IMAGE] [--fpull-features=LIST] [--fpull-mounts=SRC[:DST[:FLAGS]],...]
 *        [--fpull-workdir=DIR] [--[no-]fpull-mount-home] [--fpull-remap-root] [--fpull-entrypoint]
 *        [--fpull-pull=always|missing|newer|never] cmd ...
 *
 * submit (srun, sbatch, salloc)   checks the options: a typo is refused before the job is
 *                                 queued, naming the option and a near miss;
 * user init (slurmstepd, user)    creates the job's private directory in run_dir, then pulls the
 * image as the job's user in a child that dropped every id, with the user's credentials and
 * progress lines on the step's stderr, and creates the step's container with a rootless runtime
 * (container.h); task init (each task, user)     joins the container, enters the working directory
 * and merges the image's Env under the job's; exit (slurmstepd)               a pull still running
 * is killed; job epilog (root)               removes the job's directory without crossing a mount
 * point.
 *
 * A batch script given --fpull-image runs inside that image, as with pyxis; its srun steps
 * inherit the option and may name another image, or none (on the node).
 * plugstack.conf arguments: settings.h (docs/cluster.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include <fpull/log.h>

#include "common/job_pin.h"
#include "common/run.h"
#include "common/settings.h"
#include "container_start.h"
#include "job_dir.h"
#include "tree_remove.h"
#include "task/container.h"
#include "task/seccomp.h"
#include "task/task_env.h"
#include "base/util.h"

SPANK_PLUGIN(fpull, 1);

static int check_option(int val, const char *optarg, int remote);

/* Registered from slurm_spank_init: sbatch and salloc (the allocator context) only know
 * options registered that way, not an exported spank_options table. */
static struct spank_option fpull_options[] = {
    {"fpull-image", "IMAGE|/PATH.sqsh|none",
     "run the step's tasks in IMAGE (its entry for each node, by fpull) or a SquashFS file; "
     "none: on the node itself",
     1, FP_OPT_IMAGE, check_option},
    {"fpull-features", "LIST",
     "choose IMAGE's entry for these features instead of each node's own (as fpull --features)", 1,
     FP_OPT_FEATURES, check_option},
    {"fpull-format", "dir|squashfs",
     "how the image is kept on the node: an unpacked tree (dir, the default), or one SquashFS "
     "file mounted for the step (squashfs)",
     1, FP_OPT_FORMAT, check_option},
    {"fpull-mounts", "SRC[:DST[:FLAG[+FLAG]]][,...]",
     "bind mounts into the container (FLAG: ro, rw, rprivate, rslave, nosuid, nodev, noexec, ...)",
     1, FP_OPT_MOUNTS, check_option},
    {"fpull-workdir", "DIR",
     "working directory inside the container (default: the image's WorkingDir, else /)", 1,
     FP_OPT_WORKDIR, check_option},
    {"fpull-mount-home", NULL, "bind mount the user's home directory (the site's default)", 0,
     FP_OPT_MOUNT_HOME, check_option},
    {"no-fpull-mount-home", NULL, "do not bind mount the user's home directory", 0,
     FP_OPT_NO_MOUNT_HOME, check_option},
    {"fpull-remap-root", NULL, "be root inside the container (the user's uid outside)", 0,
     FP_OPT_REMAP_ROOT, check_option},
    {"no-fpull-remap-root", NULL, "be yourself inside the container (the site's default)", 0,
     FP_OPT_NO_REMAP_ROOT, check_option},
    {"fpull-entrypoint", NULL,
     "run the image's Entrypoint with the task's command as its arguments (default: the "
     "command alone)",
     0, FP_OPT_ENTRYPOINT, check_option},
    {"no-fpull-entrypoint", NULL, "run the command alone (the site's default)", 0,
     FP_OPT_NO_ENTRYPOINT, check_option},
    {"fpull-env", "NAME[,NAME...]",
     "these variables keep the job's values over the image's (as pyxis --container-env)", 1,
     FP_OPT_ENV, check_option},
    {"fpull-readonly", NULL,
     "the image is the container's read-only root (pyxis --container-readonly)", 0, FP_OPT_READONLY,
     check_option},
    {"fpull-name", "NAME",
     "keep the container's writable state for the job's later steps that name it (the site's "
     "container_scope=global: for the user's later jobs on the node)",
     1, FP_OPT_NAME, check_option},
    {"fpull-quiet", NULL, "no line from fpull on the step's stderr but errors", 0, FP_OPT_QUIET,
     check_option},
    {"fpull-pull", "always|missing|newer|never",
     "when to ask the registry (default: the site's, else newer: the cached image when the "
     "registry cannot be reached)",
     1, FP_OPT_PULL, check_option},
    {"fpull-save", "PATH.sqsh",
     "also write the step's image to PATH as a SquashFS file (the first node of the step)", 1,
     FP_OPT_SAVE, check_option},
    SPANK_OPTIONS_TABLE_END};

/* The site's settings (slurm_spank_init) and this step's state. */
static struct fp_slurm_settings settings;
static int settings_ok;
static fpull_err settings_err; /* why they are wrong, when they are */
static struct fp_slurm_container container = {
    .info_fd = -1, .ack_fd = -1, .holder_fd = -1, .nested_fd = -1};
static int in_container;
static fpull_err failure;

static const char *option_name(int val)
{
  for (size_t i = 0; fpull_options[i].name; i++)
    if (fpull_options[i].val == val)
      return fpull_options[i].name;
  return "?";
}

/* What the submit command was given (spank_option_getopt has no answer there before the
 * job exists): for the job's pin (slurm_spank_init_post_opt). */
static char *submit_image, *submit_pull;

static int check_option(int val, const char *optarg, int remote)
{
  /* slurmstepd gets what the submit command checked. */
  if (remote)
    return 0;
  if (val == FP_OPT_IMAGE || val == FP_OPT_PULL) {
    char **keep = val == FP_OPT_IMAGE ? &submit_image : &submit_pull;
    free(*keep);
    *keep = optarg ? fp_xstrdup(optarg) : NULL;
  }
  fpull_err err = {0};
  if (!settings_ok) {
    slurm_error("fpull: %s", settings_err.msg);
    return -1;
  }
  if (fp_slurm_option_check(val, optarg, &settings, &err) != 0) {
    slurm_error("fpull: %s", err.msg[0] ? err.msg : option_name(val));
    return -1;
  }
  return 0;
}

/* The option's value in any context (the epilog has no callbacks); for a flag, "". */
static const char *option(spank_t sp, int val)
{
  char *arg = NULL;
  for (size_t i = 0; fpull_options[i].name; i++)
    if (fpull_options[i].val == val &&
        spank_option_getopt(sp, &fpull_options[i], &arg) == ESPANK_SUCCESS)
      return arg ? arg : "";
  return NULL;
}

static void log_to_slurm(void *ud, int level, const char *msg)
{
  if (level == FPULL_LOG_WARN)
    slurm_info("fpull: warning: %s", msg);
  else
    slurm_debug("fpull: %s", msg);
}

/* The plugstack.conf arguments, parsed once per process (the epilog's gets no
 * slurm_spank_init). A wrong line fails what uses fpull, naming it, and nothing else: not
 * slurmd, not a job without --fpull-image. */
static int settings_load(int ac, char **av)
{
  if (settings_ok)
    return 0;
  fpull_log_set(log_to_slurm, NULL);
  memset(&settings_err, 0, sizeof settings_err);
  if (fp_slurm_settings_parse(&settings, ac, av, &settings_err) != 0) {
    fpull_err_prefix(&settings_err, "plugstack.conf");
    return -1;
  }
  settings_ok = 1;
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
  /* Said where an admin looks (slurmd's log); users see it when they use an option. */
  if (settings_load(ac, av) != 0 && spank_context() == S_CTX_SLURMD)
    slurm_error("fpull: %s", settings_err.msg);
  fpull_err rd = {0};
  if (settings_ok && spank_context() == S_CTX_SLURMD &&
      fp_slurm_run_dir_check(settings.run_dir, &rd) != 0)
    slurm_error("fpull: plugstack.conf: %s", rd.msg);
  /* The epilog reads the options with spank_option_getopt; registering is for the contexts
   * that parse a command line, and may be refused elsewhere. */
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

/* The job's ids. Where spank_get_item has no answer in this context (the epilog of some
 * Slurm versions), the environment Slurm sets for it does. */
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

/* A step whose tasks run in the image: any but the extern and an interactive step (their
 * processes are Slurm's own or the user's shell on the node). The batch script runs in the
 * image sbatch named, as pyxis does; its steps inherit the option (Slurm exports it) and may
 * name another image, or none. */
static int container_step(spank_t sp, uint32_t *step_id)
{
  /* --fpull-name alone runs in that container (it must exist), as pyxis's does. */
  const char *image = option(sp, FP_OPT_IMAGE);
  if (spank_context() != S_CTX_REMOTE ||
      (image ? fp_slurm_image_is_none(image) : !option(sp, FP_OPT_NAME)))
    return 0;
  if (spank_get_item(sp, S_JOB_STEPID, step_id) != ESPANK_SUCCESS)
    return 0;
  return *step_id != SLURM_EXTERN_CONT && *step_id != SLURM_INTERACTIVE_STEP;
}

static int fail(const fpull_err *err)
{
  failure = *err;
  if (!failure.code)
    failure.code = FPULL_EFAIL;
  if (err->msg[0])
    slurm_info("fpull: %s (exit %d: %s)", err->msg, failure.code,
               fp_slurm_code_meaning(failure.code));
  return 0;
}

/* slurmstepd's configuration (libslurmfull's; not there in the submit commands). */
extern slurm_conf_t slurm_conf __attribute__((weak));

/* Slurm's mpi/pmix keeps each step's PMIx data store in SlurmdSpoolDir/pmix.JOB.STEP, made
 * before user_init; the tasks map it, so the container needs it at the same path. NULL
 * where there is none (no pmix step, or a site's PMIxCliTmpDirBase elsewhere). */
static const char *pmix_dir(spank_t sp, uint32_t job_id, uint32_t step_id, char *buf, size_t len)
{
  if (!&slurm_conf || !slurm_conf.slurmd_spooldir)
    return NULL;
  char node[256] = "", host[256] = "";
  if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) != ESPANK_SUCCESS)
    node[0] = '\0';
  gethostname(host, sizeof host - 1);
  size_t o = 0;
  for (const char *p = slurm_conf.slurmd_spooldir; *p && o + 1 < len; p++) {
    const char *sub = p[0] == '%' && p[1] == 'n' ? node : p[0] == '%' && p[1] == 'h' ? host : NULL;
    if (sub) {
      o += (size_t)snprintf(buf + o, len - o, "%s", sub);
      p++;
    } else {
      buf[o++] = *p;
    }
  }
  if (o >= len)
    return NULL;
  buf[o] = '\0';
  size_t n = strlen(buf);
  if ((size_t)snprintf(buf + n, len - n, "/pmix.%" PRIu32 ".%" PRIu32, job_id, step_id) >= len - n)
    return NULL;
  /* The step's PMIx directory may be the user's, who may mount on it: never stat()ed
   * through a mount (a FUSE daemon that never answers would hold slurmstepd). Only a
   * directory on its parent's own mount is used. */
  char *slash = strrchr(buf, '/');
  *slash = '\0';
  cleanup_close int parent = open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
  *slash = '/';
  cleanup_close int fd =
      parent < 0 ? -1 : openat(parent, slash + 1, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  return fd >= 0 && fp_slurm_mount_id(fd) == fp_slurm_mount_id(parent) && fstat(fd, &st) == 0 &&
                 S_ISDIR(st.st_mode)
             ? buf
             : NULL;
}

static const char *job_env(spank_t sp, const char *name, char *buf, int len)
{
  return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS && buf[0] ? buf : NULL;
}

/* At submit (srun, sbatch, salloc), as the user: the image's tag resolved once for the
 * whole job (common/job_pin.h), left in the environment the job and its steps get. Only
 * for the policies that ask the registry (newer, always); a submit that cannot resolve it
 * pins nothing, and each node checks the tag itself. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
  (void)ac;
  (void)av;
  spank_context_t ctx = spank_context();
  const char *image =
      (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) && settings_ok ? submit_image : NULL;
  if (!fp_slurm_pin_wanted(image))
    return 0;
  int policy = submit_pull ? fp_slurm_pull_parse(submit_pull) : (int)settings.pull;
  if (policy != FP_PULL_NEWER && policy != FP_PULL_ALWAYS)
    return 0;
  const char *pins = getenv(FP_SLURM_PINS_ENV);
  char digest[160];
  /* An srun inside a job takes the job's pin; a new job (sbatch, salloc, an srun outside
   * any job) resolves the tag anew, whatever its environment inherited. */
  int in_job = ctx == S_CTX_LOCAL && getenv("SLURM_JOB_ID");
  if (in_job && fp_slurm_pin_find(pins, image, digest, sizeof digest) &&
      strcmp(digest, FP_SLURM_PIN_UNANSWERED) != 0)
    return 0;
  int rc = fp_slurm_pin_resolve(&settings, image, digest, sizeof digest);
  /* Not resolved: no pin (an inherited one is another job's), each node checks; not
   * answered in time: the nodes run what they have cached without asking again. */
  cleanup_free char *v = fp_slurm_pin_set(pins, image,
                                          rc == 0    ? digest
                                          : rc == -1 ? FP_SLURM_PIN_UNANSWERED
                                                     : NULL);
  setenv(FP_SLURM_PINS_ENV, v, 1);
  return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
  uint32_t step_id = 0;
  if (!container_step(sp, &step_id) || failure.code)
    return 0;
  /* Every line the step's user sees from here, this process's, the runner's and the tasks',
   * names the node (run.h). */
  char node_name[256] = "";
  const char *node_named = job_env(sp, "SLURMD_NODENAME", node_name, sizeof node_name);
  if (!node_named && (node_named = getenv("SLURMD_NODENAME")) && !node_named[0])
    node_named = NULL;
  if (!node_named && gethostname(node_name, sizeof node_name - 1) == 0 && node_name[0])
    node_named = node_name;
  fp_slurm_say_node(node_named ? node_named : "");
  if (!settings_ok)
    return fail(&settings_err);
  struct fp_slurm_request r = {.s = &settings, .step_id = step_id, .node = node_named};
  fpull_err err = {0};
  if (job_ids(sp, &r.job_id, &r.uid, &r.gid) != 0) {
    fpull_err_set(&err, FPULL_EFAIL, "no job id or user");
    return fail(&err);
  }
  char home[PATH_MAX], dc[PATH_MAX], xc[PATH_MAX], xh[PATH_MAX], fc[PATH_MAX], gpus[1024],
      term[256];
  r.image = option(sp, FP_OPT_IMAGE);
  if (!r.image)
    r.image = ""; /* --fpull-name alone: the runner runs that container or says none is */
  /* A relative NAME.sqsh is in the directory the step was started from. */
  char cwd[PATH_MAX], image[PATH_MAX * 2 + 2];
  if (r.image && r.image[0] != '/' && fp_slurm_is_sqsh_name(r.image) &&
      (job_env(sp, "PWD", cwd, sizeof cwd) || job_env(sp, "SLURM_SUBMIT_DIR", cwd, sizeof cwd)) &&
      (size_t)snprintf(image, sizeof image, "%s/%s", cwd, r.image) < sizeof image)
    r.image = image;
  r.features = option(sp, FP_OPT_FEATURES);
  /* A relative SRC of --fpull-mounts is in the directory the step was started from, as
   * the submit checked it (common/settings.h). */
  cleanup_free char *mounts = NULL;
  r.mounts = option(sp, FP_OPT_MOUNTS);
  if (r.mounts &&
      (job_env(sp, "PWD", cwd, sizeof cwd) || job_env(sp, "SLURM_SUBMIT_DIR", cwd, sizeof cwd)))
    r.mounts = mounts = fp_slurm_mounts_resolve(r.mounts, cwd);
  r.mount_home = option(sp, FP_OPT_NO_MOUNT_HOME) ? 0
                 : option(sp, FP_OPT_MOUNT_HOME)  ? 1
                                                  : settings.mount_home;
  const char *pull = option(sp, FP_OPT_PULL);
  r.pull = pull && fp_slurm_pull_parse(pull) >= 0 ? (enum fp_slurm_pull)fp_slurm_pull_parse(pull)
                                                  : settings.pull;
  r.home = job_env(sp, "HOME", home, sizeof home);
  r.docker_config = job_env(sp, "DOCKER_CONFIG", dc, sizeof dc);
  r.xdg_config_home = job_env(sp, "XDG_CONFIG_HOME", xc, sizeof xc);
  r.xdg_cache_home = job_env(sp, "XDG_CACHE_HOME", xh, sizeof xh);
  /* The job's own FPULL_CACHE wins over the site's shared cache, as over fpull's config. */
  r.cache = job_env(sp, "FPULL_CACHE", fc, sizeof fc);
  if (!r.cache && settings.shared_cache &&
      snprintf(fc, sizeof fc, "%s/%u", settings.shared_cache, (unsigned)r.uid) < (int)sizeof fc)
    r.cache = fc;
  /* The GPUs the job was given: what Slurm's gres set, or told the job. */
  r.gpus = job_env(sp, "CUDA_VISIBLE_DEVICES", gpus, sizeof gpus);
  if (!r.gpus)
    r.gpus = job_env(sp, "SLURM_STEP_GPUS", gpus, sizeof gpus);
  if (!r.gpus)
    r.gpus = job_env(sp, "SLURM_JOB_GPUS", gpus, sizeof gpus);
  r.entrypoint = option(sp, FP_OPT_NO_ENTRYPOINT) ? 0
                 : option(sp, FP_OPT_ENTRYPOINT)  ? 1
                                                  : settings.execute_entrypoint;
  r.quiet = option(sp, FP_OPT_QUIET) != NULL;
  r.readonly = option(sp, FP_OPT_READONLY) != NULL;
  r.name = option(sp, FP_OPT_NAME);
  r.term = job_env(sp, "TERM", term, sizeof term);
  const char *format = option(sp, FP_OPT_FORMAT);
  r.squashfs = format && strcmp(format, "squashfs") == 0;
  if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &r.ntasks) != ESPANK_SUCCESS)
    r.ntasks = 1;
  /* --fpull-save: node 0 of a step on one node writes PATH; on several nodes, which may
   * choose different entries, every node is asked and writes its entry's own file (once
   * per entry: fp_runner_save), so that no kind of node gets another's build. */
  uint32_t node = 0, nnodes = 1;
  if (step_id == SLURM_BATCH_SCRIPT ||
      spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS || nnodes < 1)
    nnodes = 1;
  if (nnodes > 1 || (spank_get_item(sp, S_JOB_NODEID, &node) == ESPANK_SUCCESS && node == 0)) {
    r.save = option(sp, FP_OPT_SAVE);
    r.save_nodes = nnodes;
  }
  /* The step's first node says what all of them would (a cancelled step's one line). */
  if (spank_get_item(sp, S_JOB_NODEID, &r.node_id) != ESPANK_SUCCESS)
    r.node_id = 0;
  char pmix[PATH_MAX];
  r.pmix_dir = pmix_dir(sp, r.job_id, r.step_id, pmix, sizeof pmix);
  int argc = 0;
  char **argv = NULL;
  if (step_id == SLURM_BATCH_SCRIPT &&
      (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || !argv[0])) {
    fpull_err_set(&err, FPULL_EFAIL, "the batch script's path is unknown");
    return fail(&err);
  }
  if (step_id == SLURM_BATCH_SCRIPT) {
    r.script = argv[0];
    r.ntasks = 1; /* the script, whatever the job's task count says */
  }
  /* The digest the job's submit resolved the tag to (common/job_pin.h): every node of
   * every step runs that index's entries. */
  char pins[8192], pin[160];
  if (fp_slurm_pin_wanted(r.image) && job_env(sp, FP_SLURM_PINS_ENV, pins, sizeof pins) &&
      fp_slurm_pin_find(pins, r.image, pin, sizeof pin))
    r.pin = pin;
  if (fp_slurm_container_start(&container, &r, &err) != 0)
    return fail(&err);
  in_container = 1;
  return 0;
}

/* --fpull-workdir, else the image's WorkingDir, else /. */
static const char *workdir(spank_t sp)
{
  const char *wd = option(sp, FP_OPT_WORKDIR);
  if (wd && *wd)
    return wd;
  return container.workdir ? container.workdir : "/";
}

static int remap_root(spank_t sp)
{
  return option(sp, FP_OPT_NO_REMAP_ROOT) ? 0
         : option(sp, FP_OPT_REMAP_ROOT)  ? 1
                                          : settings.remap_root;
}

/* As the job's user: waits for the runner, joins the container (task/container.h). Root's
 * task_init_privileged has nothing to do for it: nothing the user wrote is read as root. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
  (void)ac;
  (void)av;
  fpull_err err = {0};
  if (!failure.code && in_container) {
    uint32_t job_id = 0, step_id = 0;
    spank_get_item(sp, S_JOB_STEPID, &step_id);
    int rc = job_ids(sp, &job_id, NULL, NULL) != 0
                 ? fpull_err_set(&err, FPULL_EFAIL, "no job id")
                 : fp_slurm_container_wait(&container, &settings, job_id, step_id, &err);
    if (rc == 0)
      rc = fp_slurm_container_join(&container, remap_root(sp), &err);
    /* Joined or not, this task is done with the container's holder. */
    fp_slurm_container_joined(&container);
    if (rc != 0)
      fail(&err);
    /* Inside, / is the image's: a ".." or a symlink in DIR cannot lead out of it. */
    else if (chdir(workdir(sp)) < 0) {
      fpull_err_set(&err, FPULL_EFAIL, "working directory %s: %s", workdir(sp), strerror(errno));
      fail(&err);
    } else {
      fp_slurm_task_env(sp, &container, option(sp, FP_OPT_ENV), settings.env_passthrough);
      if ((container.entrypoint && fp_slurm_task_entrypoint(sp, container.entrypoint, &err) != 0) ||
          fp_slurm_task_seccomp(&err) != 0)
        fail(&err);
    }
    fp_slurm_container_free(&container);
  }
  if (!failure.code)
    return 0;
  /* Here the task's stderr is the job's: the user sees one line there (or fpull's own line
   * from the pull, already printed). Ending the task with fpull's exit code fails the job
   * with that code; an error return would fail it as exit 1, with Slurm's lines around. */
  fflush(stderr);
  if (failure.msg[0])
    fp_slurm_say("fpull: %s (exit %d: %s)", failure.msg, failure.code,
                 fp_slurm_code_meaning(failure.code));
  _exit(failure.code);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
  /* A pull cancelled with the step (scancel) does not outlive it. */
  fp_slurm_container_cancel();
  fp_slurm_container_free(&container);
  uint32_t step_id = 0, job_id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  /* in_container: user_init started this step's container (the options cannot be read
   * here: spank_option_getopt is not valid in slurm_spank_exit). */
  if (in_container && settings_ok && spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS &&
      job_ids(sp, &job_id, &uid, &gid) == 0) {
    /* The step's tree goes with the step (the namespaces, and so its mounts, went with the
     * tasks); the epilog removes what is left of the job. */
    fpull_err err = {0};
    cleanup_close int run_fd = -1;
    if (fp_slurm_run_dir_open(&run_fd, settings.run_dir, 0, &err) != 0 ||
        fp_slurm_step_dir_remove(run_fd, settings.run_dir, job_id, step_id, uid, gid,
                                 settings.cleanup_timeout, &err) != 0)
      slurm_info("fpull: step %" PRIu32 ".%" PRIu32 ": %s", job_id, step_id, err.msg);
  }
  fp_slurm_settings_free(&settings);
  settings_ok = 0;
  return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
  /* Whether or not the job named an image: one of its steps may have. */
  fpull_err err = {0};
  uint32_t job_id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  cleanup_close int run_fd = -1;
  if (settings_load(ac, av) != 0)
    return 0;
  int rc = 0;
  /* The job's uid and gid are Slurm's word, never what a file system reports. */
  if (rc == 0 && job_ids(sp, &job_id, &uid, &gid) != 0)
    rc = fpull_err_set(&err, FPULL_EFAIL, "epilog: no job id or user");
  if (rc == 0)
    rc = fp_slurm_run_dir_open(&run_fd, settings.run_dir, 0, &err);
  if (rc == 0)
    rc = fp_slurm_job_dir_remove(run_fd, settings.run_dir, job_id, uid, gid,
                                 settings.cleanup_timeout, &err);
  if (rc != 0 && rc != FPULL_ENOTFOUND)
    slurm_error("fpull: job %" PRIu32 ": epilog: %s", job_id, err.msg);
  /* What is left is only disk space in run_dir; draining the node for it would cost more. */
  return 0;
}
