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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unpack/inroot.h"
#include "job_dir.h"
#include "common/fuse_unmount.h"
#include "tree_remove.h"
#include "common/settings.h"
#include "base/util.h"

/* Every directory above run_dir must be root's, and none writable by others but through
 * the sticky bit (/tmp), whose entries only their owners can move; run_dir's own parent
 * may not be writable by others at all: whoever made run_dir there first would own it. */
static int ancestors_safe(const char *run_dir, fpull_err *err)
{
  cleanup_free char *path = fp_xstrdup(run_dir);
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/')
    path[--len] = '\0';
  int parent = 1;
  for (char *slash = strrchr(path, '/'); slash; slash = strrchr(path, '/'), parent = 0) {
    if (slash == path)
      slash[1] = '\0';
    else
      *slash = '\0';
    struct stat st;
    if (lstat(path, &st) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "run_dir %s: %s: %s", run_dir, path, strerror(errno));
    int others_write = (st.st_mode & 0022) != 0;
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 ||
        (others_write && (parent || !(st.st_mode & S_ISVTX))))
      return fpull_err_set(err, FPULL_EFAIL,
                           "run_dir %s: refused: %s is %s (choose a directory whose parents only "
                           "root can write, e.g. the default %s)",
                           run_dir, path,
                           !S_ISDIR(st.st_mode) ? "not a directory"
                           : st.st_uid != 0     ? "not root's"
                                                : "writable by others",
                           FP_SLURM_RUN_DIR_DEFAULT);
    if (slash == path)
      break;
  }
  return 0;
}

int fp_slurm_run_dir_check(const char *run_dir, fpull_err *err)
{
  if (run_dir[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "run_dir %s: not an absolute path", run_dir);
  return ancestors_safe(run_dir, err);
}

int fp_slurm_run_dir_open(int *out, const char *run_dir, int create, fpull_err *err)
{
  if (run_dir[0] != '/')
    return fpull_err_set(err, FPULL_EUSAGE, "run_dir %s: not an absolute path", run_dir);
  int rc = ancestors_safe(run_dir, err);
  if (rc)
    return rc;
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

/* run_dir/name (name in parent_fd) as an O_PATH descriptor on parent_fd's own mount, into
 * *out (-1 when there is none). The name is the user's directory, so the user may mount
 * on it (fusermount3 lets a user mount on a directory they own): whatever is mounted ON it
 * is detached first, through its descriptor, and never asked anything (not even a stat:
 * a FUSE daemon answers what it likes, or never). 0, or an error when a mount there
 * cannot be detached. */
static int open_unmounted(int parent_fd, const char *name, const char *what, int *out,
                          fpull_err *err)
{
  *out = -1;
  int parent_mnt = fp_slurm_mount_id(parent_fd);
  if (parent_mnt < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: no mount ID for its parent", what);
  for (int tries = 0; tries < 16; tries++) {
    int fd = openat(parent_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      return errno == ENOENT ? 0 : fpull_err_set(err, FPULL_EFAIL, "%s: %s", what, strerror(errno));
    int mnt = fp_slurm_mount_id(fd);
    if (mnt == parent_mnt) {
      *out = fd;
      return 0;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    int r = umount2(proc, MNT_DETACH), e = errno;
    close(fd);
    if (r < 0)
      return fpull_err_set(err, FPULL_EFAIL,
                           "%s: a mount on it (mount ID %d) cannot be detached: %s", what, mnt,
                           strerror(e));
    fp_warn("%s: a mount on it (mount ID %d) was detached", what, mnt);
  }
  return fpull_err_set(err, FPULL_EFAIL, "%s: mounted on again and again: left as it is", what);
}

static int remove_job_dir(int run_fd, const char *run_dir, const char *name, uid_t uid, gid_t gid,
                          int timeout, fpull_err *err);

static int job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, int timeout,
                          fpull_err *err)
{
  char name[32];
  job_name(name, sizeof name, job_id, "");
  cleanup_close int fd = -1;
  int rc = open_unmounted(run_fd, name, name, &fd, err);
  if (rc)
    return rc;
  struct stat st;
  /* Each step of the job comes here: the directory an earlier step made stays. Its owner
   * and mode are run_dir's file system's word (the mount ID was checked), which only
   * root writes. */
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
      st.st_gid == gid && (st.st_mode & 07777) == 0700)
    return 0;
  if (fd >= 0 && (rc = remove_job_dir(run_fd, NULL, name, uid, gid, timeout, err)) != 0)
    return rc;
  /* Created as root in a root-only directory: nobody can race us to this name, and it is
   * root's 0700 (no user may mount on it) until fchown hands it over, last. */
  if (mkdirat(run_fd, name, 0700) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(errno));
  cleanup_close int dfd = openat(run_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0 || fchmod(dfd, 0700) < 0 || fchown(dfd, uid, gid) < 0) {
    int e = errno;
    unlinkat(run_fd, name, AT_REMOVEDIR);
    return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(e));
  }
  return 0;
}

int fp_slurm_job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, int timeout,
                            fpull_err *err)
{
  /* Steps that start at once must not take each other's half-made directory for a stale
   * one: one at a time, per job, under a lock only root can open (run_dir/JOBID.lock,
   * root's 0600: a lock on run_dir itself, which every user may open, let anyone hold
   * every step of the node). Its holder removes under the same deadline: a wait longer
   * than that is given up, saying so. */
  char lock[48];
  job_name(lock, sizeof lock, job_id, ".lock");
  cleanup_close int lfd = openat(run_fd, lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  struct stat st;
  if (lfd < 0 || fstat(lfd, &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "job directory lock %s: %s", lock, strerror(errno));
  if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077))
    return fpull_err_set(err, FPULL_EFAIL, "job directory lock %s: not root's own file", lock);
  int wait_s = 2 * (timeout > 0 ? timeout : 10) + 2;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
    if (errno != EWOULDBLOCK && errno != EINTR)
      return fpull_err_set(err, FPULL_EFAIL, "job directory lock %s: %s", lock, strerror(errno));
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= wait_s)
      return fpull_err_set(err, FPULL_EFAIL,
                           "another step of job %" PRIu32 " has been making its directory for "
                           "%d s: not waiting longer",
                           job_id, wait_s);
    struct timespec tick = {0, 50 * 1000 * 1000};
    nanosleep(&tick, NULL);
  }
  int rc = job_dir_create(run_fd, job_id, uid, gid, timeout, err);
  flock(lfd, LOCK_UN);
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

