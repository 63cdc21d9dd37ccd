/* fpull Slurm plugin: running programs in the runner (see run.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fpull/error.h>

#include "run.h"

/* In the runner: the pull's child and the deadline of pull_timeout=. */
static volatile pid_t pull_child;
static volatile sig_atomic_t pull_timed_out;

static void on_alarm(int sig)
{
  (void)sig;
  pull_timed_out = 1;
  if (pull_child > 0)
    kill(pull_child, SIGKILL);
}

void fp_slurm_run_deadline(unsigned seconds)
{
  if (seconds)
    signal(SIGALRM, on_alarm);
  alarm(seconds);
}

int fp_slurm_run_timed_out(void)
{
  return pull_timed_out;
}

void fp_slurm_run_deadline_clear(void)
{
  alarm(0);
  pull_timed_out = 0;
}

/* The node's name for the lines said here (fp_slurm_say_node). */
static char say_node[256];
/* The step was cancelled: no line but fp_slurm_say_cancelled's. */
static volatile sig_atomic_t cancelled;
static int cancel_armed; /* fp_slurm_run_cancellable was called */

/* fp_slurm_run_cancel_record's path, and where it is written first. */
static char cancel_path[4096], cancel_tmp[4096 + 16];
/* fp_slurm_run_cancel_say's line (cancel_len 0: none to say), and whether it was said. */
static char cancel_line[1024];
static volatile sig_atomic_t cancel_len, cancel_said;

static void on_cancel(int sig)
{
  cancelled = 1;
  if (cancel_path[0]) {
    /* Async-signal-safe calls only. */
    int saved = errno;
    char rec[8] = {'X', (char)('0' + (128 + sig) / 100), (char)('0' + (128 + sig) / 10 % 10),
                   (char)('0' + (128 + sig) % 10), '\0'};
    int fd = open(cancel_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ssize_t w = write(fd, rec, 5);
      close(fd);
      if (w == 5)
        (void)link(cancel_tmp, cancel_path);
      unlink(cancel_tmp);
    }
    errno = saved;
  }
  /* The step's one line, now: the step's SIGKILL that follows srun's second Ctrl-C could
   * take the runner before its main flow says it. */
  if (cancel_len && !cancel_said) {
    int saved = errno;
    cancel_said = 1;
    ssize_t w = write(STDERR_FILENO, cancel_line, (size_t)cancel_len);
    (void)w;
    errno = saved;
  }
  if (pull_child > 0)
    kill(pull_child, SIGTERM);
}

void fp_slurm_run_cancellable(void)
{
  cancel_armed = 1;
  struct sigaction sa = {.sa_handler = on_cancel, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

void fp_slurm_run_cancel_record(const char *path)
{
  cancel_path[0] = '\0';
  if (path && strlen(path) < sizeof cancel_path) {
    snprintf(cancel_tmp, sizeof cancel_tmp, "%s.cancel", path);
    snprintf(cancel_path, sizeof cancel_path, "%s", path);
  }
}

int fp_slurm_run_cancelled(void)
{
  return cancelled;
}

void fp_slurm_say_node(const char *name)
{
  snprintf(say_node, sizeof say_node, "%s", name ? name : "");
  if (name && !name[0])
    gethostname(say_node, sizeof say_node - 1);
}

/* Writes one line of n bytes (its newline included): "fpull: " lines with the node's name
 * after the prefix. */
static void say_line(const char *line, size_t n)
{
  if (cancelled)
    return;
  static const char prefix[] = "fpull: ";
  size_t plen = sizeof prefix - 1;
  if (say_node[0] && n > plen && strncmp(line, prefix, plen) == 0) {
    char node[sizeof say_node + 2];
    int k = snprintf(node, sizeof node, "%s: ", say_node);
    struct iovec iov[3] = {{.iov_base = (void *)prefix, .iov_len = plen},
                           {.iov_base = node, .iov_len = (size_t)k},
                           {.iov_base = (void *)(line + plen), .iov_len = n - plen}};
    ssize_t w = writev(STDERR_FILENO, iov, 3);
    (void)w;
    return;
  }
  ssize_t w = write(STDERR_FILENO, line, n);
  (void)w;
}

void fp_slurm_run_cancel_say(const char *what)
{
  cancel_len = 0;
  if (!what)
    return;
  int n = snprintf(cancel_line, sizeof cancel_line,
                   "fpull: %s%s%s: the pull was cancelled with the step (its other nodes say "
                   "nothing of it)\n",
                   say_node, say_node[0] ? ": " : "", what);
  if (n <= 0 || (size_t)n >= sizeof cancel_line) {
    n = (int)sizeof cancel_line - 1;
    cancel_line[n - 1] = '\n';
  }
  cancel_len = n;
}

void fp_slurm_say_cancelled(const char *what)
{
  if (cancel_said)
    return;
  fp_slurm_run_cancel_say(what);
  cancel_said = 1;
  ssize_t w = write(STDERR_FILENO, cancel_line, (size_t)cancel_len);
  (void)w;
}

void fp_slurm_say(const char *fmt, ...)
{
  char line[FPULL_ERR_MSG_MAX + 64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n > sizeof line - 2)
    n = (int)sizeof line - 2;
  line[n++] = '\n';
  say_line(line, (size_t)n);
}

/* Writes the complete lines of buf (len bytes) that do not contain drop to our stderr; the
 * rest stays in buf. Returns the bytes kept. */
static size_t forward_lines(char *buf, size_t len, int (*keep)(const char *line))
{
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != '\n')
      continue;
    buf[i] = '\0';
    /* The program was interrupted (SIGTERM, SIGINT): the step is being cancelled, and the
     * signal reached it before us. */
    if (strncmp(buf + start, "fpull: interrupted (", 20) == 0 && cancel_armed)
      cancelled = 1;
    if (keep(buf + start)) {
      buf[i] = '\n';
      say_line(buf + start, i + 1 - start);
    }
    start = i + 1;
  }
  memmove(buf, buf + start, len - start);
  return len - start;
}

