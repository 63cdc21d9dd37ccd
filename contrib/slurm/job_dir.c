/* fpull Slurm plugin: the per-job directory and error record (see job_dir.h). */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unpack/inroot.h"
#include "job_dir.h"
#include "sqsh_mount.h"
#include "util.h"

int fp_slurm_run_dir_open(int *out, const char *run_dir, int create, fpull_err *err)
{
  if (run_dir[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "run_dir %s: not an absolute path", run_dir);
  if (create && mkdir(run_dir, 0755) < 0 && errno != EEXIST)
    return fpull_err_set(err, FPULL_EFAIL, "run_dir %s: %s", run_dir, strerror(errno));
  cleanup_close int fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return fpull_err_set(err, errno == ENOENT ? FPULL_ENOTFOUND : FPULL_EFAIL, "run_dir %s: %s",
                         run_dir, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "run_dir %s: %s", run_dir, strerror(errno));
  /* Anyone who can write here could plant JOBID.error or a JOBID symlink for a job. */
  if (st.st_uid != 0 || (st.st_mode & 0022))
    return fpull_err_set(err, FPULL_EFAIL,
                         "run_dir %s: must be owned by root and writable by root only", run_dir);
  *out = fd;
  fd = -1;
  return 0;
}

static void job_name(char *buf, size_t len, uint32_t job_id, const char *suffix)
{
  snprintf(buf, len, "%" PRIu32 "%s", job_id, suffix);
}

static int job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, fpull_err *err)
{
  char name[32];
  job_name(name, sizeof name, job_id, "");
  struct stat st;
  /* Each step of the job comes here: the directory an earlier step made stays. */
  if (fstatat(run_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
      st.st_uid == uid && st.st_gid == gid && (st.st_mode & 07777) == 0700)
    return 0;
  int rc = fp_slurm_job_dir_remove(run_fd, NULL, job_id, err);
  if (rc)
    return rc;
  /* Created as root in a root-only directory: nobody can race us to this name. */
  if (mkdirat(run_fd, name, 0700) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(errno));
  if (fchownat(run_fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 ||
      fchmodat(run_fd, name, 0700, 0) < 0) {
    int e = errno;
    unlinkat(run_fd, name, AT_REMOVEDIR);
    return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(e));
  }
  return 0;
}

int fp_slurm_job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, fpull_err *err)
{
  /* Steps that start at once must not take each other's half-made directory for a stale
   * one: one at a time. */
  while (flock(run_fd, LOCK_EX) < 0 && errno == EINTR)
    ;
  int rc = job_dir_create(run_fd, job_id, uid, gid, err);
  flock(run_fd, LOCK_UN);
  return rc;
}

/* In the child: become the job's user for good, then empty the tree. */
static int become(uid_t uid, gid_t gid)
{
  /* slurmstepd may have only its effective uid dropped: back to root first, then all. */
  if (geteuid() != 0 && getuid() == 0 && seteuid(0) < 0)
    return errno;
  if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
    return errno ? errno : EPERM;
  return 0;
}

/* As the user: a container's init that a step's runner left (it was killed before it
 * could) ends here. Its pid is the "P" record of the step's info file (container.c); as
 * the user, only the user's own process can be killed. */