/* Kills pid when it is provably the job's container: a process of uid (the job's, from
 * Slurm) in a user namespace other than the host's (the holder and its child are; the
 * user's shell or daemons on the node are not). Examined through /proc while a pidfd holds
 * it, and signalled through that pidfd, so that a pid reused meanwhile is never hit. */
static void kill_if_container(long pid, uid_t uid)
{
  int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
  if (pfd < 0)
    return;
  char path[64], line[256], mine[64] = "", theirs[64] = "";
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  FILE *f = fopen(path, "re");
  int owned = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Uid:", 4) == 0) {
      unsigned r, e, s, fs;
      owned = sscanf(line + 4, "%u %u %u %u", &r, &e, &s, &fs) == 4 && r == uid && e == uid &&
              s == uid && fs == uid;
      break;
    }
  if (f)
    fclose(f);
  snprintf(path, sizeof path, "/proc/%ld/ns/user", pid);
  ssize_t a = readlink("/proc/self/ns/user", mine, sizeof mine - 1);
  ssize_t b = readlink(path, theirs, sizeof theirs - 1);
  int contained = a > 0 && b > 0 && strcmp(mine, theirs) != 0;
  if (owned && contained && syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) == 0)
    syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
  close(pfd);
}

/* As the job's user: a container's holder that a step's runner left (it was killed before
 * it could end it) ends here. Its pids are the P and Q records of the step's info file
 * (runner/runner.c): the user's to write, so each pid is killed only when it is the job's
 * container's (kill_if_container). The step directory and the file are reached on the job
 * directory's own mount only (a FUSE mount over either is never read). */
