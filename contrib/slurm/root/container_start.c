/* fpull Slurm plugin: the step's container, slurmstepd's side (see container_start.h): as
 * root, the runner's child makes the job's directory, drops every id and execs the runner
 * (runner/runner.c, a program of its own); the tasks' side is task/container.c. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/request.h"
#include "common/run.h"
#include "container_start.h"
#include "job_dir.h"
#include "base/util.h"

#ifndef FPULL_SLURM_LIBEXECDIR
#define FPULL_SLURM_LIBEXECDIR "/usr/local/libexec/fpull"
#endif
#ifndef FPULL_SLURM_LIBEXEC_REL
#define FPULL_SLURM_LIBEXEC_REL "../../libexec/fpull"
#endif

static pid_t runner_pid;

/* Whether the step may use the user's store on the node, which root makes. The default
 * store (issue 41.3) only where the runner can put a step's layer over a kept tree, a
 * /dev/fuse users may open: elsewhere it would stay an empty directory per user. */
static int store_wanted(const struct fp_slurm_request *r)
{
  if (r->name && r->s->container_scope_global)
    return 1;
  if (!r->s->store_max)
    return 0;
  struct stat st;
  return r->s->store_max_set ||
         (stat("/dev/fuse", &st) == 0 && S_ISCHR(st.st_mode) && (st.st_mode & 006) == 006);
}

void fp_slurm_container_cancel(void)
{
  /* Only while it is still our unreaped child: its pid cannot have been reused then. */
  if (runner_pid > 0 && waitpid(runner_pid, NULL, WNOHANG) == 0) {
    kill(-runner_pid, SIGKILL);
    kill(runner_pid, SIGKILL);
    while (waitpid(runner_pid, NULL, 0) < 0 && errno == EINTR)
      ;
    runner_pid = 0;
  }
}