static void kill_holder(int job_fd, const char *step)
{
  char path[64];
  snprintf(path, sizeof path, "%s/info", step);
  cleanup_close int fd = openat(job_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  char buf[1 << 16];
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (n <= 0)
    return;
  buf[n] = '\0';
  for (char *p = buf; p < buf + n; p += strlen(p) + 1)
    if (p[0] == 'P') {
      long pid = strtol(p + 1, NULL, 10);
      if (pid > 1)
        kill((pid_t)pid, SIGKILL);
    }
}

static int remove_as_user(int run_fd, const char *name, uid_t uid, gid_t gid)
{
  int e = become(uid, gid);
  if (e)
    return e;
  cleanup_close int fd = openat(run_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : errno;
  /* The entries, not the directory itself: the user cannot write run_dir. */
  cleanup_close int list_fd = dup(fd);
  if (list_fd < 0)
    return errno;
  DIR *d = fdopendir(list_fd);
  if (!d)
    return errno;
  list_fd = -1;
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    kill_holder(fd, de->d_name);
    if (fp_rm_rf_at(fd, de->d_name) < 0 && !rc)
      rc = errno;
  }
  closedir(d);
  return rc;
}

/* Mount points under DIR/ in this mount namespace, deepest first, unmounted lazily: a
 * FUSE mount a job left (a daemonized squashfuse) is never entered, so a hung daemon cannot
 * hang the removal. Octal escapes of mountinfo (\040 for a space) are decoded. */
static void unmount_under(const char *dir)
{
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return;
  size_t dlen = strlen(dir);
  char **points = NULL;
  size_t n = 0;
  char line[8192];
  while (fgets(line, sizeof line, f)) {
    char *field = line;
    for (int i = 0; i < 4 && field; i++) {
      field = strchr(field, ' ');
      if (field)
        field++;
    }
    if (!field)
      continue;
    field[strcspn(field, " ")] = '\0';
    char *w = field;
    for (char *r = field; *r; r++) {
      if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
          r[3] <= '7') {
        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
        r += 3;
      } else {
        *w++ = *r;
      }
    }
    *w = '\0';
    if (strncmp(field, dir, dlen) == 0 && (field[dlen] == '/' || field[dlen] == '\0')) {
      points = fp_xrealloc(points, (n + 1) * sizeof *points);
      points[n++] = fp_xstrdup(field);
    }
  }
  /* Later lines are mounted on top of earlier ones: from the last. */
  while (n > 0) {
    n--;
    if (umount2(points[n], MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
      fp_warn("%s: not unmounted: %s", points[n], strerror(errno));
    free(points[n]);
  }
  free(points);
}

int fp_slurm_job_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, fpull_err *err)
{
  char name[32];
  job_name(name, sizeof name, job_id, "");
  struct stat st;
  if (run_dir) {
    cleanup_free char *dir = fp_xasprintf("%s/%s", run_dir, name);
    unmount_under(dir);
  }
  if (fstatat(run_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISDIR(st.st_mode) || st.st_uid == 0) {
      /* Only root writes here, and never anything but a user's directory: remove it as
       * root only when it is not a tree (a stray file). */
      if (!S_ISDIR(st.st_mode) && unlinkat(run_fd, name, 0) < 0)
        return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(errno));
      if (S_ISDIR(st.st_mode) && fp_rm_rf_at(run_fd, name) < 0)
        return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, fp_rm_strerror(errno));
    } else {
      /* The tree belongs to the directory's owner, who may be another uid than the job's
       * when the id was reused: drop to that owner. */
      pid_t pid = fork();
      if (pid < 0)
        return fpull_err_set(err, FPULL_EFAIL, "fork: %s", strerror(errno));
      if (pid == 0)
        _exit(remove_as_user(run_fd, name, st.st_uid, st.st_gid) & 0xff);
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fpull_err_set(err, FPULL_EFAIL, "job directory %s: removing as uid %u: %s", name,
                             (unsigned)st.st_uid,
                             WIFEXITED(status) ? fp_rm_strerror(WEXITSTATUS(status)) : "killed");
      if (unlinkat(run_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(errno));
    }
  }
  return 0;
}

const char *fp_slurm_code_meaning(int code)
{
  switch (code) {
  case FPULL_EUSAGE:
    return "usage error";
  case FPULL_ENOMATCH:
    return "no entry of the image fits this node";
  case FPULL_EAUTH:
    return "authentication refused";
  case FPULL_ENOTFOUND:
    return "image not found";
  case FPULL_ENET:
    return "network or registry failure, worth retrying";
  case FPULL_EINTEGRITY:
    return "integrity failure";
  case FPULL_EUNSAFE:
    return "unsafe or invalid layer content";
  default:
    return "failure";
  }
}

int fp_slurm_step_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, uint32_t step_id,
                             uid_t uid, gid_t gid, fpull_err *err)
{
  char job[32], step[32];
  job_name(job, sizeof job, job_id, "");
  job_name(step, sizeof step, step_id, "");
  pid_t pid = fork();
  if (pid < 0)
    return fpull_err_set(err, FPULL_EFAIL, "fork: %s", strerror(errno));
  if (pid == 0) {
    int e = become(uid, gid);
    if (e)
      _exit(e & 0xff);
    int fd = openat(run_fd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      _exit(errno == ENOENT ? 0 : errno & 0xff);
    kill_holder(fd, step);
    /* A mounted SquashFS image's daemons went with the runner: its mounts are dead. */
    cleanup_free char *bundle = fp_xasprintf("%s/%s/%s/bundle", run_dir, job, step);
    fp_slurm_sqsh_unmount(bundle);
    _exit(fp_rm_rf_at(fd, step) < 0 ? errno & 0xff : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s/%s: removing as uid %u: %s", job, step,
                         (unsigned)uid,
                         WIFEXITED(status) ? fp_rm_strerror(WEXITSTATUS(status)) : "killed");
  return 0;
}

int fp_slurm_store_dir_create(int run_fd, uid_t uid, gid_t gid, fpull_err *err)
{
  if (mkdirat(run_fd, "store", 0755) < 0 && errno != EEXIST)
    return fpull_err_set(err, FPULL_EFAIL, "store: %s", strerror(errno));
  cleanup_close int fd = openat(run_fd, "store", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "store: %s", strerror(errno));
  if (st.st_uid != 0 || (st.st_mode & 0022))
    return fpull_err_set(err, FPULL_EFAIL,
                         "store: must be owned by root and writable by root only");
  char name[32];
  snprintf(name, sizeof name, "%u", (unsigned)uid);
  if (mkdirat(fd, name, 0700) == 0) {
    if (fchownat(fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "store/%s: %s", name, strerror(errno));
  } else if (errno != EEXIST) {
    return fpull_err_set(err, FPULL_EFAIL, "store/%s: %s", name, strerror(errno));
  }
  if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
      (st.st_mode & 0077))
    return fpull_err_set(err, FPULL_EFAIL, "store/%s: not the user's private directory", name);
  return 0;
}