static void kill_holder(int job_fd, const char *step, uid_t uid)
{
  cleanup_close int sfd = openat(job_fd, step, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sfd < 0 || fp_slurm_mount_id(sfd) != fp_slurm_mount_id(job_fd))
    return;
  cleanup_close int ifd = openat(sfd, "info", O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (ifd < 0 || fp_slurm_mount_id(ifd) != fp_slurm_mount_id(job_fd) || fstat(ifd, &st) < 0 ||
      !S_ISREG(st.st_mode))
    return;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", ifd);
  cleanup_close int fd = open(proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  char buf[1 << 16];
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (n <= 0)
    return;
  buf[n] = '\0';
  for (char *p = buf; p < buf + n; p += strlen(p) + 1)
    if ((p[0] == 'P' || p[0] == 'Q') && p[1] >= '1' && p[1] <= '9' &&
        strspn(p + 1, "0123456789") == strlen(p + 1) && strlen(p + 1) <= 10) {
      long pid = strtol(p + 1, NULL, 10);
      if (pid > 1)
        kill_if_container(pid, uid);
    }
}

/* Waits for the remover pid, at most timeout seconds: then it is killed and what it did not
 * remove stays. Its exit status, or -1 after
 * the deadline. */
static int wait_deadline(pid_t pid, int timeout)
{
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int status = 0;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid)
      return status;
    if (w < 0 && errno != EINTR)
      return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= (timeout > 0 ? timeout : 10)) {
      /* A request a FUSE daemon read and never answers is waited for where no signal
       * ends the wait: the child is reaped if it ends soon, else left to end when the
       * daemon does (root's side never waits on a mount). */
      kill(pid, SIGKILL);
      for (int i = 0; i < 50 && waitpid(pid, NULL, WNOHANG) == 0; i++) {
        struct timespec tick = {0, 20 * 1000 * 1000};
        nanosleep(&tick, NULL);
      }
      return -1;
    }
    struct timespec tick = {0, 20 * 1000 * 1000};
    nanosleep(&tick, NULL);
  }
}

/* In a child that became uid:gid: the holders of the directory's steps killed (only when
 * killer is that uid, the job's: kill_holder), then names (all of the directory's entries
 * when only is NULL) removed without entering a mount point. dir_fd is the directory,
 * reached on run_dir's own mount (open_unmounted): a mount on its name is never entered.
 * Exit 0, 1 when some is left, or an errno. */
static int remove_as(int dir_fd, const char *only, uid_t uid, gid_t gid, int kill_ok)
{
  int e = become(uid, gid);
  if (e)
    return e;
  /* A directory of ours the user closed (chmod 0600) is opened up through its
   * descriptor, never by name. */
  struct stat st;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", dir_fd);
  if (fstat(dir_fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & S_IRWXU) != S_IRWXU)
    (void)chmod(proc, S_IRWXU);
  cleanup_close int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : errno;
  int rc = 0;
  size_t left = 0, n = 0;
  if (only) {
    if (kill_ok)
      kill_holder(fd, only, uid);
    rc = fp_slurm_remove_tree(fd, only, &left) < 0 ? errno : 0;
    return rc == EBUSY ? 1 : rc;
  }
  cleanup_close int list_fd = dup(fd);
  DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
  if (!d)
    return errno;
  list_fd = -1;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    if (kill_ok)
      kill_holder(fd, de->d_name, uid);
    if (fp_slurm_remove_tree(fd, de->d_name, &n) < 0 && !rc)
      rc = errno == EBUSY ? 1 : errno;
    left += n;
  }
  closedir(d);
  return rc;
}

/* Runs remove_as in a child under the deadline; 0, or err set saying what is left. */
static int remove_in_child(int dir_fd, const char *only, uid_t uid, gid_t gid, int kill_ok,
                           int timeout, const char *what, fpull_err *err)
{
  pid_t pid = fork();
  if (pid < 0)
    return fpull_err_set(err, FPULL_EFAIL, "fork: %s", strerror(errno));
  if (pid == 0)
    _exit(remove_as(dir_fd, only, uid, gid, kill_ok) & 0xff);
  int status = wait_deadline(pid, timeout);
  if (status == -1)
    return fpull_err_set(err, FPULL_EFAIL,
                         "%s: removal stopped after %d s (a mount that does not answer?): what is "
                         "left stays in place",
                         what, timeout);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: removing as uid %u: %s", what, (unsigned)uid,
                         !WIFEXITED(status) ? "killed"
                         : WEXITSTATUS(status) == 1
                             ? "mount points or entries in use are left in place"
                             : fp_rm_strerror(WEXITSTATUS(status)));
  return 0;
}