const char *fp_slurm_program(const char *name, char *buf, size_t len)
{
  /* Beside this plugin (a build tree), then where they are installed as seen from the
   * plugin (an install under another prefix), then where they were to be installed. All
   * are root's directories. */
  Dl_info info;
  if (dladdr((void *)fp_slurm_program, &info) && info.dli_fname && info.dli_fname[0] == '/') {
    int dir = (int)(strrchr(info.dli_fname, '/') - info.dli_fname);
    const char *rel[] = {"", FPULL_SLURM_LIBEXEC_REL "/"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
      if ((size_t)snprintf(buf, len, "%.*s/%s%s", dir, info.dli_fname, rel[i], name) < len &&
          access(buf, X_OK) == 0)
        return buf;
  }
  snprintf(buf, len, "%s/%s", FPULL_SLURM_LIBEXECDIR, name);
  return buf;
}

/* In the runner's child of slurmstepd, still root: the job's directory (root's work, in the
 * root-only run_dir), then every id the user's for good, then the runner program. Returns
 * only on failure, with the exit code. */
static int exec_runner(const struct fp_slurm_request *r, int req, int info, int ack)
{
  int ng = getgroups(0, NULL);
  cleanup_free gid_t *groups = fp_xcalloc(ng > 0 ? (size_t)ng : 1, sizeof *groups);
  if (ng < 0 || (ng = getgroups(ng, groups)) < 0) {
    fp_slurm_say("fpull: the job's groups: %s", strerror(errno));
    return FPULL_EFAIL;
  }
  /* Only the effective uid is the user's here: back to root to be allowed to drop all. */
  if (seteuid(0) < 0) {
    fp_slurm_say("fpull: cannot become root: %s", strerror(errno));
    return FPULL_EFAIL;
  }
  fpull_err err = {0};
  cleanup_close int run_fd = -1;
  if (fp_slurm_run_dir_open(&run_fd, r->s->run_dir, 1, &err) != 0 ||
      fp_slurm_job_dir_create(run_fd, r->job_id, r->uid, r->gid, r->s->cleanup_timeout, &err) !=
          0 ||
      (store_wanted(r) && fp_slurm_store_dir_create(run_fd, r->uid, r->gid, &err) != 0)) {
    fp_slurm_say("fpull: %s", err.msg);
    return err.code ? err.code : FPULL_EFAIL;
  }
  /* The site's shared cache (not one the job named with FPULL_CACHE): DIR/UID made by root
   * for the user. One that is not the user's is never written: the pull uses the user's
   * own cache, and the step says so. */
  int no_shared = 0;
  if (r->s->shared_cache && r->cache) {
    cleanup_free char *site = fp_xasprintf("%s/%u", r->s->shared_cache, (unsigned)r->uid);
    fpull_err e = {0};
    if (strcmp(site, r->cache) == 0 &&
        fp_slurm_site_user_dir("shared_cache", r->s->shared_cache, r->uid, r->gid, &e) != 0) {
      fp_slurm_say("fpull: warning: %s: this step's pull uses the user's own cache", e.msg);
      no_shared = 1;
    }
  }
  /* The same for the site's SquashFS store: without DIR/UID, the step goes without it. */
  int no_sqsh = 0;
  if (r->s->sqsh_store) {
    fpull_err e = {0};
    if (fp_slurm_site_user_dir("sqsh_store", r->s->sqsh_store, r->uid, r->gid, &e) != 0) {
      fp_slurm_say("fpull: warning: %s: this step does not use the SquashFS store", e.msg);
      no_sqsh = 1;
    }
  }
  if (setgroups((size_t)ng, groups) < 0 || setresgid(r->gid, r->gid, r->gid) < 0 ||
      setresuid(r->uid, r->uid, r->uid) < 0) {
    fp_slurm_say("fpull: cannot become uid %u: %s", (unsigned)r->uid, strerror(errno));
    return FPULL_EFAIL;
  }
  uid_t ru, eu, su;
  if (getresuid(&ru, &eu, &su) < 0 || ru != r->uid || eu != r->uid || su != r->uid)
    return FPULL_EFAIL;
  /* Changing ids cleared it; the runner dies with slurmstepd. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  char prog[PATH_MAX];
  fp_slurm_program("fpull-slurm-runner", prog, sizeof prog);
  /* Descriptors 3, 4 and 5 as runner/runner.c expects them; nothing else of slurmstepd's. */
  int want[3] = {req, info, ack};
  for (int i = 0; i < 3; i++)
    if ((want[i] = fcntl(want[i], F_DUPFD_CLOEXEC, 16)) < 0)
      return FPULL_EFAIL;
  for (int i = 0; i < 3; i++)
    if (dup2(want[i], 3 + i) < 0)
      return FPULL_EFAIL;
  for (int fd = 6; fd < 1024; fd++)
    close(fd);
  char *argv[4] = {"fpull-slurm-runner", NULL, NULL, NULL};
  int argc = 1;
  if (no_shared)
    argv[argc++] = "--no-shared-cache";
  if (no_sqsh)
    argv[argc++] = "--no-sqsh-store";
  char *const envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
  execve(prog, argv, envp);
  fp_slurm_say("fpull: %s: %s", prog, strerror(errno));
  return FPULL_EFAIL;
}

int fp_slurm_container_start(struct fp_slurm_container *c, const struct fp_slurm_request *req,
                             fpull_err *err)
{
  char holder[PATH_MAX];
  struct fp_slurm_request r = *req;
  r.holder = fp_slurm_program("fpull-slurm-hold", holder, sizeof holder);
  struct fp_buf packed = {0};
  if (fp_slurm_request_pack(&packed, &r) != 0) {
    fp_buf_free(&packed);
    return fpull_err_set(err, FPULL_EUSAGE, "the step's request is too large");
  }
  int info[2], ack[2], rq[2];
  if (pipe2(info, O_CLOEXEC) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "pipe: %s", strerror(errno));
  if (pipe2(ack, O_CLOEXEC) < 0 || pipe2(rq, O_CLOEXEC) < 0) {
    close(info[0]);
    close(info[1]);
    return fpull_err_set(err, FPULL_EFAIL, "pipe: %s", strerror(errno));
  }
  /* The request fits the pipe's buffer (FP_SLURM_REQUEST_MAX): written before the runner
   * exists, so that nothing here waits for it. */
  ssize_t w = write(rq[1], packed.data, packed.len);
  int full = w == (ssize_t)packed.len;
  fp_buf_free(&packed);
  close(rq[1]);
  if (!full) {
    close(rq[0]);
    return fpull_err_set(err, FPULL_EFAIL, "the step's request: %s", strerror(errno));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    return fpull_err_set(err, FPULL_EFAIL, "fork: %s", strerror(errno));
  if (pid == 0) {
    /* Its own process group, so that cancelling kills fpull too. slurmstepd's thread
     * blocks signals that fpull must get (SIGTERM from scancel, the runner's SIGALRM):
     * none blocked, default actions. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
      if (sig != SIGKILL && sig != SIGSTOP)
        signal(sig, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(FPULL_EFAIL);
    setpgid(0, 0);
    /* The container's holder, which the runtime leaves behind, stays the runner's (and in
     * its process group): killing the group ends it too, never an orphan holding the
     * image. Kept across exec. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    _exit(exec_runner(&r, rq[0], info[1], ack[0]) & 0xff);
  }
  runner_pid = pid;
  setpgid(pid, pid);
  close(rq[0]);
  close(info[1]);
  close(ack[0]);
  /* The tasks, forked after this, wait on info (see fp_slurm_container_wait): the step is
   * running meanwhile, so that scancel reaches the pull at once. */
  c->info_fd = info[0];
  c->ack_fd = ack[1];
  return 0;
}