static int preserve[4], n_preserve;

void fp_slurm_run_preserve(const int *fds, int n)
{
  n_preserve = n < 0 ? 0 : n > 4 ? 4 : n;
  for (int i = 0; i < n_preserve; i++)
    preserve[i] = fds[i];
}

/* In the child: the preserved descriptors onto 3, 4, ... (out of the way first, so that
 * none is overwritten before it is moved). */
static void place_preserved(void)
{
  int moved[4];
  for (int i = 0; i < n_preserve; i++)
    if ((moved[i] = fcntl(preserve[i], F_DUPFD_CLOEXEC, 32)) < 0)
      _exit(127);
  for (int i = 0; i < n_preserve; i++)
    if (dup2(moved[i], 3 + i) < 0)
      _exit(127);
}

/* Runs argv (the job's user already): stdout into out (when out is not NULL, bounded);
 * stderr into log, or to /dev/null (quiet), or ours, without the lines that contain drop
 * (when given, with out). Its exit code, or FPULL_EFAIL when it did not exit. */
int fp_slurm_run_to(char *const argv[], char *const envp[], struct fp_buf *out, int quiet,
                    const char *log, int (*keep)(const char *line))
{
  int p[2] = {-1, -1}, e[2] = {-1, -1};
  if (out && pipe2(p, O_CLOEXEC) < 0)
    return FPULL_EFAIL;
  if (out && keep && !quiet && !log && pipe2(e, O_CLOEXEC) < 0)
    return FPULL_EFAIL;
  pid_t pid = fork();
  if (pid < 0)
    return FPULL_EFAIL;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGALRM, SIG_DFL);
    alarm(0);
    /* srun and slurmstepd block and ignore signals in their threads: a program started
     * from them (timeout(1)'s alarm, fpull's interrupt handling) needs its own. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    int nul = open("/dev/null", O_RDWR);
    dup2(nul, STDIN_FILENO);
    dup2(out ? p[1] : nul, STDOUT_FILENO);
    int logfd = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600) : -1;
    if (logfd >= 0) {
      dup2(logfd, STDOUT_FILENO);
      dup2(logfd, STDERR_FILENO);
    } else if (quiet) {
      dup2(nul, STDERR_FILENO);
    } else if (e[1] >= 0) {
      dup2(e[1], STDERR_FILENO);
    }
    place_preserved();
    execve(argv[0], argv, envp);
    fp_slurm_say("fpull: %s: %s", argv[0], strerror(errno));
    _exit(127);
  }
  n_preserve = 0;
  pull_child = pid;
  if (out) {
    close(p[1]);
    if (e[1] >= 0)
      close(e[1]);
    struct pollfd fds[2] = {{.fd = p[0], .events = POLLIN}, {.fd = e[0], .events = POLLIN}};
    char line[8192];
    size_t kept = 0;
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      if (fds[0].revents) {
        char buf[4096];
        ssize_t n = read(fds[0].fd, buf, sizeof buf);
        if (n > 0 && out->len + (size_t)n < FP_SLURM_RUN_OUT_MAX)
          fp_buf_append(out, buf, (size_t)n);
        else if (n == 0 || (n < 0 && errno != EINTR))
          fds[0].fd = -1;
      }
      if (fds[1].revents) {
        ssize_t n = read(fds[1].fd, line + kept, sizeof line - 1 - kept);
        if (n > 0) {
          kept = forward_lines(line, kept + (size_t)n, keep);
          if (kept == sizeof line - 1) { /* a line longer than the buffer: as it is */
            ssize_t w = cancelled ? 0 : write(STDERR_FILENO, line, kept);
            (void)w;
            kept = 0;
          }
        } else if (n == 0 || errno != EINTR) {
          fds[1].fd = -1;
        }
      }
    }
    if (kept && !cancelled) {
      ssize_t w = write(STDERR_FILENO, line, kept);
      (void)w;
    }
    close(p[0]);
    if (e[0] >= 0)
      close(e[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  pull_child = 0;
  if (!WIFEXITED(status))
    return pull_timed_out ? FPULL_ENET : FPULL_EFAIL;
  return WEXITSTATUS(status) == 127 ? FPULL_EFAIL : WEXITSTATUS(status);
}

const char *fp_slurm_find_program(const char *name, char *buf, size_t len)
{
  if (name[0] == '/')
    return name;
  static const char *const dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                                     "/sbin",           "/bin",           NULL};
  for (size_t i = 0; dirs[i]; i++) {
    snprintf(buf, len, "%s/%s", dirs[i], name);
    if (access(buf, X_OK) == 0)
      return buf;
  }
  return NULL;
}

void fp_slurm_log_last_line(const char *path, char *out, size_t len)
{
  char *data = NULL;
  size_t n = 0;
  out[0] = '\0';
  if (fp_read_file(path, 1 << 16, &data, &n) != 0)
    return;
  while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r'))
    n--;
  size_t start = n;
  while (start > 0 && data[start - 1] != '\n')
    start--;
  snprintf(out, len, "%.*s", (int)(n - start), data + start);
  free(data);
}