/* Parses one line of mountinfo: its mount ID, parent ID and mount point (octal escapes such
 * as \040 decoded in place). 0, or -1 for a line that is not one. */
static int mountinfo_line(char *line, int *id, int *parent, char **point)
{
  char *save = NULL, *f[5];
  for (int i = 0; i < 5; i++)
    if (!(f[i] = strtok_r(i ? NULL : line, " ", &save)))
      return -1;
  *id = atoi(f[0]);
  *parent = atoi(f[1]);
  char *w = f[4];
  for (char *r = f[4]; *r; r++) {
    if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
        r[3] <= '7') {
      *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
      r += 3;
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
  *point = f[4];
  return 0;
}

/* rel (components below job_fd) as an O_PATH descriptor, one component at a time without
 * following a symlink, every directory on the way on the job directory's own mount (so
 * that no other file system, such as a FUSE mount that never answers, is asked anything);
 * the last component is the mount point, and its descriptor the mount's root. */
static int open_mount_point(int job_fd, int job_mnt, const char *rel)
{
  cleanup_free char *copy = fp_xstrdup(rel);
  int cur = dup(job_fd);
  char *save = NULL;
  for (char *c = strtok_r(copy, "/", &save); c && cur >= 0; c = strtok_r(NULL, "/", &save)) {
    if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0) {
      close(cur);
      return -1;
    }
    if (fp_slurm_mount_id(cur) != job_mnt) {
      close(cur);
      return -1;
    }
    int next = openat(cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    close(cur);
    cur = next;
  }
  return cur;
}

/* As root, in the host's mount namespace: what the job's user mounted under the job
 * directory (FUSE mounts: squashfuse, fuse-overlayfs) is detached. Root parses only the
 * kernel's mountinfo, whole lines however long, and unmounts only a mount whose ID is the
 * one listed, reached below the job directory without a symlink and through the job
 * directory's own mount only, by its descriptor (/proc/self/fd/N): a path the user renames
 * meanwhile, or a mount source made to look like a path, cannot redirect it. Mounts on
 * top of those go with them (MNT_DETACH). */
static void unmount_under(int job_fd, const char *run_dir, const char *name)
{
  int job_mnt = fp_slurm_mount_id(job_fd);
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f || job_mnt < 0)
    return;
  cleanup_free char *prefix = fp_xasprintf("%s/%s/", run_dir, name);
  size_t plen = strlen(prefix);
  cleanup_free char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) > 0) {
    int id, parent;
    char *point;
    if (line[n - 1] == '\n')
      line[n - 1] = '\0';
    if (mountinfo_line(line, &id, &parent, &point) != 0 || parent != job_mnt ||
        strncmp(point, prefix, plen) != 0)
      continue;
    int fd = open_mount_point(job_fd, job_mnt, point + plen);
    if (fd < 0 || fp_slurm_mount_id(fd) != id) {
      fp_warn("%s: not unmounted: it is not where mountinfo says", point);
    } else {
      char proc[64];
      snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
      if (umount2(proc, MNT_DETACH) < 0)
        fp_warn("%s: not unmounted: %s", point, strerror(errno));
    }
    if (fd >= 0)
      close(fd);
  }
}

/* run_dir/name removed (see fp_slurm_job_dir_remove); run_dir NULL: nothing under it is
 * unmounted (a stale directory at step start). */
