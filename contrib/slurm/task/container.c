/* fpull Slurm plugin: the step's container, the tasks' side (see container.h): as the job's
 * user in task init, a task waits for the runner, reads what it chose and opens the holder's
 * pidfds; slurmstepd's side, which starts the runner, is root/container_start.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "base/util.h"

#define INFO_MAX (1u << 20)
/* Seconds a task waits for the kill of its step before it says the runner died. */
#define NO_RESULT_GRACE_S 2

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
      fp_read_fd(fd, INFO_MAX, &data, &len) != 0) {
    /* The runner's record of a cancel is written the moment its signal comes
     * (fp_slurm_run_cancel_record); a runner the step's SIGKILL took before any signal
     * leaves none, and where the same kill reaches this task it ends it an instant later:
     * give it that instant before speaking. A runner that died alone still gets its line. */
    struct timespec grace = {.tv_sec = NO_RESULT_GRACE_S};
    while (nanosleep(&grace, &grace) < 0 && errno == EINTR)
      ;
    return fpull_err_set(err, FPULL_EFAIL, "the step's pull ended without a result (killed?)");
  }
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
