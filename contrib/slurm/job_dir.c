/* fpull Slurm plugin: the per-job directory and error record (see job_dir.h). */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unpack/inroot.h"
#include "job_dir.h"
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

int fp_slurm_job_dir_create(int run_fd, uint32_t job_id, uid_t uid, gid_t gid, fpull_err *err)
{
  char name[32];
  job_name(name, sizeof name, job_id, "");
  int rc = fp_slurm_job_dir_remove(run_fd, job_id, err);
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

/* In the child: become the job's user for good, then empty the tree. */
static int remove_as_user(int run_fd, const char *name, uid_t uid, gid_t gid)
{
  if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
    return errno ? errno : EPERM;
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
    if (fp_rm_rf_at(fd, de->d_name) < 0 && !rc)
      rc = errno;
  }
  closedir(d);
  return rc;
}

/* What the prolog records beside the job directory. */
static const char *const records[] = {".error", ".manifest"};

int fp_slurm_job_dir_remove(int run_fd, uint32_t job_id, fpull_err *err)
{
  char name[32];
  job_name(name, sizeof name, job_id, "");
  struct stat st;
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
  for (size_t i = 0; i < sizeof records / sizeof records[0]; i++) {
    char rname[48];
    job_name(rname, sizeof rname, job_id, records[i]);
    if (unlinkat(run_fd, rname, 0) < 0 && errno != ENOENT)
      return fpull_err_set(err, FPULL_EFAIL, "%s: %s", rname, strerror(errno));
  }
  return 0;
}

/* Writes RUN_DIR/JOBID.SUFFIX (root-owned, 0644) beside its place and renames it in. */
static int record_write(int run_fd, uint32_t job_id, const char *suffix, const char *text,
                        fpull_err *err)
{
  char name[48], tname[64];
  snprintf(name, sizeof name, "%" PRIu32 ".%s", job_id, suffix);
  snprintf(tname, sizeof tname, "%s.tmp", name);
  unlinkat(run_fd, tname, 0);
  cleanup_close int fd =
      openat(run_fd, tname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return fpull_err_set(err, FPULL_EFAIL, "%s: %s", tname, strerror(errno));
  size_t n = strlen(text);
  if (write(fd, text, n) != (ssize_t)n || fchmod(fd, 0644) < 0 ||
      renameat(run_fd, tname, run_fd, name) < 0) {
    int e = errno;
    unlinkat(run_fd, tname, 0);
    return fpull_err_set(err, FPULL_EFAIL, "%s: %s", name, strerror(e));
  }
  return 0;
}

/* Reads RUN_DIR/JOBID.SUFFIX into buf (first line); 0 when there is none. */
static int record_read(int run_fd, uint32_t job_id, const char *suffix, char *buf, size_t len)
{
  char name[48];
  snprintf(name, sizeof name, "%" PRIu32 ".%s", job_id, suffix);
  cleanup_close int fd = openat(run_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, len - 1);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  return 1;
}

int fp_slurm_error_record(int run_fd, uint32_t job_id, int code, const char *msg, fpull_err *err)
{
  char line[FPULL_ERR_MSG_MAX + 16];
  snprintf(line, sizeof line, "%d %s\n", code, msg);
  return record_write(run_fd, job_id, "error", line, err);
}

int fp_slurm_chosen_record(int run_fd, uint32_t job_id, const char *digest, fpull_err *err)
{
  char line[128];
  snprintf(line, sizeof line, "%s\n", digest);
  return record_write(run_fd, job_id, "manifest", line, err);
}

int fp_slurm_chosen_lookup(int run_fd, uint32_t job_id, char *digest, size_t len)
{
  return record_read(run_fd, job_id, "manifest", digest, len);
}

int fp_slurm_error_lookup(int run_fd, uint32_t job_id, fpull_err *out)
{
  char line[FPULL_ERR_MSG_MAX + 16];
  if (!record_read(run_fd, job_id, "error", line, sizeof line))
    return 0;
  char *end = NULL;
  long code = strtol(line, &end, 10);
  if (end == line || *end != ' ' || code <= 0 || code > 255) {
    code = FPULL_EFAIL;
    end = line;
  } else {
    end++;
  }
  fpull_err_set(out, (int)code, "%s", end);
  return 1;
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