static int remove_job_dir(int run_fd, const char *run_dir, const char *name, uid_t uid, gid_t gid,
                          int timeout, fpull_err *err)
{
  cleanup_close int job_fd = -1;
  int rc = open_unmounted(run_fd, name, name, &job_fd, err);
  if (rc || job_fd < 0)
    return rc;
  struct stat st;
  if (fstat(job_fd, &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    /* Only root writes here, and never anything but a user's directory: a stray file. */
    if (unlinkat(run_fd, name, 0) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(errno));
    return 0;
  }
  if (run_dir)
    unmount_under(job_fd, run_dir, name);
  /* The tree is removed as its owner, so that nothing the user changes under us can make
   * root delete what the user could not. The owner is the one root gave it, read from
   * run_dir's own file system (the descriptor's mount ID was checked): never what a file
   * system the user mounted reports. It is another uid than the job's only when a job id
   * was reused (slurmctld's state reset): then nothing its files name is killed. */
  rc = remove_in_child(job_fd, NULL, st.st_uid, st.st_gid, st.st_uid == uid && st.st_gid == gid,
                       timeout, name, err);
  /* By name, which is never followed into a mount (one put there meanwhile: EBUSY). */
  if (rc == 0 && unlinkat(run_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return fpull_err_set(err, FPULL_EFAIL, "job directory %s: %s", name, strerror(errno));
  return rc;
}

int fp_slurm_job_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, uid_t uid, gid_t gid,
                            int timeout, fpull_err *err)
{
  char name[32], lock[48];
  job_name(name, sizeof name, job_id, "");
  job_name(lock, sizeof lock, job_id, ".lock");
  int rc = remove_job_dir(run_fd, run_dir, name, uid, gid, timeout, err);
  /* The job's steps are over: their lock goes too. */
  unlinkat(run_fd, lock, 0);
  return rc;
}

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* Makes DIR/NAME whole: under a name of its own (root's 0700: nobody can mount on it or add
 * to it meanwhile), handed to the user, then renamed in. A node that looks meanwhile finds
 * no DIR/NAME or the user's, never root's: the nodes of one job make it at the same moment,
 * and one that saw it root's refused it (found by scripts/bench --slurm-nodes). 0, or -1
 * with errno (EEXIST: another made it first). */
static int make_user_dir(int dfd, const char *name, uid_t uid, gid_t gid)
{
  char host[65] = "";
  gethostname(host, sizeof host - 1);
  char tmp[160];
  snprintf(tmp, sizeof tmp, ".%s.new.%s.%ld", name, host, (long)getpid());
  if (mkdirat(dfd, tmp, 0700) < 0)
    return -1;
  cleanup_close int nfd = openat(dfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (nfd >= 0 && fchown(nfd, uid, gid) == 0) {
    if (syscall(SYS_renameat2, dfd, tmp, dfd, name, RENAME_NOREPLACE) == 0)
      return 0;
    /* A file system without it (older NFS): a plain rename, which replaces only an empty
     * directory, one as the user's as this. */
    if ((errno == EINVAL || errno == ENOSYS) && renameat(dfd, tmp, dfd, name) == 0)
      return 0;
  }
  int saved = errno == ENOTEMPTY ? EEXIST : errno;
  unlinkat(dfd, tmp, AT_REMOVEDIR);
  errno = saved;
  return -1;
}

int fp_slurm_site_user_dir(const char *key, const char *dir, uid_t uid, gid_t gid, fpull_err *err)
{
  /* Every directory above DIR a real one of root's, none that others may write but
   * through the sticky bit (/scratch), and DIR itself no symlink: a user who could name
   * where DIR leads (a symlink planted where the admin's path had a gap) would have root
   * make a directory of theirs there. */
  cleanup_free char *path = fp_xstrdup(dir);
  for (char *slash = strrchr(path, '/'); slash && slash != path; slash = strrchr(path, '/')) {
    *slash = '\0';
    struct stat ast;
    if (lstat(path, &ast) < 0 || !S_ISDIR(ast.st_mode) || ast.st_uid != 0 ||
        ((ast.st_mode & 0002) && !(ast.st_mode & S_ISVTX)))
      return fpull_err_set(err, FPULL_EFAIL,
                           "%s %s: refused: %s is not a directory of root's that only "
                           "root, or only its entries' owners, can change",
                           key, dir, path);
  }
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (dfd < 0 || fstat(dfd, &st) < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s %s: %s", key, dir, strerror(errno));
  /* Where others may add entries, another user could make DIR/UID first and own the
   * victim's cache (review 4): DIR is root's alone, and root makes each DIR/UID. */
  if (st.st_uid != 0 || (st.st_mode & 0022))
    return fpull_err_set(err, FPULL_EFAIL,
                         "%s %s: refused: it must be root's and writable by root only "
                         "(the plugin makes DIR/UID for each user)",
                         key, dir);
  char name[32];
  snprintf(name, sizeof name, "%u", (unsigned)uid);
  /* Made once per user: later steps only look (a parallel file system's metadata is the
   * dearest there is). */
  struct stat ust;
  if (fstatat(dfd, name, &ust, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT &&
      make_user_dir(dfd, name, uid, gid) < 0 && errno != EEXIST && errno != EACCES &&
      errno != EPERM) {
    /* EACCES, EPERM: root may not write there (NFS's root_squash); one made by an admin
     * is checked below. */
    return fpull_err_set(err, FPULL_EFAIL, "%s %s/%s: %s", key, dir, name, strerror(errno));
  }
  cleanup_free char *what = fp_xasprintf("%s %s/%s", key, dir, name);
  cleanup_close int ufd = -1;
  int rc = open_unmounted(dfd, name, what, &ufd, err);
  if (rc)
    return rc;
  if (ufd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: missing, and root cannot make it", what);
  if (fstat(ufd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
    return fpull_err_set(err, FPULL_EFAIL, "%s: refused: not the job's user's directory (uid %u's)",
                         what, (unsigned)st.st_uid);
  if (st.st_mode & 0077) {
    /* The user's own, made by an older setup as their umask said: made private, since the
     * blobs in it are 0644 and the cache root guards them. */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", ufd);
    if (chmod(proc, 0700) < 0)
      return fpull_err_set(err, FPULL_EFAIL, "%s: refused: open to others (mode %04o): %s", what,
                           (unsigned)(st.st_mode & 07777), strerror(errno));
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
  case FPULL_EPOLICY:
    return "the signature policy rejects the image";
  default:
    return "failure";
  }
}

int fp_slurm_step_dir_remove(int run_fd, const char *run_dir, uint32_t job_id, uint32_t step_id,
                             uid_t uid, gid_t gid, int timeout, fpull_err *err)
{
  char job[32], step[32];
  job_name(job, sizeof job, job_id, "");
  job_name(step, sizeof step, step_id, "");
  /* The job directory root made, not what the user mounted on its name. */
  cleanup_close int job_fd = -1;
  int rc = open_unmounted(run_fd, job, job, &job_fd, err);
  struct stat st;
  if (rc || job_fd < 0)
    return rc;
  if (fstat(job_fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid)
    return fpull_err_set(err, FPULL_EFAIL, "job directory %s: not the job's user's", job);
  /* A mounted SquashFS image's daemons went with the runner: its mounts are dead, and the
   * user's own (fusermount3) unmount of them is the kernel's to check. */
  pid_t pid = fork();
  if (pid == 0) {
    if (become(uid, gid) != 0)
      _exit(1);
    cleanup_free char *bundle = fp_xasprintf("%s/%s/%s/bundle", run_dir, job, step);
    fp_slurm_sqsh_unmount(bundle);
    _exit(0);
  }
  if (pid > 0 && wait_deadline(pid, timeout) == -1)
    fp_warn("%s/%s: the image's unmount did not end in %d s", job, step, timeout);
  cleanup_free char *what = fp_xasprintf("%s/%s", job, step);
  return remove_in_child(job_fd, step, uid, gid, 1, timeout, what, err);
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
  /* The user's directory, which the user may mount on: never looked at through a mount. */
  cleanup_close int ufd = -1;
  char what[48];
  snprintf(what, sizeof what, "store/%s", name);
  int rc = open_unmounted(fd, name, what, &ufd, err);
  if (rc)
    return rc;
  if (ufd < 0 || fstat(ufd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
      (st.st_mode & 0077))
    return fpull_err_set(err, FPULL_EFAIL, "store/%s: not the user's private directory", name);
  return 0;
}
