/* fpull-slurm-runner: pulls the step's image and creates its container, as the job's user
 * (see task/container.h). slurmstepd execs it with every id the user's, the request on
 * descriptor 3 (common/request.h), the tasks' info pipe on 4 and their acknowledgements on
 * 5: a fresh program, not a copy of slurmstepd. This file: the request, the order of the
 * work, the records for the tasks. It calls the stages (runner_image.c above runner_pull.c,
 * runner_spec.c and runner_runtime.c), which never call back up; what they share is
 * stage.c's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fpull/ref.h>

#include "common/request.h"
#include "common/run.h"
#include "runner_image.h"
#include "runner_pull.h"
#include "runner_runtime.h"
#include "runner_spec.h"
#include "sqsh_mount.h"
#include "stage.h"

static char *const *env_add(char ***envp, const char *k, const char *v)
{
  if (v) {
    cleanup_free char *kv = fp_xasprintf("%s=%s", k, v);
    *envp = fp_strv_push(*envp, kv);
  }
  return *envp;
}

static char *info_path(const struct fp_slurm_settings *s, uint32_t job_id, uint32_t step_id)
{
  return fp_xasprintf("%s/%" PRIu32 "/%" PRIu32 "/info", s->run_dir, job_id, step_id);
}

/* The records for the tasks, in the step's directory (written beside, renamed in). */
static int info_publish(const struct fp_slurm_request *r, const struct fp_buf *info)
{
  cleanup_free char *path = info_path(r->s, r->job_id, r->step_id);
  cleanup_free char *tmp = fp_xasprintf("%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return FPULL_EFAIL;
  int ok = write(fd, info->data, info->len) == (ssize_t)info->len;
  if (close(fd) < 0 || !ok || rename(tmp, path) < 0)
    return FPULL_EFAIL;
  return 0;
}

static int runner_main(const struct fp_slurm_request *r, struct fp_buf *info, int ack)
{
  /* Exec'd with every id the user's (root/container_start.c): nothing to drop here. */
  if (getuid() == 0 || geteuid() == 0) {
    fp_slurm_say("fpull: the runner must not run as root");
    return FPULL_EFAIL;
  }
  umask(077);
  struct runner rn = {.r = r};
  /* The array only: putenv keeps its strings in environ. */
  cleanup_free char **envp_array = NULL;
  snprintf(rn.step, sizeof rn.step, "%" PRIu32 "/%" PRIu32, r->job_id, r->step_id);
  cleanup_free char *jobdir = fp_xasprintf("%s/%" PRIu32, r->s->run_dir, r->job_id);
  cleanup_free char *stepdir = fp_xasprintf("%s/%" PRIu32, jobdir, r->step_id);
  if (mkdir(stepdir, 0700) < 0 && errno != EEXIST) {
    fp_slurm_say("fpull: %s: %s", stepdir, strerror(errno));
    return FPULL_EFAIL;
  }
  snprintf(rn.bundle, sizeof rn.bundle, "%s/bundle", stepdir);
  snprintf(rn.tree, sizeof rn.tree, "%s", rn.bundle);
  rn.pull_image = r->image;
  int store_lock = -1;
  /* The user's own cache (their HOME) keeps images between jobs; without a home to write,
   * one for the job only. */
  if (!r->cache && !fp_runner_dir_writable(r->xdg_cache_home) && !fp_runner_dir_writable(r->home))
    snprintf(rn.cache, sizeof rn.cache, "%s/cache", jobdir);
  env_add(&rn.envp, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  env_add(&rn.envp, "HOME", r->home);
  env_add(&rn.envp, "DOCKER_CONFIG", r->docker_config);
  env_add(&rn.envp, "XDG_CONFIG_HOME", r->xdg_config_home);
  env_add(&rn.envp, "XDG_CACHE_HOME", r->xdg_cache_home);
  env_add(&rn.envp, "XDG_RUNTIME_DIR", stepdir);
  env_add(&rn.envp, "FPULL_SHARED_CACHES", r->s->cache_dir);
  env_add(&rn.envp, "FPULL_CACHE", r->cache);
  env_add(&rn.envp, "FPULL_DATA_DIR", r->s->data_dir);
  /* The helpers below read the same. */
  for (size_t i = 0; rn.envp[i]; i++)
    putenv(rn.envp[i]);
  envp_array = rn.envp;

  int rc;
  if (!r->image[0] && !r->name) {
    fp_slurm_say("fpull: no image to run");
    return FPULL_EUSAGE;
  }
  if (r->image[0] == '/' && r->s->policy) {
    /* A SquashFS file carries no signature the site's policy could check. */
    fp_slurm_say("fpull: %s: the site's signature policy (%s) admits registry images only: a "
                 "SquashFS file carries no signature (exit 9)",
                 r->image, r->s->policy);
    return FPULL_EPOLICY;
  }
  if (r->image[0] == '/') {
    rc = fp_runner_from_squashfs(&rn, info);
    if (rc)
      return rc;
    fp_runner_send_rec(info, 'D', "");
  } else {
    cJSON *res = NULL;
    int squashfs = r->squashfs && fp_slurm_sqsh_mountable();
    if (r->squashfs && !squashfs)
      fp_slurm_say("fpull: %s: --fpull-format=squashfs: this node cannot mount SquashFS files "
                   "for users (it needs squashfuse, fuse-overlayfs and a /dev/fuse users may "
                   "open): unpacked instead",
                   r->image);
    int store = r->s->store_max && fp_slurm_overlay_mountable();
    /* The default store needs what a node may lack: such a node unpacks each step, as
     * without a store, and says so only to a site that asked for one. */
    if (r->s->store_max && r->s->store_max_set && !store && !squashfs && !r->quiet)
      fp_slurm_say("fpull: %s: store_max=: this node cannot put a writable layer over a kept "
                   "image for users (it needs fuse-overlayfs and a /dev/fuse users may open): "
                   "unpacked for this step instead",
                   r->image);
    /* The site's SquashFS store, where the node can mount its files (--fpull-name keeps a
     * tree of its own); elsewhere the node store or a pull, as without it. */
    cleanup_free char *sqsh_dir = r->s->sqsh_store && !r->no_sqsh_store && !r->name
                                      ? fp_xasprintf("%s/%u", r->s->sqsh_store, (unsigned)r->uid)
                                      : NULL;
    if (sqsh_dir && !(squashfs || fp_slurm_sqsh_mountable())) {
      if (!r->quiet)
        fp_slurm_say("fpull: %s: sqsh_store=: this node cannot mount SquashFS files for users (it "
                     "needs squashfuse, fuse-overlayfs and a /dev/fuse users may open): not used",
                     r->image);
      free(sqsh_dir);
      sqsh_dir = NULL;
    }
    int reused = 0, entry_sent = sqsh_dir != NULL;
    rc = r->name    ? fp_runner_from_name(&rn, &res, &store_lock, &reused)
         : sqsh_dir ? fp_runner_from_sqsh_store(&rn, sqsh_dir, &res, info, &store_lock)
         : squashfs ? fp_runner_pull_squashfs(&rn, &res)
         : store    ? fp_runner_from_store(&rn, &res, &store_lock)
                    : fp_runner_pull(&rn, &res);
    if (rc)
      return rc; /* fpull said why on the step's stderr */
    if (!reused)
      fp_runner_say_chosen(&rn, res);
    const char *digest = cJSON_GetStringValue(cJSON_GetObjectItem(res, "manifest_digest"));
    if (r->save && digest)
      fp_runner_save(&rn, digest, cJSON_GetStringValue(cJSON_GetObjectItem(res, "index_digest")));
    if (r->entrypoint && digest && !entry_sent &&
        (rc = fp_runner_send_entrypoint(&rn, digest, info)) != 0) {
      cJSON_Delete(res);
      return rc;
    }
    fp_runner_send_rec(info, 'D', digest ? digest : "");
    cJSON_Delete(res);
  }
  cleanup_free char *workdir = NULL;
  cleanup_strv char **env = NULL;
  rc = fp_runner_write_spec(&rn, &workdir, &env);
  if (rc)
    return rc;
  if (workdir)
    fp_runner_send_rec(info, 'W', workdir);
  if (rn.home_mounted)
    fp_runner_send_rec(info, 'H', r->home);
  for (size_t i = 0; env && env[i]; i++)
    fp_runner_send_rec(info, 'E', env[i]);
  long pid = 0, nested = 0;
  rc = fp_runner_start_holder(&rn, &pid, &nested);
  if (rc)
    return rc;
  char pidbuf[32];
  snprintf(pidbuf, sizeof pidbuf, "%ld", pid);
  fp_runner_send_rec(info, 'P', pidbuf);
  snprintf(pidbuf, sizeof pidbuf, "%ld", nested);
  fp_runner_send_rec(info, 'Q', pidbuf);
  int rc2 = info_publish(r, info);
  if (rc2 == 0)
    fp_slurm_run_cancel_say(NULL); /* the step runs: a cancel now is not the pull's */
  /* The tasks wait for this end of the pipe to close. */
  close(r->info_fd);
  /* Once every local task has joined (each says so), the namespaces live on in them and
   * the container's init is no longer needed. */
  for (uint32_t joined = 0; rc2 == 0 && joined < r->ntasks;) {
    char c;
    ssize_t n = read(ack, &c, 1);
    if (n == 1)
      joined++;
    else if (n == 0 || errno != EINTR)
      break;
  }
  /* Without a PID namespace of its own, runc finds the container's processes through its
   * cgroup, which a rootless container has not: it would leave the init running. It is
   * our child (we are the subreaper): kill and reap it, then let the runtime forget it. */
  kill((pid_t)pid, SIGKILL);
  while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
    ;
  /* Every task has read it; its pid is no one's to kill any more. */
  cleanup_free char *infop = info_path(r->s, r->job_id, r->step_id);
  unlink(infop);
  fp_runner_delete(&rn);
  /* A kept tree stays locked, and a mounted image's daemons (our children, in our process
   * group) serve it, while the step runs: the step's end kills us. Not with the
   * step's stdio open, which Slurm waits to see closed before it ends the step. */
  if (rc2 == 0 && (store_lock >= 0 || rn.mounted)) {
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && nul >= 0; fd++)
      dup2(nul, fd);
    for (;;)
      pause();
  }
  return rc2;
}

int main(int argc, char **argv)
{
  char *data = NULL;
  size_t len = 0;
  if (fp_read_fd(3, FP_SLURM_REQUEST_MAX, &data, &len) != 0) {
    fp_slurm_say("fpull: runner: no request: %s", strerror(errno));
    return FPULL_EFAIL;
  }
  close(3);
  /* What the runner starts (fpull, the runtime, squashfuse) must not hold the tasks'
   * pipes: the tasks wait for the info pipe's end to close. */
  fcntl(4, F_SETFD, FD_CLOEXEC);
  fcntl(5, F_SETFD, FD_CLOEXEC);
  struct fp_slurm_settings s;
  struct fp_slurm_request r;
  fpull_err err = {0};
  if (fp_slurm_request_unpack(&r, &s, data, len, &err) != 0) {
    fp_slurm_say("fpull: %s", err.msg);
    return err.code ? err.code : FPULL_EFAIL;
  }
  r.info_fd = 4;
  fp_slurm_say_node(r.node);
  cleanup_free char *info = info_path(&s, r.job_id, r.step_id);
  fp_slurm_run_cancel_record(info);
  fp_slurm_run_cancellable();
  if (r.node_id == 0)
    fp_slurm_run_cancel_say(r.image[0] ? r.image : r.name ? r.name : "?");
  /* slurmstepd's root side refused the site's DIR/UID (root/job_dir.c): the user's own
   * cache instead. */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-shared-cache") == 0)
      r.cache = NULL;
    else if (strcmp(argv[i], "--no-sqsh-store") == 0)
      r.no_sqsh_store = 1;
  }
  struct fp_buf recs = {0};
  int rc = runner_main(&r, &recs, 5);
  /* Cancelled (scancel, srun's Ctrl-C): every node was silent since, the first says it
   * once for the step; the tasks end quietly with the code. */
  if (rc && fp_slurm_run_cancelled() && r.node_id == 0)
    fp_slurm_say_cancelled(r.image[0] ? r.image : r.name ? r.name : "?");
  if (rc) {
    char code[16];
    snprintf(code, sizeof code, "%d", rc);
    fp_runner_send_rec(&recs, 'X', code);
    info_publish(&r, &recs);
  }
  fp_buf_free(&recs);
  fp_slurm_settings_free(&s);
  free(data);
  return rc & 0xff;
}
