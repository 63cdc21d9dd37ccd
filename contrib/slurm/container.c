/* fpull Slurm plugin: the step's container, slurmstepd's and the tasks' side (see
 * container.h); the runner is a program of its own (runner.c). */
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

#include "container.h"
#include "job_dir.h"
#include "request.h"
#include "run.h"
#include "base/util.h"

#ifndef FPULL_SLURM_LIBEXECDIR
#define FPULL_SLURM_LIBEXECDIR "/usr/local/libexec/fpull"
#endif
#ifndef FPULL_SLURM_LIBEXEC_REL
#define FPULL_SLURM_LIBEXEC_REL "../../libexec/fpull"
#endif

#define INFO_MAX (1u << 20)

static pid_t runner_pid;

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

void fp_slurm_container_free(struct fp_slurm_container *c)
{
  int *fds[] = {&c->holder_fd, &c->nested_fd, &c->info_fd, &c->ack_fd};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (*fds[i] >= 0)
      close(*fds[i]);
  free(c->workdir);
  free(c->home);
  fpull_strv_free(c->env);
  fpull_strv_free(c->entrypoint);
  memset(c, 0, sizeof *c);
  c->holder_fd = c->nested_fd = c->info_fd = c->ack_fd = -1;
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
      fp_slurm_job_dir_create(run_fd, r->job_id, r->uid, r->gid, &err) != 0 ||
      ((r->s->store_max || (r->name && r->s->container_scope_global)) &&
       fp_slurm_store_dir_create(run_fd, r->uid, r->gid, &err) != 0)) {
    fp_slurm_say("fpull: %s", err.msg);
    return err.code ? err.code : FPULL_EFAIL;
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
  /* Descriptors 3, 4 and 5 as runner.c expects them; nothing else of slurmstepd's. */
  int want[3] = {req, info, ack};
  for (int i = 0; i < 3; i++)
    if ((want[i] = fcntl(want[i], F_DUPFD_CLOEXEC, 16)) < 0)
      return FPULL_EFAIL;
  for (int i = 0; i < 3; i++)
    if (dup2(want[i], 3 + i) < 0)
      return FPULL_EFAIL;
  for (int fd = 6; fd < 1024; fd++)
    close(fd);
  char *const argv[] = {"fpull-slurm-runner", NULL};
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

static char *info_path(const struct fp_slurm_settings *s, uint32_t job_id, uint32_t step_id)
{
  return fp_xasprintf("%s/%" PRIu32 "/%" PRIu32 "/info", s->run_dir, job_id, step_id);
}

/* A pid as the runner wrote it: digits only, more than 1. */
static pid_t pid_value(const char *s)
{
  long v = 0;
  if (!*s || strlen(s) > 10)
    return -1;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    v = v * 10 + (*p - '0');
  }
  return v > 1 && v <= INT_MAX ? (pid_t)v : -1;
}

int fp_slurm_container_wait(struct fp_slurm_container *c, const struct fp_slurm_settings *s,
                            uint32_t job_id, uint32_t step_id, fpull_err *err)
{
  /* As the job's user: the info file is the user's own, and so is everything it names. */
  if (geteuid() == 0)
    return fpull_err_set(err, FPULL_EFAIL, "the container is joined as the job's user, not root");
  char b;
  while (read(c->info_fd, &b, 1) < 0 && errno == EINTR)
    ;
  close(c->info_fd);
  c->info_fd = -1;
  cleanup_free char *path = info_path(s, job_id, step_id);
  char *data = NULL;
  size_t len = 0;
  cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
      fp_read_fd(fd, INFO_MAX, &data, &len) != 0)
    return fpull_err_set(err, FPULL_EFAIL, "the step's pull ended without a result (killed?)");
  pid_t holder = -1, nested = -1;
  int code = 0, bad = 0;
  for (size_t off = 0; off < len;) {
    const char *rec = data + off;
    size_t n = strnlen(rec, len - off);
    if (off + n >= len)
      break;
    if (rec[0] == 'D')
      snprintf(c->digest, sizeof c->digest, "%s", rec + 1);
    else if (rec[0] == 'W')
      c->workdir = fp_xstrdup(rec + 1);
    else if (rec[0] == 'H' && !c->home)
      c->home = fp_xstrdup(rec + 1);
    else if (rec[0] == 'E')
      c->env = fp_strv_push(c->env, rec + 1);
    else if (rec[0] == 'N')
      c->entrypoint = fp_strv_push(c->entrypoint, rec + 1);
    else if (rec[0] == 'P')
      bad |= (holder = pid_value(rec + 1)) < 0;
    else if (rec[0] == 'Q')
      bad |= (nested = pid_value(rec + 1)) < 0;
    else if (rec[0] == 'X')
      code = atoi(rec + 1);
    off += n + 1;
  }
  free(data);
  if (code) {
    /* The runner or fpull said why on the step's stderr. */
    err->code = code > 0 && code < 256 ? code : FPULL_EFAIL;
    err->msg[0] = '\0';
    return err->code;
  }
  if (bad || holder < 0 || nested < 0)
    return fpull_err_set(err, FPULL_EFAIL, "the step's container: no holder's pid in %s", path);
  c->holder_fd = fp_pidfd_open(holder);
  c->nested_fd = c->holder_fd >= 0 ? fp_pidfd_open(nested) : -1;
  if (c->holder_fd < 0 || c->nested_fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "the step's container (process %d): %s",
                         (int)(c->holder_fd < 0 ? holder : nested), strerror(errno));
  return 0;
}

void fp_slurm_container_joined(struct fp_slurm_container *c)
{
  char one = 1;
  if (c->ack_fd >= 0) {
    /* A runner that is gone is no reason for the task to die of SIGPIPE. */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    ssize_t w = write(c->ack_fd, &one, 1);
    (void)w;
    signal(SIGPIPE, old);
    close(c->ack_fd);
    c->ack_fd = -1;
  }
}
