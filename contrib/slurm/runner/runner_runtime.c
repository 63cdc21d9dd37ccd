/* fpull-slurm-runner: the OCI runtime (runc, crun) as the user: create, start and delete
 * the step's container, whose process is the holder (holder/hold.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>

#include "common/run.h"
#include "runner_runtime.h"
#include "stage.h"

/* A runtime or tool not found is run by its name: its exec fails with a line that says so. */
const char *fp_runner_runtime_path(const char *rt, char *buf, size_t len)
{
  const char *found = fp_slurm_find_program(rt, buf, len);
  return found ? found : rt;
}

/* crun, unlike runc, refuses a rootless container it cannot give a cgroup of its own on a
 * hybrid (v1 + v2) hierarchy; the tasks stay in the job's cgroup anyway (above), so it is
 * told to make none. */
static int is_crun(const char *rt)
{
  const char *slash = strrchr(rt, '/');
  return strcmp(slash ? slash + 1 : rt, "crun") == 0;
}

/* The runtime's argv up to its verb: the program, its global options. Returns the count. */
static size_t runtime_head(const char **argv, const char *rt, const char *state)
{
  size_t n = 0;
  argv[n++] = rt;
  if (is_crun(rt))
    argv[n++] = "--cgroup-manager=disabled";
  argv[n++] = "--root";
  argv[n++] = state;
  return n;
}

/* The runtime's verb on the step's container; its output (warnings about cgroups it was
 * not given) is said only when it fails. */
int fp_runner_runtime(struct runner *rn, const char *verb, const char *const *extra, int quiet)
{
  char rtbuf[PATH_MAX];
  const char *rt = fp_runner_runtime_path(rn->r->s->runtime, rtbuf, sizeof rtbuf);
  cleanup_free char *state = fp_xasprintf("%s/%s/runtime", rn->r->s->run_dir, rn->step);
  char name[64];
  snprintf(name, sizeof name, "fpull-%" PRIu32 ".%" PRIu32, rn->r->job_id, rn->r->step_id);
  const char *argv[16];
  size_t n = runtime_head(argv, rt, state);
  argv[n++] = verb;
  for (size_t i = 0; extra && extra[i] && n < 14; i++)
    argv[n++] = extra[i];
  argv[n++] = name;
  argv[n] = NULL;
  /* A file, not a pipe: the container's init keeps what it was given open. */
  cleanup_free char *log = fp_xasprintf("%s/%s/runtime.log", rn->r->s->run_dir, rn->step);
  int rc = fp_slurm_run_to((char *const *)argv, rn->envp, NULL, 1, log, NULL);
  if (rc && !quiet) {
    /* Its last line says why. */
    char why[1024];
    fp_slurm_log_last_line(log, why, sizeof why);
    if (why[0])
      fp_slurm_say("fpull: %s %s: %s", rn->r->s->runtime, verb, why);
  }
  return rc;
}

static const char *const force[] = {"--force", NULL};

/* The holder (holder/hold.c) as the container's process: created with its program as descriptor
 * 3 and a pipe as 4, started, and its word read back: its pid and its child's (the
 * nested user namespace's). 0, or an exit code after saying why. */
int fp_runner_start_holder(struct runner *rn, long *holder, long *nested)
{
  const struct fp_slurm_request *r = rn->r;
  cleanup_close int prog = open(r->holder, O_RDONLY | O_CLOEXEC);
  int rep[2];
  if (prog < 0 || pipe2(rep, O_CLOEXEC) < 0) {
    fp_slurm_say("fpull: %s: %s", r->holder, strerror(errno));
    return FPULL_EFAIL;
  }
  cleanup_close int rep_r = rep[0];
  const char *const create[] = {"--preserve-fds=2", "--bundle", rn->bundle, NULL};
  int fds[2] = {prog, rep[1]};
  fp_slurm_run_preserve(fds, 2);
  int rc = fp_runner_runtime(rn, "create", create, 0);
  close(rep[1]);
  if (rc == 0)
    rc = fp_runner_runtime(rn, "start", NULL, 0);
  if (rc) {
    fp_runner_runtime(rn, "delete", force, 1);
    return FPULL_EFAIL;
  }
  char buf[64] = "";
  size_t got = 0;
  struct pollfd p = {.fd = rep_r, .events = POLLIN};
  while (got < sizeof buf - 1) {
    int n = poll(&p, 1, 30000);
    if (n < 0 && errno == EINTR)
      continue;
    ssize_t k = n > 0 ? read(rep_r, buf + got, sizeof buf - 1 - got) : -1;
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  buf[got] = '\0';
  if (sscanf(buf, "%ld %ld\n", holder, nested) != 2 || *holder <= 1 || *nested <= 1) {
    char why[1024];
    cleanup_free char *log = fp_xasprintf("%s/%s/runtime.log", r->s->run_dir, rn->step);
    fp_slurm_log_last_line(log, why, sizeof why);
    fp_slurm_say("fpull: the container's holder did not start%s%s", why[0] ? ": " : "", why);
    fp_runner_runtime(rn, "delete", force, 1);
    return FPULL_EFAIL;
  }
  return 0;
}

int fp_runner_delete(struct runner *rn)
{
  return fp_runner_runtime(rn, "delete", force, 1);
}
