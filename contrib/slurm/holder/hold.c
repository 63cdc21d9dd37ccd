/* fpull-slurm-hold: the process that holds a step's container for its tasks (a static
 * program: it runs inside the image, whatever libc the image has, or none).
 *
 * The runtime starts it as the container's process, as the container's root (the job's
 * user outside), from the runner's descriptor 3: argv is "UID GID". It forks a child that
 * makes one user namespace nested in the container's, in which the job's user is UID:GID
 * again, writes "HOLDER CHILD\n" (their pids) to descriptor 4 and waits to be killed (the
 * child dies with it). The tasks join the holder's namespaces (with --fpull-remap-root)
 * or also the child's user namespace, all of them the same ones: MPI's shared memory,
 * /proc/PID/fd and cross-memory attach work between them as between processes on the
 * host. Both processes are the user's own and dumpable, so a task joins them as the user
 * through pidfd_open and setns: the kernel checks that the user owns them, and root opens
 * nothing of the user's. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int write_file(const char *path, const char *text)
{
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n;
  return close(fd) == 0 && ok ? 0 : -1;
}

static void die(const char *what)
{
  dprintf(2, "fpull-slurm-hold: %s: %s\n", what, strerror(errno));
  _exit(1);
}

static unsigned long id_arg(const char *s)
{
  char *end = NULL;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || errno || v >= 0xffffffffUL) {
    errno = EINVAL;
    die(s);
  }
  return v;
}

int main(int argc, char **argv)
{
  if (argc != 3) {
    errno = EINVAL;
    die("usage: fpull-slurm-hold UID GID");
  }
  unsigned long uid = id_arg(argv[1]), gid = id_arg(argv[2]);
  close(3);
  pid_t holder = getpid();
  int ready[2];
  if (pipe(ready) < 0)
    die("pipe");
  pid_t child = fork();
  if (child < 0)
    die("fork");
  if (child == 0) {
    close(4);
    close(ready[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != holder)
      _exit(1);
    char map[64];
    if (unshare(CLONE_NEWUSER) < 0)
      die("user namespace");
    snprintf(map, sizeof map, "%lu 0 1\n", uid);
    if (write_file("/proc/self/uid_map", map) < 0)
      die("uid_map");
    if (write_file("/proc/self/setgroups", "deny") < 0)
      die("setgroups");
    snprintf(map, sizeof map, "%lu 0 1\n", gid);
    if (write_file("/proc/self/gid_map", map) < 0)
      die("gid_map");
    if (write(ready[1], "k", 1) != 1)
      _exit(1);
    close(ready[1]);
    for (;;)
      pause();
  }
  close(ready[1]);
  char c;
  if (read(ready[0], &c, 1) != 1 || c != 'k')
    _exit(1);
  dprintf(4, "%ld %ld\n", (long)holder, (long)child);
  close(4);
  /* The runner kills us once every task joined; the child goes with us. */
  for (;;)
    pause();
}
