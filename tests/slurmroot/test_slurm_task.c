/* What a task of the Slurm plugin gets once it joined the container: the seccomp filter
 * (contrib/slurm/task/seccomp.c) makes chown- and setuid-family calls succeed without effect,
 * and leaves everything else, setfsuid(-1) among it, as it was. Each check runs in a child
 * that installed the filter (it stays for the child's life). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "task/seccomp.h"

/* Runs fn in a child with the filter; its exit status (0: every check held). */
static int filtered(int (*fn)(const char *), const char *path)
{
  pid_t pid = fork();
  if (pid == 0) {
    fpull_err err = {0};
    if (fp_slurm_task_seccomp(&err) != 0) {
      fprintf(stderr, "%s\n", err.msg);
      _exit(100);
    }
    _exit(fn(path));
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
    return -1;
  return WEXITSTATUS(st);
}

static int chown_is_faked(const char *path)
{
  struct stat before, after;
  if (stat(path, &before) != 0)
    return 1;
  /* To ids no one has here: without the filter, EPERM (a user) or a real change (root). */
  if (chown(path, 4242, 4343) != 0 || lchown(path, 4242, 4343) != 0)
    return 2;
  int fd = open(path, O_RDONLY);
  if (fd < 0 || fchown(fd, 4242, 4343) != 0 || fchownat(AT_FDCWD, path, 4242, 4343, 0) != 0)
    return 3;
  close(fd);
  if (stat(path, &after) != 0 || after.st_uid != before.st_uid || after.st_gid != before.st_gid)
    return 4;
  return 0;
}

static int setuid_is_faked(const char *path)
{
  (void)path;
  uid_t uid = getuid();
  gid_t gid = getgid();
  gid_t none[1] = {4343};
  if (setgroups(1, none) != 0 || setgid(4343) != 0 || setuid(4242) != 0 ||
      setresuid(4242, 4242, 4242) != 0 || setreuid(4242, 4242) != 0)
    return 5;
  /* Nothing changed: the task is who it was. */
  if (getuid() != uid || getgid() != gid || geteuid() != uid)
    return 6;
  return 0;
}

static int others_are_untouched(const char *path)
{
  /* setfsuid(-1) only asks: it answers the current fsuid, not 0. */
  if ((uid_t)setfsuid((uid_t)-1) != geteuid())
    return 7;
  /* An ordinary call still fails as it should. */
  if (unlink("/nonexistent/fpull-seccomp") == 0 || errno != ENOENT)
    return 8;
  int fd = open(path, O_RDONLY);
  if (fd < 0 || close(fd) != 0)
    return 9;
  /* Mode 2: a filter, as /proc says. */
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int mode = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Seccomp: %d", &mode) == 1)
      break;
  if (f)
    fclose(f);
  return mode == 2 ? 0 : 10;
}

static const char *file_in_tmp(void)
{
  static char path[4200];
  snprintf(path, sizeof path, "%s/f", th_tmpdir());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0)
    close(fd);
  return path;
}

TEST(chown_family_succeeds_without_effect)
{
  CHECK_INT_EQ(filtered(chown_is_faked, file_in_tmp()), 0);
}

TEST(setuid_family_succeeds_without_effect)
{
  CHECK_INT_EQ(filtered(setuid_is_faked, file_in_tmp()), 0);
}

TEST(other_calls_and_setfsuid_queries_are_untouched)
{
  CHECK_INT_EQ(filtered(others_are_untouched, file_in_tmp()), 0);
}

static int no_new_privs_set(const char *path)
{
  (void)path;
  return prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : 1;
}

/* Review 4, LOW 8: the container has noNewPrivileges; a task with CAP_SYS_ADMIN in its
 * namespace (the remapped root; here, root) got the filter without it: NoNewPrivs: 0. */
TEST(every_task_runs_with_no_new_privs)
{
  CHECK_INT_EQ(filtered(no_new_privs_set, NULL), 0);
}
